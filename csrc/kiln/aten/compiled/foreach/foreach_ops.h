// Foreach ops (torch._foreach_add_, _foreach_lerp_, ...: what optimizers and
// clip_grad_norm_ call) as one piece of device work per call, as CUDA's
// multi-tensor kernels are.
//
// A foreach op applies a pointwise op to each group: the i-th tensor of every
// list, with the i-th scalar of a scalar list. ATen's portable kernel calls
// the pointwise op once per group, each call a dispatch, a TensorIterator, a
// kernel lookup and a stream hand-off: about 2 us a tensor, so one AdamW step
// over 30 parameters spent some 500 us of host time in nine foreach calls.
//
// Kiln calls the per-group op once, on its largest group viewed as one dim,
// under a LaunchRecording that captures its launch without running it (one
// capture per distinct scalar of a scalar list). The launch is replayed for
// every group with that group's data pointers and element count, and all of
// them go to the stream as one task (launch_work, kernel_launch.h). The same
// holds for _foreach_norm, whose per-group op reduces the whole tensor in one
// launch of one position: its replay changes the reduced size instead.
//
// Replaying is exact only when every group would have made the same launch:
// all tensors on one kiln device and contiguous, each list of one dtype, the
// tensors of a group of one shape, scalars of one kind, and a capture that is
// one launch over one flat dim whose operands are the group's tensors (or the
// op's result, or its shared 0-dim tensor). Anything else (non-contiguous
// tensors, complex dtypes, a reduction large enough for two stages, the norm
// of an empty tensor) runs the op group by group, as ATen's portable kernel
// does, with the same results and errors. Op tracking counts the replayed
// call under the foreach op's name, and the capture once under the per-group
// op's.
#pragma once

#include <torch/library.h>

namespace kiln::torch_integration::compiled {

// Registers the foreach overloads Kiln runs this way for PrivateUse1.
void register_foreach_ops(torch::Library& library);

}  // namespace kiln::torch_integration::compiled
