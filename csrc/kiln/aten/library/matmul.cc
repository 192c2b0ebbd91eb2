// The matmul family on the library path: mm, addmm (and _addmm_activation),
// bmm, baddbmm. Their functional and in-place forms (and linear, matmul,
// which compose them) reach the device as these out= overloads.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/mm.h>

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

void check_same_kiln_device(std::initializer_list<const at::Tensor*> tensors, const char* op) {
  const at::Tensor& first = **tensors.begin();
  for (const at::Tensor* tensor : tensors) {
    check_same_device(first.device(), *tensor, op);
  }
}

void check_same_dtype(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "expected m1 and m2 to have the same dtype, but got: ", a.scalar_type(), " != ",
              b.scalar_type());
}

void check_out_dtype(const at::Tensor& out, const at::Tensor& input) {
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), "Expected out tensor to have dtype ",
              input.scalar_type(), ", but got ", out.scalar_type(), " instead");
}

void check_matrices(const at::Tensor& mat1, const at::Tensor& mat2) {
  TORCH_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (",
              mat1.size(0), "x", mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_same_dtype(mat1, mat2);
}

void check_batches(const at::Tensor& batch1, const at::Tensor& batch2) {
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch2.size(0) == batch1.size(0) && batch2.size(1) == batch1.size(2),
              "Expected size for first two dimensions of batch2 tensor to be: [", batch1.size(0),
              ", ", batch1.size(2), "] but got: [", batch2.size(0), ", ", batch2.size(1), "].");
  check_same_dtype(batch1, batch2);
}

void check_bias(const at::Tensor& bias, c10::IntArrayRef result_shape) {
  TORCH_CHECK(at::is_expandable_to(bias.sizes(), result_shape), "The expanded size of the ",
              "input tensor (", bias.sizes(), ") must be broadcastable to the result shape ",
              result_shape);
}

size_t bytes_touched(std::initializer_list<const at::Tensor*> tensors) {
  size_t bytes = 0;
  for (const at::Tensor* tensor : tensors) bytes += tensor->nbytes();
  return bytes;
}

// Which dim of a product's output a split cuts: the batch of a batched
// product, else its rows (blocks of whole rows stay dense, which oneDNN's
// bfloat16 product needs to write them in place), else, for a product of
// few rows, its columns.
constexpr int64_t kMinimumRows = 16;

int64_t split_dim(const at::Tensor& out, int threads) {
  const int64_t rank = out.dim();
  if (rank == 3 && out.size(0) >= threads) return 0;
  const bool few_rows = out.size(rank - 2) < kMinimumRows * threads;
  return few_rows && out.size(rank - 1) > out.size(rank - 2) ? rank - 1 : rank - 2;
}

// The operands of one block of the output along `dim`: a bias (expanded to
// the output's shape) is cut with it; mat1 (batch1) follows the output's
// batch and rows, mat2 (batch2) its batch and columns.
std::vector<at::Tensor> block_operands(const std::vector<at::Tensor>& inputs, bool has_bias, const at::Tensor& out,
                                       int64_t dim, int64_t begin, int64_t length) {
  const int64_t rank = out.dim();
  std::vector<at::Tensor> block;
  size_t next = 0;
  if (has_bias) block.push_back(inputs[next++].expand(out.sizes()).narrow(dim, begin, length));
  const at::Tensor& first = inputs[next];
  const at::Tensor& second = inputs[next + 1];
  block.push_back(dim == rank - 1 ? first : first.narrow(dim, begin, length));
  block.push_back(dim == rank - 2 ? second : second.narrow(dim, begin, length));
  return block;
}

// Launches `call(out_alias, input_aliases)` on the output's stream, with
// the tensors whose memory is not reused in stream order kept alive until
// it ran (kernel_launch.h). The aliases are made here, at the
// call: the caller may change a tensor's sizes or strides in place (t_())
// before the work runs. A large call on the stream's worker (bfloat16,
// half, complex: products BLAS is not called for directly) is cut into
// blocks of the output, one call each, over Kiln's pool (library_threads.h);
// `has_bias`: inputs[0] is a bias broadcast to the output.
template <typename Call>
void launch(const char* name, at::Tensor& out, std::vector<at::Tensor> inputs, bool has_bias, size_t bytes,
            double flops, Call call) {
  if (out.numel() == 0) return;
  std::vector<at::Tensor> aliases;
  for (const at::Tensor& input : inputs) {
    // Keep the lazy conjugate and negative bits (x.mH @ x, a.conj() @ b):
    // host_alias sees only the stored values, and the CPU kernel resolves
    // the bits as it does for a CPU view.
    at::Tensor alias = host_alias(input);
    if (input.is_conj()) alias = alias.conj();
    if (input.is_neg()) alias = at::_neg_view(alias);
    aliases.push_back(alias);
  }
  at::Tensor target_alias = host_alias(out);
  std::vector<at::Tensor> held = std::move(inputs);
  held.push_back(out);
  drop_tensors_reused_in_stream_order(held);
  const bool small = is_small_library_call(flops, bytes);
  const int threads = launch_thread_count();
  check_status(stream_of(out).launch(name, launch_bytes(small, bytes),
                                     [held, target_alias, aliases, small, threads, has_bias,
                                      call]() mutable {
    if (!splits_over_pool(small, threads)) {
      LibraryThreadScope scope(small);
      call(target_alias, aliases);
      return Status();
    }
    const int64_t dim = split_dim(target_alias, threads);
    const int64_t extent = target_alias.size(dim);
    // One block a thread: each is a whole ATen call, with its own checks and
    // oneDNN's set-up around the product.
    const int64_t blocks = std::min<int64_t>(extent, threads);
    split_tasks(blocks, threads, [&](int64_t task) {
      const BlockRange part = block_range(extent, blocks, dim == 0 ? 1 : kMinimumRows, task);
      const int64_t length = part.end - part.begin;
      if (length == 0) return;
      at::Tensor block = target_alias.narrow(dim, part.begin, length);
      call(block, block_operands(aliases, has_bias, target_alias, dim, part.begin, length));
    });
    return Status();
  }));
}

}  // namespace

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  record_static_op("aten::mm.out", OpPath::kLibrary);
  check_same_kiln_device({&self, &mat2, &out}, "mm");
  check_matrices(self, mat2);
  check_out_dtype(out, self);
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  const size_t bytes = bytes_touched({&self, &mat2, &out});
  const double flops = matmul_flops(1, self.size(0), self.size(1), mat2.size(1));
  if (launch_direct_gemm("aten::mm.out", self, mat2, nullptr, 0, 1, out, is_small_library_call(flops, bytes))) {
    return out;
  }
  launch("aten::mm.out", out, {self, mat2}, false, bytes, flops,
         [](at::Tensor& result, const std::vector<at::Tensor>& in) {
           at::mm_out(result, in[0], in[1]);
         });
  return out;
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                      const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  record_static_op("aten::addmm.out", OpPath::kLibrary);
  check_same_kiln_device({&self, &mat1, &mat2, &out}, "addmm");
  check_matrices(mat1, mat2);
  check_same_dtype(self, mat1);
  check_out_dtype(out, mat1);
  std::vector<int64_t> shape = {mat1.size(0), mat2.size(1)};
  check_bias(self, shape);
  at::native::resize_output(out, shape);
  const size_t bytes = bytes_touched({&self, &mat1, &mat2, &out});
  const double flops = matmul_flops(1, mat1.size(0), mat1.size(1), mat2.size(1));
  if (!beta.isComplex() && !alpha.isComplex() &&
      launch_direct_gemm("aten::addmm.out", mat1, mat2, &self, beta.toDouble(), alpha.toDouble(), out,
                         is_small_library_call(flops, bytes))) {
    return out;
  }
  launch("aten::addmm.out", out, {self, mat1, mat2}, true, bytes, flops,
         [beta, alpha](at::Tensor& result, const std::vector<at::Tensor>& in) {
           at::addmm_out(result, in[0], in[1], in[2], beta, alpha);
         });
  return out;
}

// The CPU's _addmm_activation: addmm, then relu or (exact) gelu in place,
// on the compiled path (CUDA fuses the activation into cuBLASLt's epilogue,
// with gelu's tanh approximation; kiln computes the CPU's numbers). The
// transformer encoder layer's fast path calls it for its first feed-forward
// product.
at::Tensor& addmm_activation_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                 const c10::Scalar& beta, const c10::Scalar& alpha, bool use_gelu,
                                 at::Tensor& out) {
  record_static_op("aten::_addmm_activation.out", OpPath::kLibrary);
  addmm_out(self, mat1, mat2, beta, alpha, out);
  return use_gelu ? at::gelu_(out) : at::relu_(out);
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  record_static_op("aten::bmm.out", OpPath::kLibrary);
  check_same_kiln_device({&self, &mat2, &out}, "bmm");
  check_batches(self, mat2);
  check_out_dtype(out, self);
  at::native::resize_output(out, {self.size(0), self.size(1), mat2.size(2)});
  const size_t bytes = bytes_touched({&self, &mat2, &out});
  const double flops = matmul_flops(self.size(0), self.size(1), self.size(2), mat2.size(2));
  if (launch_direct_gemm("aten::bmm.out", self, mat2, nullptr, 0, 1, out, is_small_library_call(flops, bytes))) {
    return out;
  }
  launch("aten::bmm.out", out, {self, mat2}, false, bytes, flops,
         [](at::Tensor& result, const std::vector<at::Tensor>& in) {
           at::bmm_out(result, in[0], in[1]);
         });
  return out;
}

at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& batch1,
                        const at::Tensor& batch2, const c10::Scalar& beta,
                        const c10::Scalar& alpha, at::Tensor& out) {
  record_static_op("aten::baddbmm.out", OpPath::kLibrary);
  check_same_kiln_device({&self, &batch1, &batch2, &out}, "baddbmm");
  check_batches(batch1, batch2);
  check_same_dtype(self, batch1);
  check_out_dtype(out, batch1);
  std::vector<int64_t> shape = {batch1.size(0), batch1.size(1), batch2.size(2)};
  check_bias(self, shape);
  at::native::resize_output(out, shape);
  const size_t bytes = bytes_touched({&self, &batch1, &batch2, &out});
  const double flops = matmul_flops(batch1.size(0), batch1.size(1), batch1.size(2), batch2.size(2));
  if (!beta.isComplex() && !alpha.isComplex() &&
      launch_direct_gemm("aten::baddbmm.out", batch1, batch2, &self, beta.toDouble(), alpha.toDouble(), out,
                         is_small_library_call(flops, bytes))) {
    return out;
  }
  launch("aten::baddbmm.out", out, {self, batch1, batch2}, true, bytes, flops,
         [beta, alpha](at::Tensor& result, const std::vector<at::Tensor>& in) {
           at::baddbmm_out(result, in[0], in[1], in[2], beta, alpha);
         });
  return out;
}

}  // namespace kiln::torch_integration::library
