// Convolution forward and backward on the library path: PyTorch's CPU
// convolution (oneDNN) over aliases of device memory, queued on the stream.
//
// ATen's composite convolution sends devices it does not know to
// convolution_overrideable, so Kiln registers the top-level ops. Result shapes
// come from running the op on meta tensors in the caller, which also applies
// PyTorch's argument checks before anything is queued.
//
// PyTorch's CPU convolution (oneDNN) has no out= form: its result is copied
// into the device output. A small 2D convolution instead runs PyTorch's
// im2col-and-GEMM convolution (_slow_conv2d_forward), which has one, straight
// into the device output. For the sizes that rule admits (see
// writes_output_directly) that convolution is as fast as oneDNN or faster,
// and the copy (about a tenth of the call) is gone (docs/history/performance-log.md).
#include <ATen/ops/convolution.h>
#include <ATen/ops/_slow_conv2d_forward.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/sum.h>

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/library/library_kernels.h"
#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/library/pointwise_convolution.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::library {
namespace {

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::kMeta));
}

std::optional<at::Tensor> meta_like(const std::optional<at::Tensor>& tensor) {
  if (!tensor.has_value() || !tensor->defined()) return std::nullopt;
  return meta_like(*tensor);
}

std::optional<at::Tensor> alias_of(const std::optional<at::Tensor>& tensor) {
  if (!tensor.has_value() || !tensor->defined()) return std::nullopt;
  return host_alias(*tensor);
}

void check_device(const at::Tensor& first, const at::Tensor& other) {
  check_same_device(first.device(), other, "convolution");
}

// The sizes the meta convolution gives for one argument signature. A
// training loop convolves the same shapes every step, and the meta run (which
// is also where ATen's argument checks happen) costs ~50 us, so its result is
// kept per signature: everything it depends on (sizes, strides, dtypes,
// whether there is a bias, the convolution parameters) is in the key.
class OutputSizeMemo {
 public:
  std::optional<std::vector<int64_t>> find(const std::vector<int64_t>& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = sizes_.find(key);
    if (found == sizes_.end()) return std::nullopt;
    return found->second;
  }
  void insert(std::vector<int64_t> key, std::vector<int64_t> sizes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sizes_.size() >= kCapacity) sizes_.clear();  // unusual: many shapes; start over
    sizes_.emplace(std::move(key), std::move(sizes));
  }

 private:
  static constexpr size_t kCapacity = 256;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> sizes_;
};

void append_tensor(std::vector<int64_t>& key, const at::Tensor& tensor) {
  key.push_back(static_cast<int64_t>(tensor.scalar_type()));
  key.push_back(tensor.dim());
  key.insert(key.end(), tensor.sizes().begin(), tensor.sizes().end());
  key.insert(key.end(), tensor.strides().begin(), tensor.strides().end());
}

void append_list(std::vector<int64_t>& key, c10::IntArrayRef values) {
  key.push_back(static_cast<int64_t>(values.size()));
  key.insert(key.end(), values.begin(), values.end());
}

struct ConvolutionArguments {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
};

// Each element of `outer` (the output, or the input of a transposed
// convolution) is a dot product over one filter: weight.numel() / weight.size(0)
// multiply-adds.
double convolution_flops(const at::Tensor& outer, const at::Tensor& weight) {
  if (weight.dim() == 0 || weight.size(0) == 0) return 0;
  return 2.0 * static_cast<double>(outer.numel()) *
         static_cast<double>(weight.numel() / weight.size(0));
}

// The im2col-and-GEMM convolution unfolds the whole batch's input into one
// columns buffer of N * C_in * kH * kW * H_out * W_out elements (host memory,
// outside the device's), copying runs of W_out elements (or C_in, channels
// last) at a time. (A 1x1 kernel without padding never gets here: it is a
// product, pointwise_convolution.h.)
// Measured against oneDNN plus the copy (docs/history/performance-log.md), it was as fast
// or faster with up to 1 MiB of columns copied in runs of 16 elements or more;
// shorter runs (the first layer of an image model in channels last) or larger
// buffers, and oneDNN wins.
constexpr int64_t kDirectColumnsBytes = int64_t{1} << 20;
constexpr int64_t kDirectShortestRun = 16;

// Whether the convolution can be computed straight into `output` by
// _slow_conv2d_forward, and is no slower that way: 2D, not transposed, one
// group, no dilation, float or double, `output` in the layout that
// convolution writes (channels last when the input or the weight is), and
// within the limits above. Double always qualifies: oneDNN does not take it,
// so PyTorch's CPU convolution runs this same one.
bool writes_output_directly(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& output,
                            const ConvolutionArguments& arguments) {
  if (input.dim() != 4 || arguments.transposed || arguments.groups != 1) return false;
  if (input.numel() == 0 || weight.numel() == 0) return false;  // ATen's own handling of empty inputs
  // ATen also takes one value for both dims; this path reads two.
  if (arguments.stride.size() != 2 || arguments.padding.size() != 2 || arguments.dilation.size() != 2) return false;
  if (arguments.dilation[0] != 1 || arguments.dilation[1] != 1) return false;
  if (input.scalar_type() != weight.scalar_type()) return false;
  if (input.scalar_type() != at::kFloat && input.scalar_type() != at::kDouble) return false;
  const bool channels_last = input.suggest_memory_format() == c10::MemoryFormat::ChannelsLast ||
                             weight.suggest_memory_format() == c10::MemoryFormat::ChannelsLast;
  if (!output.is_contiguous(channels_last ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::Contiguous)) {
    return false;
  }
  if (input.scalar_type() == at::kDouble) return true;
  const int64_t run = channels_last ? input.size(1) : output.size(3);
  const int64_t columns = input.size(0) * input.size(1) * weight.size(2) * weight.size(3) * output.size(2) *
                          output.size(3);
  return run >= kDirectShortestRun &&
         columns * static_cast<int64_t>(input.element_size()) <= kDirectColumnsBytes;
}

// One forward convolution on host tensors: straight into `output` (see
// writes_output_directly), or into a new tensor copied there.
void run_forward(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                 at::Tensor output, const ConvolutionArguments& arguments, bool direct) {
  if (direct) {
    at::_slow_conv2d_forward_out(output, input, weight, {weight.size(2), weight.size(3)}, bias,
                                 arguments.stride, arguments.padding);
    return;
  }
  output.copy_(at::convolution(input, weight, bias, arguments.stride, arguments.padding, arguments.dilation,
                               arguments.transposed, arguments.output_padding, arguments.groups));
}

// Whether each sample's result depends on that sample alone: a batched
// input (the output has the input's rank), so the batch can be cut.
bool has_batch(const at::Tensor& input, const at::Tensor& output) {
  return input.dim() >= 3 && output.dim() == input.dim();
}

// Whether output channels (forward, weight gradient) or input channels (input
// gradient) can be cut: one group, not transposed, so each channel's result
// reads one slice of the weight.
bool can_cut_channels(const ConvolutionArguments& arguments) {
  return arguments.groups == 1 && !arguments.transposed;
}

// Whether to cut by batch rather than by channels: every block of a batch
// cut reads the whole weight, every block of a channel cut the whole of
// `whole_in_channel_cut`, so the cut that reads the smaller of the two again
// wins (a 3x3 convolution of 512 channels at 2x2 positions reads 9 MiB of
// weight for 0.1 MiB of input). Channels are cut only where they can be.
bool cut_by_batch(int64_t batch, const at::Tensor& weight, const at::Tensor& whole_in_channel_cut,
                  const ConvolutionArguments& arguments, int threads) {
  if (!can_cut_channels(arguments)) return true;
  if (batch < threads) return false;
  return weight.nbytes() <= whole_in_channel_cut.nbytes();
}

// The forward over `threads` of Kiln's pool threads: blocks of the batch or of
// output channels (cut_by_batch), one convolution each. A sample's (or
// channel's) result is computed by the same kernel whichever block holds it.
void run_forward_split(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       const at::Tensor& output, const ConvolutionArguments& arguments, bool direct,
                       int threads) {
  const int64_t batch = input.size(0);
  if (cut_by_batch(batch, weight, input, arguments, threads)) {
    const int64_t blocks = std::min<int64_t>(batch, threads);
    split_tasks(blocks, threads, [&](int64_t task) {
      const BlockRange samples = block_range(batch, blocks, 1, task);
      const int64_t length = samples.end - samples.begin;
      if (length == 0) return;
      run_forward(input.narrow(0, samples.begin, length), weight, bias, output.narrow(0, samples.begin, length),
                  arguments, direct);
    });
    return;
  }
  const int64_t channels = weight.size(0);
  const int64_t blocks = std::min<int64_t>(channels, threads);
  split_tasks(blocks, threads, [&](int64_t task) {
    const BlockRange part = block_range(channels, blocks, 1, task);
    const int64_t length = part.end - part.begin;
    if (length == 0) return;
    std::optional<at::Tensor> bias_part;
    if (bias.has_value()) bias_part = bias->narrow(0, part.begin, length);
    run_forward(input, weight.narrow(0, part.begin, length), bias_part, output.narrow(1, part.begin, length),
                arguments, false);  // a channel block of the output is not dense: computed, then copied
  });
}

// The host aliases of a backward call; a gradient not asked for is undefined.
struct BackwardOperands {
  at::Tensor grad_output, input, weight;
  at::Tensor grad_input, grad_weight, grad_bias;
};

// PyTorch's CPU convolution_backward for the input or weight gradient (one
// of `mask`) of these operands, copied into `target`.
void store_gradient(const at::Tensor& target, const at::Tensor& grad_output, const at::Tensor& input,
                    const at::Tensor& weight, const ConvolutionArguments& arguments, bool input_gradient) {
  auto gradients = at::convolution_backward(
      grad_output, input, weight, std::nullopt, arguments.stride, arguments.padding, arguments.dilation,
      arguments.transposed, arguments.output_padding, arguments.groups, {input_gradient, !input_gradient, false});
  target.copy_(input_gradient ? std::get<0>(gradients) : std::get<1>(gradients));
}

// The bias gradient sums the output gradient over all but its channels.
void store_bias_gradient(const BackwardOperands& operands) {
  std::vector<int64_t> dims{0};
  for (int64_t dim = 2; dim < operands.grad_output.dim(); ++dim) dims.push_back(dim);
  at::Tensor target = operands.grad_bias;  // a handle: sum_out writes its memory
  at::sum_out(target, operands.grad_output, dims);
}

void run_backward(const BackwardOperands& operands, const ConvolutionArguments& arguments) {
  if (operands.grad_input.defined() || operands.grad_weight.defined()) {
    // Without the bias: oneDNN's weight gradient with a bias costs more than
    // without it plus the sum below (the CNN's first layer, one thread: 195
    // against 172 us), and a bias gradient alone still computes the weight's.
    auto [cpu_input, cpu_weight, unused] = at::convolution_backward(
        operands.grad_output, operands.input, operands.weight, std::nullopt, arguments.stride,
        arguments.padding, arguments.dilation, arguments.transposed, arguments.output_padding, arguments.groups,
        {operands.grad_input.defined(), operands.grad_weight.defined(), false});
    if (operands.grad_input.defined()) operands.grad_input.copy_(cpu_input);
    if (operands.grad_weight.defined()) operands.grad_weight.copy_(cpu_weight);
  }
  if (operands.grad_bias.defined()) store_bias_gradient(operands);
}

// The input gradient of samples `part` (by_batch) or of input channels `part`.
void store_input_gradient_block(const BackwardOperands& operands, const ConvolutionArguments& arguments,
                                bool by_batch, BlockRange part) {
  const int64_t length = part.end - part.begin;
  if (length == 0) return;
  if (by_batch) {
    store_gradient(operands.grad_input.narrow(0, part.begin, length),
                   operands.grad_output.narrow(0, part.begin, length), operands.input.narrow(0, part.begin, length),
                   operands.weight, arguments, true);
  } else {
    store_gradient(operands.grad_input.narrow(1, part.begin, length), operands.grad_output,
                   operands.input.narrow(1, part.begin, length), operands.weight.narrow(1, part.begin, length),
                   arguments, true);
  }
}

// The weight gradient of output channels `part` (by_output_channels) or of
// input channels `part`.
void store_weight_gradient_block(const BackwardOperands& operands, const ConvolutionArguments& arguments,
                                 bool by_output_channels, BlockRange part) {
  const int64_t length = part.end - part.begin;
  if (length == 0) return;
  if (by_output_channels) {
    store_gradient(operands.grad_weight.narrow(0, part.begin, length),
                   operands.grad_output.narrow(1, part.begin, length), operands.input,
                   operands.weight.narrow(0, part.begin, length), arguments, false);
  } else {
    store_gradient(operands.grad_weight.narrow(1, part.begin, length), operands.grad_output,
                   operands.input.narrow(1, part.begin, length), operands.weight.narrow(1, part.begin, length),
                   arguments, false);
  }
}

// The backward over `threads` of Kiln's pool threads, as independent tasks:
// blocks of the input gradient (by batch or input channels, cut_by_batch),
// blocks of the weight gradient (by output channels, which reads the whole
// input again per block, or input channels, which reads the whole output
// gradient: the smaller), and the bias gradient. Each block is the CPU
// kernel's own computation of those elements.
void run_backward_split(const BackwardOperands& operands, const ConvolutionArguments& arguments, int threads) {
  const at::Tensor& input = operands.input;
  const bool input_by_batch = cut_by_batch(input.size(0), operands.weight, operands.grad_output, arguments, threads);
  const int64_t input_extent = input_by_batch ? input.size(0) : input.size(1);
  const int64_t input_blocks = operands.grad_input.defined() ? std::min<int64_t>(input_extent, threads) : 0;
  const bool weight_by_output_channels = input.nbytes() <= operands.grad_output.nbytes();
  const int64_t weight_extent = operands.weight.size(weight_by_output_channels ? 0 : 1);
  const int64_t weight_blocks = !operands.grad_weight.defined() ? 0
                                : can_cut_channels(arguments) ? std::min<int64_t>(weight_extent, threads)
                                                              : 1;
  const int64_t tasks = input_blocks + weight_blocks + (operands.grad_bias.defined() ? 1 : 0);
  split_tasks(tasks, threads, [&](int64_t task) {
    if (task < input_blocks) {
      store_input_gradient_block(operands, arguments, input_by_batch,
                                 block_range(input_extent, input_blocks, 1, task));
    } else if (task - input_blocks < weight_blocks && !can_cut_channels(arguments)) {
      store_gradient(operands.grad_weight, operands.grad_output, input, operands.weight, arguments, false);
    } else if (task - input_blocks < weight_blocks) {
      store_weight_gradient_block(operands, arguments, weight_by_output_channels,
                                  block_range(weight_extent, weight_blocks, 1, task - input_blocks));
    } else {
      store_bias_gradient(operands);
    }
  });
}

}  // namespace

bool convolution_writes_output_directly(const at::Tensor& input, const at::Tensor& weight,
                                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                                        c10::IntArrayRef dilation, int64_t groups) {
  // The output convolution() would allocate: its sizes from a meta run, the
  // input's layout.
  const at::Tensor meta_output = at::convolution(meta_like(input), meta_like(weight), std::nullopt, stride,
                                                 padding, dilation, false, {0, 0}, groups);
  const at::Tensor output = at::empty(meta_output.sizes(), meta_output.options().memory_format(
                                                               input.suggest_memory_format()));
  if (is_pointwise_convolution(input, weight, stride, padding, false, {0, 0}, groups)) {
    return pointwise_convolution_writes_output_directly(input, output);
  }
  return writes_output_directly(input, weight, output,
                                {stride.vec(), padding.vec(), dilation.vec(), {0, 0}, false, groups});
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups) {
  record_static_op("aten::convolution", OpPath::kLibrary);
  check_device(input, weight);
  if (bias.has_value() && bias->defined()) check_device(input, *bias);
  const bool has_bias = bias.has_value() && bias->defined();
  std::vector<int64_t> key;
  append_tensor(key, input);
  append_tensor(key, weight);
  if (has_bias) append_tensor(key, *bias);
  else key.push_back(-1);
  for (c10::IntArrayRef list : {stride, padding, dilation, output_padding}) append_list(key, list);
  key.push_back(transposed);
  key.push_back(groups);
  static OutputSizeMemo memo;
  std::optional<std::vector<int64_t>> sizes = memo.find(key);
  if (!sizes.has_value()) {
    at::Tensor meta_result = at::convolution(meta_like(input), meta_like(weight), meta_like(bias),
                                             stride, padding, dilation, transposed, output_padding,
                                             groups);
    sizes = meta_result.sizes().vec();
    memo.insert(std::move(key), *sizes);
  }
  c10::MemoryFormat format = static_cast<int64_t>(sizes->size()) == input.dim()
                                 ? input.suggest_memory_format()
                                 : c10::MemoryFormat::Contiguous;
  at::Tensor output = at::empty(*sizes, input.options().memory_format(format));
  if (output.numel() == 0) return output;
  if (is_pointwise_convolution(input, weight, stride, padding, transposed, output_padding, groups)) {
    pointwise_convolution(input, weight, bias, stride, output);
    return output;
  }
  // Owned copies: the work may run after this call returned.
  ConvolutionArguments arguments{stride.vec(), padding.vec(), dilation.vec(),
                                 output_padding.vec(), transposed, groups};
  size_t bytes = input.nbytes() + weight.nbytes() + output.nbytes();
  // The host aliases are made now, not when the work runs: the caller may
  // change a tensor's metadata in place (output.t_()) before it runs. The
  // kiln tensors are kept too, unless their memory is reused in stream
  // order (kernel_launch.h): an alias does not keep its memory alive.
  std::vector<at::Tensor> keep_alive{input, weight, output};
  if (bias.has_value() && bias->defined()) keep_alive.push_back(*bias);
  drop_tensors_reused_in_stream_order(keep_alive);
  const bool small = is_small_library_call(convolution_flops(transposed ? input : output, weight),
                                           bytes);
  const bool direct = writes_output_directly(input, weight, output, arguments);
  const int threads = launch_thread_count();
  const bool batched = has_batch(input, output);
  check_status(stream_of(output).launch("aten::convolution", launch_bytes(small, bytes),
      [input = host_alias(input), weight = host_alias(weight), bias = alias_of(bias),
       output = host_alias(output), arguments, keep_alive, small, direct, threads, batched]() mutable {
        if (batched && splits_over_pool(small, threads)) {
          run_forward_split(input, weight, bias, output, arguments, direct, threads);
          return Status();
        }
        LibraryThreadScope scope(small);
        run_forward(input, weight, bias, output, arguments, direct);
        return Status();
      }));
  return output;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::OptionalIntArrayRef bias_sizes, c10::IntArrayRef stride, c10::IntArrayRef padding,
    c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  record_static_op("aten::convolution_backward", OpPath::kLibrary);
  check_device(input, weight);
  check_device(input, grad_output);
  // The gradients have the shapes of input, weight and bias, so unlike the
  // forward no meta run is needed for them (it cost ~50 us a call); the
  // shapes were checked when the forward ran.
  TORCH_CHECK(grad_output.dim() == input.dim() && weight.dim() == input.dim(),
              "convolution_backward: grad_output, input and weight must have the same number of "
              "dims, got ", grad_output.dim(), ", ", input.dim(), " and ", weight.dim());
  TORCH_CHECK(!output_mask[2] || bias_sizes.has_value(),
              "convolution_backward: bias_sizes are needed for the bias gradient");
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  }
  if (output_mask[1]) {
    grad_weight = at::empty(weight.sizes(), weight.options().memory_format(weight.suggest_memory_format()));
  }
  if (output_mask[2]) grad_bias = at::empty(*bias_sizes, weight.options());
  if (grad_output.numel() > 0 &&
      is_pointwise_convolution(input, weight, stride, padding, transposed, output_padding, groups)) {
    pointwise_convolution_backward(grad_output, input, weight, stride, grad_input, grad_weight, grad_bias);
    return {grad_input, grad_weight, grad_bias};
  }
  ConvolutionArguments arguments{stride.vec(), padding.vec(), dilation.vec(),
                                 output_padding.vec(), transposed, groups};
  size_t bytes = grad_output.nbytes() + input.nbytes() + weight.nbytes();
  // Aliases made at the call, and the kiln tensors kept alive, as in the forward.
  std::vector<at::Tensor> keep_alive{grad_output, input, weight, grad_input, grad_weight,
                                     grad_bias};
  drop_tensors_reused_in_stream_order(keep_alive);
  auto alias_if_used = [](const at::Tensor& tensor) {
    return tensor.defined() && tensor.numel() > 0 ? host_alias(tensor) : at::Tensor();
  };
  // The input and weight gradients each cost about one forward.
  const bool small = is_small_library_call(
      2 * convolution_flops(transposed ? input : grad_output, weight), bytes);
  BackwardOperands operands{host_alias(grad_output), host_alias(input), host_alias(weight),
                            alias_if_used(grad_input), alias_if_used(grad_weight), alias_if_used(grad_bias)};
  const int threads = launch_thread_count();
  const bool batched = input.dim() >= 3 && grad_output.dim() == input.dim();
  check_status(stream_of(input).launch("aten::convolution_backward", launch_bytes(small, bytes),
      [operands, arguments, keep_alive, small, threads, batched]() {
        if (batched && splits_over_pool(small, threads)) {
          run_backward_split(operands, arguments, threads);
          return Status();
        }
        LibraryThreadScope scope(small);
        run_backward(operands, arguments);
        return Status();
      }));
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace kiln::torch_integration::library
