// The fused LSTM and GRU cells. ATen's RNN code sends every accelerator
// (CUDA, XPU, PrivateUse1) through these ops, which only CUDA implements, so
// the CPU fallback cannot run them. Kiln composes them from elementwise ops
// (each of which then takes its own path) with CUDA's semantics, including
// the workspace layout the backward ops read.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros_like.h>

#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::native {
namespace {

at::Tensor sigmoid_derivative(const at::Tensor& activated) { return activated * (1 - activated); }
at::Tensor tanh_derivative(const at::Tensor& activated) { return 1 - activated * activated; }

}  // namespace

// Workspace: the activated gates [input, forget, cell, output], shape [B, 4H].
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  record_static_op("aten::_thnn_fused_lstm_cell", OpPath::kNative);
  at::Tensor gates = input_gates + hidden_gates;
  if (input_bias.has_value() && input_bias->defined()) gates = gates + *input_bias;
  if (hidden_bias.has_value() && hidden_bias->defined()) gates = gates + *hidden_bias;
  std::vector<at::Tensor> chunks = gates.chunk(4, 1);
  at::Tensor input_gate = chunks[0].sigmoid();
  at::Tensor forget_gate = chunks[1].sigmoid();
  at::Tensor cell_gate = chunks[2].tanh();
  at::Tensor output_gate = chunks[3].sigmoid();
  at::Tensor cy = forget_gate * cx + input_gate * cell_gate;
  at::Tensor hy = output_gate * cy.tanh();
  at::Tensor workspace = at::cat({input_gate, forget_gate, cell_gate, output_gate}, 1);
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  record_static_op("aten::_thnn_fused_lstm_cell_backward_impl", OpPath::kNative);
  bool have_hy = grad_hy.has_value() && grad_hy->defined();
  bool have_cy = grad_cy.has_value() && grad_cy->defined();
  if (!have_hy && !have_cy) return {at::Tensor(), at::Tensor(), at::Tensor()};
  std::vector<at::Tensor> gates = workspace.chunk(4, 1);
  const at::Tensor& input_gate = gates[0];
  const at::Tensor& forget_gate = gates[1];
  const at::Tensor& cell_gate = gates[2];
  const at::Tensor& output_gate = gates[3];
  at::Tensor tanh_cy = cy.tanh();
  at::Tensor hidden_grad = have_hy ? *grad_hy : at::zeros_like(cy);
  // Gradient reaching the cell state: through hy = o * tanh(cy), plus grad_cy.
  at::Tensor cell_grad = hidden_grad * output_gate * tanh_derivative(tanh_cy);
  if (have_cy) cell_grad = cell_grad + *grad_cy;
  at::Tensor grad_output_gate = hidden_grad * tanh_cy * sigmoid_derivative(output_gate);
  at::Tensor grad_input_gate = cell_grad * cell_gate * sigmoid_derivative(input_gate);
  at::Tensor grad_forget_gate = cell_grad * cx * sigmoid_derivative(forget_gate);
  at::Tensor grad_cell_gate = cell_grad * input_gate * tanh_derivative(cell_gate);
  at::Tensor grad_gates =
      at::cat({grad_input_gate, grad_forget_gate, grad_cell_gate, grad_output_gate}, 1);
  at::Tensor grad_cx = cell_grad * forget_gate;
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

// Workspace: [reset, update, new, hx, hidden new-gate], shape [B, 5H].
std::tuple<at::Tensor, at::Tensor> fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  record_static_op("aten::_thnn_fused_gru_cell", OpPath::kNative);
  at::Tensor input_part = input_gates;
  at::Tensor hidden_part = hidden_gates;
  if (input_bias.has_value() && input_bias->defined()) input_part = input_part + *input_bias;
  if (hidden_bias.has_value() && hidden_bias->defined()) hidden_part = hidden_part + *hidden_bias;
  std::vector<at::Tensor> input_chunks = input_part.chunk(3, 1);
  std::vector<at::Tensor> hidden_chunks = hidden_part.chunk(3, 1);
  at::Tensor reset_gate = (input_chunks[0] + hidden_chunks[0]).sigmoid();
  at::Tensor update_gate = (input_chunks[1] + hidden_chunks[1]).sigmoid();
  at::Tensor hidden_new = hidden_chunks[2];
  at::Tensor new_gate = (input_chunks[2] + reset_gate * hidden_new).tanh();
  at::Tensor hy = new_gate + update_gate * (hx - new_gate);
  at::Tensor workspace = at::cat({reset_gate, update_gate, new_gate, hx, hidden_new}, 1);
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  record_static_op("aten::_thnn_fused_gru_cell_backward", OpPath::kNative);
  std::vector<at::Tensor> parts = workspace.chunk(5, 1);
  const at::Tensor& reset_gate = parts[0];
  const at::Tensor& update_gate = parts[1];
  const at::Tensor& new_gate = parts[2];
  const at::Tensor& hx = parts[3];
  const at::Tensor& hidden_new = parts[4];
  at::Tensor grad_new = grad_hy * (1 - update_gate) * tanh_derivative(new_gate);
  at::Tensor grad_update = grad_hy * (hx - new_gate) * sigmoid_derivative(update_gate);
  at::Tensor grad_reset = grad_new * hidden_new * sigmoid_derivative(reset_gate);
  at::Tensor grad_hx = grad_hy * update_gate;
  at::Tensor grad_input_gates = at::cat({grad_reset, grad_update, grad_new}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_reset, grad_update, grad_new * reset_gate}, 1);
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace kiln::torch_integration::native
