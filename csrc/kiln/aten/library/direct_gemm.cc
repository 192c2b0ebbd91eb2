#include "kiln/aten/library/direct_gemm.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/native/device_memory.h"
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
// a tensor in place (t_()) before the stream runs the work.
struct GemmCall {
  at::Tensor a, b, bias, out;  // kept alive until the work ran
  at::ScalarType dtype;
  int m = 0, n = 0, k = 0;
  BlasOperand a_view, b_view;
  int64_t out_leading = 1;
  int64_t bias_row_stride = 0, bias_col_stride = 0;  // bias broadcast to [m, n]
  bool fill_bias = false;  // write the bias into out before the gemm
  double alpha = 1;
  double beta = 0;  // BLAS's: 0 unless out holds the bias when the gemm runs
  bool small = true;

  // out[i, j] = bias[i, j] (broadcast): what ATen's addmm copies in before
  // its gemm, whose beta then scales it.
  template <typename T>
  void write_bias() const {
    const T* source = bias.const_data_ptr<T>();
    T* target = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < m; ++i) {
      const T* row = source + i * bias_row_stride;
      T* destination = target + i * out_leading;
      if (bias_col_stride == 1) {
        std::memcpy(destination, row, sizeof(T) * n);
      } else {
        for (int64_t j = 0; j < n; ++j) destination[j] = row[j * bias_col_stride];
      }
    }
  }

  // Row-major out = A B is column-major out^T = B^T A^T: B's view first.
  template <typename T, typename Gemm>
  void run(Gemm gemm) const {
    if (fill_bias) write_bias<T>();
    const T typed_alpha = static_cast<T>(alpha);
    const T typed_beta = static_cast<T>(beta);
    const int lda = static_cast<int>(a_view.leading), ldb = static_cast<int>(b_view.leading);
    const int ldc = static_cast<int>(out_leading);
    gemm(&b_view.transpose, &a_view.transpose, &n, &m, &k, &typed_alpha, b.const_data_ptr<T>(), &ldb,
         a.const_data_ptr<T>(), &lda, &typed_beta, out.mutable_data_ptr<T>(), &ldc);
  }

  void operator()() const {
    LibraryThreadScope threads(small);
    if (dtype == at::kFloat) {
      run<float>(sgemm_);
    } else {
      run<double>(dgemm_);
    }
  }
};

bool shares_memory(const at::Tensor& x, const at::Tensor& y) { return x.storage().is_alias_of(y.storage()); }

}  // namespace

bool launch_direct_gemm(const char* name, const at::Tensor& a, const at::Tensor& b, const at::Tensor* bias,
                        double beta, double alpha, const at::Tensor& out, bool small) {
  const at::ScalarType dtype = out.scalar_type();
  if (dtype == at::kFloat ? sgemm_ == nullptr : dtype != at::kDouble || dgemm_ == nullptr) return false;
  if (a.is_conj() || b.is_conj() || a.is_neg() || b.is_neg()) return false;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m == 0 || n == 0 || k == 0 || !fits_blas(m) || !fits_blas(n) || !fits_blas(k)) return false;
  if (shares_memory(out, a) || shares_memory(out, b)) return false;

  GemmCall call;
  const std::optional<BlasOperand> a_view = transposed_view(m, k, a.stride(0), a.stride(1));
  const std::optional<BlasOperand> b_view = transposed_view(k, n, b.stride(0), b.stride(1));
  const std::optional<BlasOperand> out_view = transposed_view(m, n, out.stride(0), out.stride(1));
  if (!a_view || !b_view || !out_view || out_view->transpose != 'N') return false;
  if (!fits_blas(a_view->leading) || !fits_blas(b_view->leading) || !fits_blas(out_view->leading)) return false;

  if (bias != nullptr && beta != 0) {
    call.fill_bias = true;
    call.beta = beta;
    const at::Tensor& source = *bias;
    if (source.is_conj() || source.is_neg() || source.scalar_type() != dtype) return false;
    const int64_t dims = source.dim();
    if (dims >= 1 && source.size(dims - 1) != 1) call.bias_col_stride = source.stride(dims - 1);
    if (dims == 2 && source.size(0) != 1) call.bias_row_stride = source.stride(0);
    if (shares_memory(source, out)) {
      // addmm_(): the bias is the output itself, already in place.
      const bool in_place = source.data_ptr() == out.data_ptr() && call.bias_col_stride == out.stride(1) &&
                            call.bias_row_stride == out.stride(0);
      if (!in_place) return false;
      call.fill_bias = false;
    }
    call.bias = source;
  }
  call.a = a;
  call.b = b;
  call.out = out;
  call.dtype = dtype;
  call.m = static_cast<int>(m);
  call.n = static_cast<int>(n);
  call.k = static_cast<int>(k);
  call.a_view = *a_view;
  call.b_view = *b_view;
  call.out_leading = out_view->leading;
  call.alpha = alpha;
  call.small = small;
  const size_t bytes = a.nbytes() + b.nbytes() + out.nbytes() + (bias != nullptr ? bias->nbytes() : 0);
  check_status(stream_of(out).launch(name, launch_bytes(small, bytes), [call = std::move(call)]() {
    call();
    return Status();
  }));
  return true;
}

}  // namespace kiln::torch_integration::library
