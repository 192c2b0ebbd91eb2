// The library path's registration table: the matmul family (grouped products included), convolution and
// fused attention (library_kernels.h), and linear algebra and FFT (library_call.h):
// the ATen kernels a GPU backend hands to cuSOLVER, cuBLAS and cuFFT, run by
// PyTorch's CPU kernels on aliases of kiln memory.
//
// Most linalg.* and fft.* functions are CompositeImplicitAutograd over the ops
// below; the structured ones (linalg_qr, linalg_lu_factor_ex, _linalg_svd ...)
// reach a backend through their out= overloads, since the functional form is a
// CompositeExplicitAutogradNonFunctional wrapper that allocates the outputs and
// calls out=. So out= is registered for those, and both forms for the others.
#include <ATen/ops/_fused_sdp_choice_native.h>
#include <torch/library.h>

#include "kiln/aten/library/library_call.h"
#include "kiln/aten/library/library_kernels.h"

namespace kiln::torch_integration {
namespace {

// No error of these depends on the data: queued on the stream.
constexpr const char* kQueuedOps[] = {
    // FFT (pocketfft or MKL)
    "_fft_r2c", "_fft_r2c.out", "_fft_c2r", "_fft_c2r.out", "_fft_c2c", "_fft_c2c.out",
    // BLAS leftovers of the matmul family
    "dot", "vdot", "addmv.out", "addbmm", "addbmm.out", "addbmm_", "trace",
    // Factorizations and solves that report failure in an info tensor (the
    // checking wrappers read it with .item(), which synchronizes) or not at all
    "linalg_lu_factor_ex.out", "linalg_lu.out", "linalg_lu_solve.out", "lu_unpack.out",
    "linalg_cholesky_ex.L", "linalg_inv_ex.inverse", "_linalg_solve_ex.result",
    "linalg_ldl_factor_ex.out", "linalg_ldl_solve.out", "_linalg_det.result",
    "_linalg_slogdet.sign", "linalg_qr.out", "geqrf", "geqrf.a", "ormqr", "ormqr.out",
    "linalg_householder_product", "linalg_householder_product.out", "linalg_solve_triangular",
    "linalg_solve_triangular.out", "triangular_solve.X", "linalg_matrix_exp",
};

// These raise from inside the CPU kernel when the data is bad (a matrix that
// is singular or not positive-definite, a solver that did not converge): they
// synchronize the stream and run at the call, so the error is raised there.
constexpr const char* kSynchronousOps[] = {
    "_linalg_eigh.eigenvalues", "linalg_eig", "linalg_eig.out", "_linalg_eigvals",
    "_linalg_svd.U", "linalg_lstsq.out", "cholesky_inverse", "cholesky_inverse.out",
    "_cholesky_solve_helper", "linalg_matrix_sqrth", "linalg_polar.out",
};

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : kQueuedOps) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&library::queued_library_call>());
  }
  for (const char* name : kSynchronousOps) {
    m.impl(name,
           torch::CppFunction::makeFromBoxedFunction<&library::synchronous_library_call>());
  }
}

// The library path: PyTorch's CPU math libraries on device memory.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm.out", TORCH_FN(library::mm_out));
  m.impl("addmm.out", TORCH_FN(library::addmm_out));
  m.impl("_addmm_activation.out", TORCH_FN(library::addmm_activation_out));
  m.impl("bmm.out", TORCH_FN(library::bmm_out));
  m.impl("baddbmm.out", TORCH_FN(library::baddbmm_out));
  m.impl("_grouped_mm", TORCH_FN(library::grouped_mm));
  m.impl("convolution", TORCH_FN(library::convolution));
  m.impl("convolution_backward", TORCH_FN(library::convolution_backward));
  m.impl("_fused_sdp_choice", TORCH_FN(at::native::_fused_sdp_choice_cpp));
  m.impl("_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(library::flash_attention_for_cpu));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward",
         TORCH_FN(library::flash_attention_for_cpu_backward));
}

}  // namespace kiln::torch_integration
