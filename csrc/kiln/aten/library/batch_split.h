// Cutting a queued linear algebra or FFT call into independent calls over a
// batch dimension, so a large call on the stream's worker uses every thread
// (library_threads.h): each block is the same CPU kernel on a slice of the
// batch, and each matrix or signal of the batch is computed by one call, as
// the whole call would compute it.
//
// Which calls are cut:
//   FFT (_fft_r2c, _fft_c2r, _fft_c2c and their out= forms): along the
//     largest dimension of the input that is not transformed; the output has
//     the input's dimensions in the same order.
//   Batched factorizations and solves (the ops of kBatchedLinalgOps in
//     batch_split.cc): along the outermost batch dimension, when every input
//     tensor has the first input's rank and batch sizes (no broadcasting: a
//     lower-rank operand may be a broadcast matrix or a batch of vectors, which
//     the sizes alone cannot tell apart) and every output starts with the
//     same batch sizes.
// Anything else (dot, addmv, trace, an unbatched matrix) is not cut.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <vector>

namespace kiln::torch_integration::library {

struct BatchSplit {
  int64_t dim = -1;      // the dimension cut in every marked argument and every output
  int64_t extent = 0;    // its size
  std::vector<bool> cut; // per argument of the op: a tensor cut along `dim`
  bool splits() const { return dim >= 0 && extent >= 2; }
};

// How `op` called on `arguments` (its boxed arguments, kiln tensors), whose
// results are `outputs`, may be cut; a BatchSplit that does not split() when
// it may not.
BatchSplit batch_split(const c10::OperatorHandle& op, const std::vector<c10::IValue>& arguments,
                       const std::vector<at::Tensor>& outputs);

}  // namespace kiln::torch_integration::library
