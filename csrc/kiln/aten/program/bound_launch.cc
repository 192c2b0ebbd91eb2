#include "kiln/aten/program/bound_launch.h"

namespace kiln::torch_integration::program {
namespace {

char* data_of(const at::Tensor& tensor) { return static_cast<char*>(tensor.data_ptr()); }

}  // namespace

std::unique_ptr<BoundLaunch> BoundLaunch::bind(const std::vector<compiled::RecordedLaunch>& recorded,
                                               const std::vector<at::Tensor>& values,
                                               const std::vector<ir::GraphValueId>& input_ids,
                                               c10::ArrayRef<at::Tensor> outputs) {
  if (recorded.size() != 1 || input_ids.size() + outputs.size() > static_cast<size_t>(ir::kMaxOperands)) {
    return nullptr;
  }
  auto bound = std::make_unique<BoundLaunch>();
  bound->launch_ = recorded.front();
  char* const* data = bound->launch_.args.data;
  for (size_t i = 0; i < input_ids.size(); ++i) {
    const at::Tensor& input = values[input_ids[i]];
    bound->inputs_.push_back({input.scalar_type(), input.sizes().vec(), input.strides().vec()});
    bound->offsets_.push_back(data[i] - data_of(input));
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    bound->offsets_.push_back(data[input_ids.size() + j] - data_of(outputs[j]));
  }
  return bound;
}

bool BoundLaunch::matches(const std::vector<at::Tensor>& values,
                          const std::vector<ir::GraphValueId>& input_ids) const {
  for (size_t i = 0; i < input_ids.size(); ++i) {
    const at::Tensor& input = values[input_ids[i]];
    const InputLayout& layout = inputs_[i];
    if (!input.defined() || input.scalar_type() != layout.dtype || !input.sizes().equals(layout.sizes) ||
        !input.strides().equals(layout.strides)) {
      return false;
    }
  }
  return true;
}

void BoundLaunch::launch(Stream& stream, const char* op_name, const std::vector<at::Tensor>& values,
                         const std::vector<ir::GraphValueId>& input_ids,
                         c10::ArrayRef<at::Tensor> outputs) const {
  LaunchArgs args = launch_.args;
  const size_t input_count = input_ids.size();
  for (size_t i = 0; i < input_count; ++i) {
    args.data[i] = data_of(values[input_ids[i]]) + offsets_[i];
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    args.data[input_count + j] = data_of(outputs[j]) + offsets_[input_count + j];
  }
  if (compiled::launch_kernel_inline(stream, op_name, launch_.entry, args, launch_.shape)) return;
  compiled::KeepAlive keep_alive;
  for (ir::GraphValueId input : input_ids) keep_alive.push_back(values[input]);
  for (const at::Tensor& output : outputs) keep_alive.push_back(output);
  compiled::launch_kernel(stream, op_name, launch_.entry, args, launch_.shape, std::move(keep_alive));
}

}  // namespace kiln::torch_integration::program
