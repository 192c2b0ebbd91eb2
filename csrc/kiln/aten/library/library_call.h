// The library path for linear algebra and FFT: one boxed kernel that runs an
// ATen op's own CPU kernel (LAPACK, BLAS, pocketfft/MKL) on host aliases of
// kiln device memory, as a GPU backend hands these ops to cuSOLVER and cuFFT.
// It serves any op in the table of registration_library.cc whose schema is
// functional, out= or in-place with tensor returns; each call is recorded in
// op tracking under the path "library", never as a fallback.
//
// Two modes, by the op's table entry:
//
//   queued       The output shapes come from the op's Meta kernel (PyTorch's
//                own shape checks, so a bad call raises at once, before
//                anything is queued); outputs are allocated on the device and
//                the CPU kernel is queued on the current stream, so the call
//                returns without waiting. A call falls back to the synchronous
//                mode when its result or its errors could depend on something
//                the Meta kernel does not see: a dtype other than float32,
//                float64, complex64 or complex128 (the CPU kernel may refuse
//                it), an argument check_errors=true, or an op without a Meta
//                kernel.
//   synchronous  For ops whose errors depend on the data (a singular or not
//                positive-definite matrix, an eigen/SVD solver that did not
//                converge): the stream is synchronized and the CPU kernel runs
//                in the calling thread, so the error is raised at the call, as
//                on the CPU. This is a sync point, like CUDA's info checks.
//
// Either way inputs are only read through aliases; outputs are device tensors
// the op writes (out= and in-place arguments, resized first as the Meta
// kernel says) or new device tensors the CPU results are copied into.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace kiln::torch_integration::library {

void queued_library_call(const c10::OperatorHandle& op, torch::jit::Stack* stack);
void synchronous_library_call(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace kiln::torch_integration::library
