// BoundLaunch: a fused kernel's launch, bound once and replayed on later runs.
//
// A program's shapes are static, so the launch a fused kernel makes on its
// first run (dim order and merging, strides, kernel entry, launch shape) is
// the same on every later run whose inputs have the same layouts; only the
// data pointers change. The first run records the launch (LaunchRecording,
// kernel_launch.h); later runs check each input's dtype, sizes and strides
// against the recorded ones and launch with new pointers, skipping the
// launcher's layout work, kernel-signature lookup and broadcast views (about
// 4 us a kernel). A run whose inputs differ takes the full launcher.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/ir/graph.h"

namespace kiln::torch_integration::program {

class BoundLaunch {
 public:
  // The launch of a kernel reading values[input_ids] (before broadcasting)
  // and writing `outputs`, from what its run recorded; null when it cannot be
  // replayed: not exactly one launch (a two-stage reduction), or an operand's
  // data pointer that is not at a fixed offset from its tensor's.
  static std::unique_ptr<BoundLaunch> bind(const std::vector<compiled::RecordedLaunch>& recorded,
                                           const std::vector<at::Tensor>& values,
                                           const std::vector<ir::GraphValueId>& input_ids,
                                           c10::ArrayRef<at::Tensor> outputs);

  // Whether values[input_ids] have the dtypes, sizes and strides bound.
  bool matches(const std::vector<at::Tensor>& values, const std::vector<ir::GraphValueId>& input_ids) const;

  // Launches on `stream` with the data of values[input_ids] and `outputs`.
  void launch(Stream& stream, const char* op_name, const std::vector<at::Tensor>& values,
              const std::vector<ir::GraphValueId>& input_ids, c10::ArrayRef<at::Tensor> outputs) const;

 private:
  struct InputLayout {
    c10::ScalarType dtype;
    std::vector<int64_t> sizes, strides;
  };
  compiled::RecordedLaunch launch_;
  std::vector<InputLayout> inputs_;
  std::vector<std::ptrdiff_t> offsets_;  // per operand (inputs, then outputs): bytes from its data
};

}  // namespace kiln::torch_integration::program
