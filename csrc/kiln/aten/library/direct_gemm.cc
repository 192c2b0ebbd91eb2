#include "kiln/aten/library/direct_gemm.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <vector>

#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"

// The Fortran BLAS of the process (LP64: 32-bit integers), as ATen's CPUBlas
// declares it. Weak: a libtorch_cpu that exports no BLAS leaves them null, and
// every product takes ATen's kernel instead.
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc) __attribute__((weak));
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc) __attribute__((weak));
}

namespace kiln::torch_integration::library {
namespace {

// How BLAS, which reads column-major matrices, is to read a row-major
// rows x cols operand X so that it sees X's transpose: 'N' with the row
// stride as leading dimension when X's rows are unit-strided, 'T' with the
// column stride when its columns are. A dim of size 1 has any stride.
struct BlasOperand {
  char transpose = 'N';
  int64_t leading = 1;
};

std::optional<BlasOperand> transposed_view(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if (col_stride == 1 || cols == 1) {
    const int64_t leading = rows == 1 ? std::max<int64_t>(1, cols) : row_stride;
    if (leading >= std::max<int64_t>(1, cols)) return BlasOperand{'N', leading};
  }
  if (row_stride == 1 || rows == 1) {
    const int64_t leading = cols == 1 ? std::max<int64_t>(1, rows) : col_stride;
    if (leading >= std::max<int64_t>(1, rows)) return BlasOperand{'T', leading};
  }
  return std::nullopt;
}

bool fits_blas(int64_t value) { return value >= 0 && value <= INT_MAX; }

// Everything the queued call needs, fixed at launch: the caller may restride
// a tensor in place (t_()) before the stream runs the work, or release its
// storage (FSDP frees an unsharded parameter with resize_(0) right after the
// forward that reads it; the memory itself stays the stream's until the work
// ran, as for any launch). Matrices are `batches` deep (1 for mm and addmm),
// each `*_batch_stride` elements apart.
struct GemmCall {
  // The operands the work must keep alive until it ran: none of them when
  // their memory is reused in stream order (kernel_launch.h).
  std::vector<at::Tensor> held;
  const void* a_data = nullptr;
  const void* b_data = nullptr;
  const void* bias_data = nullptr;
  void* out_data = nullptr;
  at::ScalarType dtype;
  int64_t batches = 1;
  int m = 0, n = 0, k = 0;
  BlasOperand a_view, b_view;
  int64_t a_batch_stride = 0, b_batch_stride = 0, out_batch_stride = 0;
  int64_t out_leading = 1;
  int64_t a_row_stride = 0;     // elements from one row of a to the next
  int64_t b_column_stride = 0;  // elements from one column of b to the next
  int64_t bias_strides[3] = {0, 0, 0};  // batch, row, column: the bias broadcast to [batches, m, n]
  bool fill_bias = false;  // write the bias into out before each gemm
  double alpha = 1;
  double beta = 0;  // BLAS's: 0 unless out holds the bias when the gemm runs

  // One gemm: rows [rows.begin, rows.end) and columns [columns.begin,
  // columns.end) of one batch's output, from the same rows of a and columns
  // of b. Each output element is the same dot product over k whichever
  // block computes it.
  struct Block {
    int64_t batch;
    BlockRange rows, columns;
  };

  // out[i, j] = bias[i, j] (broadcast) over a block: what ATen's addmm
  // copies in before its gemm, whose beta then scales it.
  template <typename T>
  void write_bias(const T* source, T* target, int64_t rows, int64_t columns) const {
    for (int64_t i = 0; i < rows; ++i) {
      const T* row = source + i * bias_strides[1];
      T* destination = target + i * out_leading;
      if (bias_strides[2] == 1) {
        std::memcpy(destination, row, sizeof(T) * columns);
      } else {
        for (int64_t j = 0; j < columns; ++j) destination[j] = row[j * bias_strides[2]];
      }
    }
  }

  // Row-major out = A B is column-major out^T = B^T A^T: B's view first.
  template <typename T, typename Gemm>
  void run_block(Gemm gemm, const Block& block) const {
    const int rows = static_cast<int>(block.rows.end - block.rows.begin);
    const int columns = static_cast<int>(block.columns.end - block.columns.begin);
    if (rows == 0 || columns == 0) return;
    const T typed_alpha = static_cast<T>(alpha);
    const T typed_beta = static_cast<T>(beta);
    const int lda = static_cast<int>(a_view.leading), ldb = static_cast<int>(b_view.leading);
    const int ldc = static_cast<int>(out_leading);
    T* target = static_cast<T*>(out_data) + block.batch * out_batch_stride + block.rows.begin * out_leading +
                block.columns.begin;
    if (fill_bias) {
      const T* source = static_cast<const T*>(bias_data) + block.batch * bias_strides[0] +
                        block.rows.begin * bias_strides[1] + block.columns.begin * bias_strides[2];
      write_bias<T>(source, target, rows, columns);
    }
    gemm(&b_view.transpose, &a_view.transpose, &columns, &rows, &k, &typed_alpha,
         static_cast<const T*>(b_data) + block.batch * b_batch_stride + block.columns.begin * b_column_stride,
         &ldb, static_cast<const T*>(a_data) + block.batch * a_batch_stride + block.rows.begin * a_row_stride,
         &lda, &typed_beta, target, &ldc);
  }

  template <typename T, typename Gemm>
  void run_all(Gemm gemm) const {
    for (int64_t batch = 0; batch < batches; ++batch) run_block<T>(gemm, {batch, {0, m}, {0, n}});
  }

  // Blocks for `threads` threads: whole matrices when the batch gives each
  // thread one, else each matrix cut along its longer side (rows or columns)
  // into one block per thread of at least kMinimumBlock, aligned to
  // kBlockAlignment so BLAS's packed panels stay whole. One block per thread,
  // not two: each block packs the whole of the other operand again, and at
  // 512^3 on 2 threads two blocks each ran at 0.91-0.92x the CPU's product
  // against 0.99-1.00x for one (bench_library.py, 3 processes per mode).
  static constexpr int64_t kBlockAlignment = 16;
  static constexpr int64_t kMinimumBlock = 32;

  template <typename T, typename Gemm>
  void run_split(Gemm gemm, int threads) const {
    const int64_t wanted = static_cast<int64_t>(threads);
    const bool by_rows = m >= n;
    const int64_t extent = by_rows ? m : n;
    const int64_t per_matrix = std::clamp<int64_t>((wanted + batches - 1) / batches, 1,
                                                   std::max<int64_t>(1, extent / kMinimumBlock));
    split_tasks(batches * per_matrix, threads, [&](int64_t task) {
      const int64_t batch = task / per_matrix;
      const BlockRange part = block_range(extent, per_matrix, kBlockAlignment, task % per_matrix);
      const BlockRange whole_rows{0, m}, whole_columns{0, n};
      run_block<T>(gemm, {batch, by_rows ? part : whole_rows, by_rows ? whole_columns : part});
    });
  }

  template <typename T, typename Gemm>
  void run(Gemm gemm, bool small, int threads) const {
    if (splits_over_pool(small, threads)) return run_split<T>(gemm, threads);
    LibraryThreadScope scope(small);
    run_all<T>(gemm);
  }

  void operator()(bool small, int threads) const {
    if (dtype == at::kFloat) {
      run<float>(sgemm_, small, threads);
    } else {
      run<double>(dgemm_, small, threads);
    }
  }
};

bool shares_memory(const at::Tensor& x, const at::Tensor& y) { return x.storage().is_alias_of(y.storage()); }

bool has_blas(at::ScalarType dtype) {
  return dtype == at::kFloat ? sgemm_ != nullptr : dtype == at::kDouble && dgemm_ != nullptr;
}

template <typename T, typename Gemm>
void call_gemm(Gemm gemm, const T* a, BlasOperand a_view, const T* b, BlasOperand b_view, T* out,
               int64_t out_leading, int m, int n, int k) {
  const T alpha = 1, beta = 0;
  const int lda = static_cast<int>(a_view.leading), ldb = static_cast<int>(b_view.leading);
  const int ldc = static_cast<int>(out_leading);
  // Row-major out = A B is column-major out^T = B^T A^T: B's view first.
  gemm(&b_view.transpose, &a_view.transpose, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, out, &ldc);
}

}  // namespace

bool direct_gemm_product(at::ScalarType dtype, const void* a, MatrixStrides a_strides, const void* b,
                         MatrixStrides b_strides, void* out, MatrixStrides out_strides, int64_t m, int64_t n,
                         int64_t k) {
  if (!has_blas(dtype)) return false;
  if (m == 0 || n == 0 || k == 0 || !fits_blas(m) || !fits_blas(n) || !fits_blas(k)) return false;
  const std::optional<BlasOperand> a_view = transposed_view(m, k, a_strides.row, a_strides.column);
  const std::optional<BlasOperand> b_view = transposed_view(k, n, b_strides.row, b_strides.column);
  const std::optional<BlasOperand> out_view = transposed_view(m, n, out_strides.row, out_strides.column);
  if (!a_view || !b_view || !out_view || out_view->transpose != 'N') return false;
  if (!fits_blas(a_view->leading) || !fits_blas(b_view->leading) || !fits_blas(out_view->leading)) return false;
  const int rows = static_cast<int>(m), columns = static_cast<int>(n), depth = static_cast<int>(k);
  if (dtype == at::kFloat) {
    call_gemm<float>(sgemm_, static_cast<const float*>(a), *a_view, static_cast<const float*>(b), *b_view,
                     static_cast<float*>(out), out_view->leading, rows, columns, depth);
  } else {
    call_gemm<double>(dgemm_, static_cast<const double*>(a), *a_view, static_cast<const double*>(b), *b_view,
                      static_cast<double*>(out), out_view->leading, rows, columns, depth);
  }
  return true;
}

bool launch_direct_gemm(const char* name, const at::Tensor& a, const at::Tensor& b, const at::Tensor* bias,
                        double beta, double alpha, const at::Tensor& out, bool small) {
  const at::ScalarType dtype = out.scalar_type();
  if (!has_blas(dtype)) return false;
  if (a.is_conj() || b.is_conj() || a.is_neg() || b.is_neg()) return false;
  const int64_t rank = a.dim();  // 2: mm and addmm, 3: bmm and baddbmm
  const int64_t batches = rank == 3 ? a.size(0) : 1;
  const int64_t m = a.size(rank - 2), k = a.size(rank - 1), n = b.size(rank - 1);
  if (batches == 0 || m == 0 || n == 0 || k == 0 || !fits_blas(m) || !fits_blas(n) || !fits_blas(k)) return false;
  if (shares_memory(out, a) || shares_memory(out, b)) return false;

  GemmCall call;
  const std::optional<BlasOperand> a_view = transposed_view(m, k, a.stride(rank - 2), a.stride(rank - 1));
  const std::optional<BlasOperand> b_view = transposed_view(k, n, b.stride(rank - 2), b.stride(rank - 1));
  const std::optional<BlasOperand> out_view = transposed_view(m, n, out.stride(rank - 2), out.stride(rank - 1));
  if (!a_view || !b_view || !out_view || out_view->transpose != 'N') return false;
  if (!fits_blas(a_view->leading) || !fits_blas(b_view->leading) || !fits_blas(out_view->leading)) return false;
  if (rank == 3) {
    call.a_batch_stride = a.stride(0);
    call.b_batch_stride = b.stride(0);
    call.out_batch_stride = out.stride(0);
    // One output matrix may not overlap the next: BLAS would race with itself.
    if (batches > 1 && call.out_batch_stride < m * out_view->leading) return false;
  }

  if (bias != nullptr && beta != 0) {
    const at::Tensor& source = *bias;
    if (source.is_conj() || source.is_neg() || source.scalar_type() != dtype || source.dim() > rank) return false;
    call.fill_bias = true;
    call.beta = beta;
    // The bias's dims align with the output's last dims; a dim of size 1 broadcasts.
    for (int64_t dim = 0; dim < source.dim(); ++dim) {
      const int64_t slot = 3 - source.dim() + dim;
      if (source.size(dim) != 1) call.bias_strides[slot] = source.stride(dim);
    }
    if (shares_memory(source, out)) {
      // addmm_() and baddbmm_(): the bias is the output itself, already in place.
      bool in_place = source.data_ptr() == out.data_ptr() && source.dim() == rank;
      for (int64_t dim = 0; dim < rank && in_place; ++dim) {
        in_place = call.bias_strides[3 - rank + dim] == out.stride(dim);
      }
      if (!in_place) return false;
      call.fill_bias = false;
    }
    call.held.push_back(source);
    call.bias_data = source.const_data_ptr();
  }
  call.held.insert(call.held.end(), {a, b, out});
  drop_tensors_reused_in_stream_order(call.held);
  call.a_data = a.const_data_ptr();
  call.b_data = b.const_data_ptr();
  call.out_data = out.mutable_data_ptr();
  call.dtype = dtype;
  call.batches = batches;
  call.m = static_cast<int>(m);
  call.n = static_cast<int>(n);
  call.k = static_cast<int>(k);
  call.a_view = *a_view;
  call.b_view = *b_view;
  call.out_leading = out_view->leading;
  call.a_row_stride = a.stride(rank - 2);
  call.b_column_stride = b.stride(rank - 1);
  call.alpha = alpha;
  const size_t bytes = a.nbytes() + b.nbytes() + out.nbytes() + (bias != nullptr ? bias->nbytes() : 0);
  const int threads = launch_thread_count();
  check_status(stream_of(out).launch(name, launch_bytes(small, bytes), [call = std::move(call), small, threads]() {
    call(small, threads);
    return Status();
  }));
  return true;
}

}  // namespace kiln::torch_integration::library
