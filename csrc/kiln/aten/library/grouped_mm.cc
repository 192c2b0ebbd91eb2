// aten::_grouped_mm (torch.nn.functional.grouped_mm) on the library path: the
// experts' products of a mixture-of-experts layer as one queued launch.
//
// PyTorch's CompositeExplicitAutograd kernel, which a device without its own
// runs, copies the offsets to the host (a stream sync per call) and
// dispatches one mm.out per group. Here the call is checked on the host with
// PyTorch's own checks (GroupedMMUtils.h, the ones its composite and CUDA
// kernels run), the output is allocated as PyTorch allocates it, and one
// launch is queued; the work reads the offsets from device memory (host
// memory on the host target), checks them, and runs each group's product
// with BLAS (float32: direct_gemm.h) or with the CPU's own mm
// (bfloat16, float16: what PyTorch's CPU loop calls), on tensors over the
// kiln memory. A large call on the stream's worker is shared out over
// Kiln's pool (library_threads.h): runs of the groups' rows or columns, one
// per thread, or blocks of each group's output (plan() below).
#include <ATen/native/GroupedMMUtils.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/mm.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/library/direct_gemm.h"
#include "kiln/aten/library/library_kernels.h"
#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::library {
namespace {

// The four layouts PyTorch accepts, by which dim the offsets cut.
enum class Form {
  kRows,     // a [M, K] by b [G, K, N]: offsets over a's (and out's) rows
  kColumns,  // a [G, M, K] by b [K, N]: offsets over b's (and out's) columns
  kDepth,    // a [M, K] by b [K, N]: offsets over the shared K, out [G, M, N]
  kBatched,  // a [G, M, K] by b [G, K, N]: no offsets, out [G, M, N]
};

// A tensor's memory and the strides of its last two dims, and of the group
// dim for a 3-d one, fixed at launch: the caller may restride the tensor in
// place before the work runs.
struct Operand {
  char* data = nullptr;
  MatrixStrides strides;
  int64_t batch_stride = 0;
};

Operand operand(const at::Tensor& tensor, void* data) {
  const int64_t rank = tensor.dim();
  return {static_cast<char*>(data), {tensor.stride(rank - 2), tensor.stride(rank - 1)},
          rank == 3 ? tensor.stride(0) : 0};
}

// One group's product: out[m, n] = a[m, k] @ b[k, n], at these element
// offsets from each operand's start.
struct Product {
  int64_t a_offset = 0, b_offset = 0, out_offset = 0;
  int64_t m = 0, n = 0, k = 0;
  int64_t begin = 0;  // where the group starts along the dim the offsets cut
};

// A block of one product's output: rows [rows.begin, rows.end), columns
// [columns.begin, columns.end). Every output element is the same dot product
// over k whichever block computes it.
struct Block {
  const Product* product;
  BlockRange rows, columns;
};

// Blocks are cut along a product's longer side (BLAS) or its rows while
// there are enough of them (ATen: blocks of whole rows stay dense, which
// oneDNN's bfloat16 product needs to write them in place, as in matmul.cc),
// aligned to kBlockAlignment, at least kMinimumBlock long.
constexpr int64_t kBlockAlignment = 16;
constexpr int64_t kMinimumBlock = 32;

struct GroupedCall {
  // The tensors the work keeps alive until it ran (kernel_launch.h).
  std::vector<at::Tensor> held;
  Form form;
  at::ScalarType dtype;
  size_t element_size = 0;
  Operand a, b, out;
  const int32_t* offsets = nullptr;
  int64_t groups = 0;
  int64_t extent = 0;  // the size of the dim the offsets cut
  const char* extent_name = "";  // that dim, for the error
  int64_t m = 0, n = 0, k = 0;  // the sizes the offsets do not cut
  bool blas = false;  // float32: direct_gemm_product (which declines if no BLAS is exported)
  bool small = false;
  int threads = 1;

  // The groups' products, after checking the offsets: each in [0, extent],
  // none below the one before it. A failed check runs nothing.
  Status list_products(std::vector<Product>& products) const {
    products.reserve(static_cast<size_t>(groups));
    int64_t begin = 0;
    for (int64_t group = 0; group < groups; ++group) {
      int64_t end = form == Form::kBatched ? 0 : offsets[group];
      if (form != Form::kBatched && (end < begin || end > extent)) {
        return out_of_range("_grouped_mm: offs[" + std::to_string(group) + "] = " + std::to_string(end) +
                            " is out of range: the offsets must not decrease and must lie in [0, " +
                            std::to_string(extent) + "], the size of " + extent_name +
                            (group > 0 ? " (offs[" + std::to_string(group - 1) + "] = " + std::to_string(begin) + ")"
                                       : std::string()));
      }
      Product product{0, 0, 0, m, n, k};
      switch (form) {
        case Form::kRows:
          product = {begin * a.strides.row, group * b.batch_stride, begin * out.strides.row, end - begin, n, k};
          break;
        case Form::kColumns:
          product = {group * a.batch_stride, begin * b.strides.column, begin * out.strides.column, m, end - begin, k};
          break;
        case Form::kDepth:
          product = {begin * a.strides.column, begin * b.strides.row, group * out.batch_stride, m, n, end - begin};
          break;
        case Form::kBatched:
          product = {group * a.batch_stride, group * b.batch_stride, group * out.batch_stride, m, n, k};
          break;
      }
      product.begin = begin;
      products.push_back(product);
      begin = end;
    }
    return Status();
  }

  at::Tensor matrix(const Operand& operand, int64_t offset, int64_t rows, int64_t columns) const {
    return at::from_blob(operand.data + offset * static_cast<int64_t>(element_size), {rows, columns},
                         {operand.strides.row, operand.strides.column}, at::TensorOptions().dtype(dtype));
  }

  // Writes zeros over a block of out: a product over an empty k (a group of
  // the depth form with no rows), as mm writes it.
  void write_zeros(int64_t offset, int64_t rows, int64_t columns) const {
    for (int64_t row = 0; row < rows; ++row) {
      char* start = out.data + (offset + row * out.strides.row) * static_cast<int64_t>(element_size);
      std::memset(start, 0, static_cast<size_t>(columns) * element_size);  // out is row-major
    }
  }

  // Zeros over the rows (columns) of out past the last offset, which no
  // group computes. PyTorch leaves them unwritten (its output is empty);
  // kiln defines them, as transformers' loop over the experts does, so that
  // its op (library_ops.py) needs no mask.
  void write_zeros_past_last_offset(const std::vector<Product>& products) const {
    if (form != Form::kRows && form != Form::kColumns) return;
    const int64_t covered = products.empty() ? 0 : products.back().begin + grouped_size(products.back());
    if (covered >= extent) return;
    if (form == Form::kRows) return write_zeros(covered * out.strides.row, extent - covered, n);
    for (int64_t row = 0; row < m; ++row) {  // out [M, N], its columns cut
      write_zeros(row * out.strides.row + covered * out.strides.column, 1, extent - covered);
    }
  }

  void run_block(const Block& block) const {
    const Product& product = *block.product;
    const int64_t rows = block.rows.end - block.rows.begin;
    const int64_t columns = block.columns.end - block.columns.begin;
    if (rows == 0 || columns == 0) return;
    const int64_t a_offset = product.a_offset + block.rows.begin * a.strides.row;
    const int64_t b_offset = product.b_offset + block.columns.begin * b.strides.column;
    const int64_t out_offset =
        product.out_offset + block.rows.begin * out.strides.row + block.columns.begin * out.strides.column;
    if (product.k == 0) return write_zeros(out_offset, rows, columns);
    const int64_t size = static_cast<int64_t>(element_size);
    if (blas && direct_gemm_product(dtype, a.data + a_offset * size, a.strides, b.data + b_offset * size,
                                    b.strides, out.data + out_offset * size, out.strides, rows, columns,
                                    product.k)) {
      return;
    }
    at::Tensor target = matrix(out, out_offset, rows, columns);
    at::mm_out(target, matrix(a, a_offset, rows, product.k), matrix(b, b_offset, product.k, columns));
  }

  // The batched form in ATen: the CPU's bmm over batches [begin, end), as
  // PyTorch's loop calls bmm for it.
  void run_batches(int64_t begin, int64_t end) const {
    auto batch = [&](const Operand& operand, int64_t rows, int64_t columns) {
      return at::from_blob(operand.data + begin * operand.batch_stride * static_cast<int64_t>(element_size),
                           {end - begin, rows, columns},
                           {operand.batch_stride, operand.strides.row, operand.strides.column},
                           at::TensorOptions().dtype(dtype));
    };
    at::Tensor target = batch(out, m, n);
    at::bmm_out(target, batch(a, m, k), batch(b, k, n));
  }

  // What a product costs besides its arithmetic, in positions along the
  // grouped dim (rows of 2 n k flops, or columns of 2 m k): the shared
  // operand packed again for each piece, about 6 rows' worth with both MKL's
  // sgemm and oneDNN's bfloat16 product, and a fixed cost per call, 0.2
  // MFLOP's worth for sgemm and 3.5 for ATen's bfloat16 mm (15-18 us; one
  // thread, (m x 512) @ (512 x 1024) and (m x 128) @ (128 x 512), m from 1 to 128).
  int64_t call_overhead_positions() const {
    const double position_flops = 2.0 * static_cast<double>(std::max<int64_t>(1, k)) *
                                  static_cast<double>(std::max<int64_t>(1, form == Form::kRows ? n : m));
    return 6 + static_cast<int64_t>((blas ? 0.2e6 : 3.5e6) / position_flops);
  }

  int64_t grouped_size(const Product& product) const { return form == Form::kRows ? product.m : product.n; }

  // Where runs of positions along the grouped dim end, when no run may cost
  // more than `bound` (positions, plus `overhead` for each product it
  // calls), runs filled in order; `cut_groups`: a group may be cut where a
  // run is full (which never needs more runs than ending the run before it),
  // else runs end at group boundaries. Empty when that takes more than
  // `threads` runs.
  std::vector<int64_t> run_ends(const std::vector<Product>& products, int64_t bound, int64_t overhead,
                                bool cut_groups) const {
    std::vector<int64_t> ends;
    int64_t used = 0;
    for (const Product& product : products) {
      int64_t position = product.begin;
      int64_t left = grouped_size(product);
      while (left > 0) {
        if (used + overhead + left <= bound) {
          used += overhead + left;
          break;
        }
        const int64_t room = bound - used - overhead;
        if (!cut_groups && used == 0) return {};  // the group alone costs more than the bound
        if (cut_groups && room > 0) {
          position += room;
          left -= room;
        }
        ends.push_back(position);
        used = 0;
        if (static_cast<int64_t>(ends.size()) >= threads) return {};
      }
    }
    ends.push_back(products.back().begin + grouped_size(products.back()));
    return ends;
  }

  // The least bound `threads` runs meet (a binary search; the total cost of
  // all products always does), and those runs' ends.
  std::pair<int64_t, std::vector<int64_t>> cheapest_runs(const std::vector<Product>& products, int64_t overhead,
                                                         bool cut_groups) const {
    int64_t total = 0;
    for (const Product& product : products) {
      if (grouped_size(product) > 0) total += overhead + grouped_size(product);
    }
    int64_t low = std::max<int64_t>((total + threads - 1) / threads, overhead + 1);
    int64_t high = std::max(total, low);
    while (low < high) {
      const int64_t middle = low + (high - low) / 2;
      if (run_ends(products, middle, overhead, cut_groups).empty()) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    return {low, run_ends(products, low, overhead, cut_groups)};
  }

  // The blocks for `threads` threads, as one list per task. Where the
  // offsets cut the output's rows (or columns), every position along that
  // dim costs the same, plus call_overhead_positions() for each product:
  // the positions up to the last offset are cut into at most one run per
  // thread, so that the costliest run costs least, and each thread computes
  // its run group after group. Runs end at group boundaries unless cutting a
  // group makes the costliest run cheaper by more than a sixteenth (the
  // model is rough, and a piece of a few rows runs far below BLAS's speed);
  // at most one group per thread is cut in two. Cutting every group into a
  // block per thread instead costs a call per piece, which made small groups
  // slower than the CPU's loop in bfloat16.
  std::vector<std::vector<Block>> plan(const std::vector<Product>& products) const {
    const bool along_grouped_dim = form == Form::kRows || form == Form::kColumns;
    const int64_t length = products.empty() ? 0 : products.back().begin + grouped_size(products.back());
    if (!along_grouped_dim || length < kMinimumBlock * threads) return whole_groups_or_blocks(products);
    const int64_t overhead = call_overhead_positions();
    auto [cut_bound, cuts] = cheapest_runs(products, overhead, true);
    auto [whole_bound, whole_cuts] = cheapest_runs(products, overhead, false);
    if (!whole_cuts.empty() && whole_bound * 16 <= cut_bound * 17) cuts = std::move(whole_cuts);
    cuts.insert(cuts.begin(), 0);
    std::vector<std::vector<Block>> tasks;
    for (size_t run = 0; run + 1 < cuts.size(); ++run) {
      std::vector<Block> pieces;
      for (const Product& product : products) {
        const int64_t begin = std::max(cuts[run], product.begin) - product.begin;
        const int64_t end = std::min(cuts[run + 1], product.begin + grouped_size(product)) - product.begin;
        if (end <= begin) continue;
        const BlockRange part{begin, end};
        pieces.push_back({&product, form == Form::kRows ? part : BlockRange{0, product.m},
                          form == Form::kRows ? BlockRange{0, product.n} : part});
      }
      if (!pieces.empty()) tasks.push_back(std::move(pieces));
    }
    return tasks;
  }

  // The tasks of the depth form, each group's output a whole matrix (and of
  // the batched form with BLAS, and the jagged forms with too few rows or
  // columns to share out; the batched form with ATen calls its bmm): with
  // ATen's mm (bfloat16, float16), whole groups, costliest first (the pool's
  // threads take tasks in turn), when the costliest thread's share is then
  // within a sixteenth of what cutting every group into blocks gives, which
  // costs a call of 15-18 us per block (the weights' gradient of 4 experts,
  // 128 x 256 each, 2 threads: 0.09 ms whole against 0.14 ms in blocks, the
  // CPU's loop 0.085). Else, and with BLAS, whose calls cost little (whole
  // groups measured no faster), the blocks.
  std::vector<std::vector<Block>> whole_groups_or_blocks(const std::vector<Product>& products) const {
    const double fixed = blas ? 0.2e6 : 3.5e6;
    auto cost = [&](int64_t rows, int64_t columns, int64_t depth) {
      return fixed + 2.0 * static_cast<double>(rows) * static_cast<double>(columns) *
                         static_cast<double>(std::max<int64_t>(1, depth));
    };
    std::vector<const Product*> order;
    for (const Product& product : products) {
      if (product.m > 0 && product.n > 0) order.push_back(&product);
    }
    std::stable_sort(order.begin(), order.end(), [&](const Product* x, const Product* y) {
      return cost(x->m, x->n, x->k) > cost(y->m, y->n, y->k);
    });
    std::vector<double> loads(static_cast<size_t>(threads), 0.0);
    for (const Product* product : order) {  // each to the least loaded thread, as taking in turn does
      *std::min_element(loads.begin(), loads.end()) += cost(product->m, product->n, product->k);
    }
    const double whole_share = loads.empty() ? 0 : *std::max_element(loads.begin(), loads.end());
    const std::vector<Block> cut = blocks(products);
    double total = 0, largest = 0;
    for (const Block& block : cut) {
      const double block_cost = cost(block.rows.end - block.rows.begin, block.columns.end - block.columns.begin,
                                     block.product->k);
      total += block_cost;
      largest = std::max(largest, block_cost);
    }
    const double cut_share = std::max(total / threads, largest);
    std::vector<std::vector<Block>> tasks;
    if (!blas && whole_share * 16 <= cut_share * 17) {
      for (const Product* product : order) tasks.push_back({{product, {0, product->m}, {0, product->n}}});
    } else {
      for (const Block& block : cut) tasks.push_back({block});
    }
    return tasks;
  }

  // The blocks for `threads` threads: each product cut into up to one block
  // per thread, group after group, so the threads, taking blocks in turn,
  // share out every group, however unevenly the rows fell.
  std::vector<Block> blocks(const std::vector<Product>& products) const {
    std::vector<Block> cut;
    for (const Product& product : products) {
      if (product.m == 0 || product.n == 0) continue;
      const bool by_rows = blas ? product.m >= product.n
                                : product.m >= kMinimumBlock * threads || product.m >= product.n;
      const int64_t extent_cut = by_rows ? product.m : product.n;
      const int64_t parts = product.k == 0 ? 1 : std::clamp<int64_t>(extent_cut / kMinimumBlock, 1, threads);
      for (int64_t part = 0; part < parts; ++part) {
        const BlockRange range = block_range(extent_cut, parts, kBlockAlignment, part);
        if (range.end == range.begin) continue;
        cut.push_back({&product, by_rows ? range : BlockRange{0, product.m},
                       by_rows ? BlockRange{0, product.n} : range});
      }
    }
    return cut;
  }

  Status operator()() const {
    try {
      return run();
    } catch (const std::exception& error) {  // ATen's mm refusing a block: not expected after the checks
      return internal_error(std::string("_grouped_mm: ") + error.what());
    }
  }

  Status run() const {
    if (form == Form::kBatched && !blas) {
      if (!splits_over_pool(small, threads)) {
        LibraryThreadScope scope(small);
        run_batches(0, groups);
        return Status();
      }
      const int64_t parts = std::min<int64_t>(groups, threads);
      split_tasks(parts, threads, [&](int64_t task) {
        const BlockRange range = block_range(groups, parts, 1, task);
        if (range.end > range.begin) run_batches(range.begin, range.end);
      });
      return Status();
    }
    std::vector<Product> products;
    Status status = list_products(products);
    if (!status.ok()) return status;
    write_zeros_past_last_offset(products);
    // The jagged and depth forms are shared out by the plan below on every
    // thread, the initial one too (an inference program runs there): its
    // OpenMP team per group pays a wake-up per small product, as the CPU's
    // loop does.
    if (small || threads <= 1) {
      LibraryThreadScope scope(small);
      for (const Product& product : products) run_block({&product, {0, product.m}, {0, product.n}});
      return Status();
    }
    const std::vector<std::vector<Block>> tasks = plan(products);
    split_tasks(static_cast<int64_t>(tasks.size()), threads, [&](int64_t task) {
      for (const Block& block : tasks[task]) run_block(block);
    });
    return Status();
  }
};

Form form_of(const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() == 2) return b.dim() == 2 ? Form::kDepth : Form::kRows;
  return b.dim() == 2 ? Form::kColumns : Form::kBatched;
}

size_t bytes_touched(std::initializer_list<const at::Tensor*> tensors) {
  size_t bytes = 0;
  for (const at::Tensor* tensor : tensors) bytes += tensor->nbytes();
  return bytes;
}

}  // namespace

at::Tensor grouped_mm(const at::Tensor& mat_a, const at::Tensor& mat_b, const std::optional<at::Tensor>& offs,
                      const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  record_static_op("aten::_grouped_mm", OpPath::kLibrary);
  check_same_device(mat_a.device(), mat_b, "aten::_grouped_mm");
  if (offs) check_same_device(mat_a.device(), *offs, "aten::_grouped_mm");
  if (bias) check_same_device(mat_a.device(), *bias, "aten::_grouped_mm");
  // PyTorch's checks and messages, as its composite and CUDA kernels run them.
  at::native::_grouped_mm_validate_inputs(mat_a, mat_b, offs, bias, out_dtype);
  const at::ScalarType dtype = at::native::_resolve_grouped_mm_out_dtype(mat_a, mat_b, out_dtype);
  // The composite's mm and bmm refuse operands of two dtypes; so does this,
  // with their message, whatever the offsets.
  TORCH_CHECK(mat_a.scalar_type() == mat_b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              mat_a.dtype(), " != ", mat_b.dtype());
  at::Tensor out = at::native::create_grouped_gemm_output_tensor(mat_a, mat_b, offs, dtype);
  if (out.numel() == 0) return out;

  GroupedCall call;
  call.form = form_of(mat_a, mat_b);
  call.dtype = dtype;
  call.element_size = out.element_size();
  call.a = operand(mat_a, const_cast<void*>(mat_a.const_data_ptr()));
  call.b = operand(mat_b, const_cast<void*>(mat_b.const_data_ptr()));
  call.out = operand(out, out.mutable_data_ptr());
  int64_t batches = 1;  // the product's flops, if the offsets cover their whole dim
  switch (call.form) {
    case Form::kRows:
      call.extent = mat_a.size(0);
      call.extent_name = "mat_a's dim 0";
      call.n = mat_b.size(2);
      call.k = mat_a.size(1);
      break;
    case Form::kColumns:
      call.extent = mat_b.size(1);
      call.extent_name = "mat_b's dim 1";
      call.m = mat_a.size(1);
      call.k = mat_a.size(2);
      break;
    case Form::kDepth:
      call.extent = mat_a.size(1);
      call.extent_name = "the shared dim (mat_a's dim 1)";
      call.m = mat_a.size(0);
      call.n = mat_b.size(1);
      break;
    case Form::kBatched:
      call.m = mat_a.size(1);
      call.n = mat_b.size(2);
      call.k = mat_a.size(2);
      batches = mat_a.size(0);
      break;
  }
  call.groups = offs ? offs->size(0) : mat_a.size(0);
  call.offsets = offs ? offs->const_data_ptr<int32_t>() : nullptr;
  const double flops = matmul_flops(batches, mat_a.size(-2), mat_a.size(-1), mat_b.size(-1));
  const size_t bytes = bytes_touched({&mat_a, &mat_b, &out}) + (offs ? offs->nbytes() : 0);
  call.small = is_small_library_call(flops, bytes);
  call.threads = launch_thread_count();
  call.blas = dtype == at::kFloat;  // float64 never gets here: PyTorch refuses it
  call.held = {mat_a, mat_b, out};
  if (offs) call.held.push_back(*offs);
  drop_tensors_reused_in_stream_order(call.held);
  check_status(stream_of(out).launch("aten::_grouped_mm", launch_bytes(call.small, bytes),
                                     [call = std::move(call)]() { return call(); }));
  return out;
}

}  // namespace kiln::torch_integration::library
