#include "kiln/aten/compiled/nn/loss/ctc_loss_ops.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/take.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>

#include <limits>
#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

// What both directions know of the batch: sizes, lengths on the device, the
// extended targets and the log-probabilities gathered along them.
struct Lattice {
  int64_t steps = 0, samples = 0, labels = 0, width = 0;
  at::Tensor input_lengths;   // [samples, width] int64, broadcast along s
  at::Tensor target_lengths;  // [samples, width] int64
  at::Tensor primes;          // [samples, width] int64: l'(s)
  at::Tensor gathered;        // [samples, steps, width]: log_probs[t, n, l'(s)]
};

Lattice build_lattice(const char* checked_from, const at::Tensor& log_probs, const at::Tensor& targets,
                      at::IntArrayRef input_lengths, at::IntArrayRef target_lengths, int64_t blank) {
  TORCH_CHECK(targets.scalar_type() == at::kLong || targets.scalar_type() == at::kInt,
              "Expected tensor for argument #2 'targets' to have one of the following scalar types: ",
              "Long, Int; but got ", targets.scalar_type(), " instead (while checking arguments for ",
              checked_from, ")");
  TORCH_CHECK(log_probs.dim() == 3, "Expected 3-dimensional tensor, but got ", log_probs.dim(),
              "-dimensional tensor for argument #1 'log_probs' (while checking arguments for ",
              checked_from, ")");
  TORCH_CHECK(targets.dim() >= 1 && targets.dim() < 3, "Expected 1 to 2 dimensions, but got ",
              targets.dim(), "-dimensional tensor for argument #2 'targets' (while checking ",
              "arguments for ", checked_from, ")");
  Lattice lattice;
  lattice.steps = log_probs.size(0);
  lattice.samples = log_probs.size(1);
  lattice.labels = log_probs.size(2);
  TORCH_CHECK(0 <= blank && blank < lattice.labels, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == lattice.samples,
              "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == lattice.samples,
              "target_lengths must be of size batch_size");
  // Each sample's first target, as a logical index into the flattened targets.
  std::vector<int64_t> offsets(lattice.samples);
  int64_t longest = 0, position = 0;
  for (int64_t sample = 0; sample < lattice.samples; ++sample) {
    TORCH_CHECK(target_lengths[sample] >= 0, "Expected target_lengths to have value at least 0, ",
                "but got value ", target_lengths[sample], " (while checking arguments for ", checked_from, ")");
    offsets[sample] = targets.dim() == 1 ? position : sample * targets.size(1);
    position += target_lengths[sample];
    longest = std::max(longest, target_lengths[sample]);
  }
  if (targets.dim() == 1) {
    TORCH_CHECK(targets.size(0) == position, "Expected tensor to have size ", position,
                " at dimension 0, but got size ", targets.size(0), " for argument #2 'targets' ",
                "(while checking arguments for ", checked_from, ")");
  } else {
    TORCH_CHECK(targets.size(0) == lattice.samples, "Expected tensor to have size ", lattice.samples,
                " at dimension 0, but got size ", targets.size(0), " for argument #2 'targets' ",
                "(while checking arguments for ", checked_from, ")");
    TORCH_CHECK(targets.size(1) >= longest, "Expected tensor to have size at least ", longest,
                " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets' ",
                "(while checking arguments for ", checked_from, ")");
  }
  for (int64_t sample = 0; sample < lattice.samples; ++sample) {
    TORCH_CHECK(input_lengths[sample] >= 0, "Expected input_lengths to have value at least 0, but got value ",
                input_lengths[sample], " (while checking arguments for ", checked_from, ")");
    TORCH_CHECK(input_lengths[sample] <= lattice.steps, "Expected input_lengths to have value at most ",
                lattice.steps, ", but got value ", input_lengths[sample],
                " (while checking arguments for ", checked_from, ")");
  }
  check_dispatch_dtype("ctc_loss_cpu", log_probs.scalar_type(), kFloatAndDoubleTypes);

  lattice.width = 2 * longest + 1;
  // Where l'(s) reads the targets (-1: a blank, or past the sample's targets).
  std::vector<int64_t> sources(lattice.samples * lattice.width, -1);
  for (int64_t sample = 0; sample < lattice.samples; ++sample) {
    for (int64_t label = 0; label < target_lengths[sample]; ++label) {
      sources[sample * lattice.width + 2 * label + 1] = offsets[sample] + label;
    }
  }
  const at::TensorOptions on_device = targets.options().dtype(at::kLong);
  at::Tensor source = at::tensor(sources, at::kLong).view({lattice.samples, lattice.width}).to(targets.device());
  at::Tensor labels = targets.numel() == 0
                          ? at::full({lattice.samples, lattice.width}, blank, on_device)
                          : at::take(targets, source.clamp_min(0)).to(at::kLong);
  lattice.primes = at::where(source.ge(0), labels, at::full({}, blank, on_device));
  const std::vector<int64_t> sizes = {lattice.samples, lattice.width};
  lattice.input_lengths = at::tensor(input_lengths.vec(), at::kLong).to(targets.device()).unsqueeze(1).expand(sizes);
  lattice.target_lengths = at::tensor(target_lengths.vec(), at::kLong).to(targets.device()).unsqueeze(1).expand(sizes);
  lattice.gathered = at::gather(log_probs.permute({1, 0, 2}), 2,
                                lattice.primes.unsqueeze(1).expand({lattice.samples, lattice.steps, lattice.width}));
  return lattice;
}

// log(exp(a - m) + exp(b - m) + exp(c - m)) + m, m the largest (0 when all
// are -inf), as the CPU writes eq. 6 and 10.
ValueId log_sum_exp3(ir::Builder& builder, ValueId a, ValueId b, ValueId c) {
  const DType type = builder.dtype_of(a);
  ValueId largest = builder.select(builder.binary(OpCode::kGreater, b, a), b, a);
  largest = builder.select(builder.binary(OpCode::kGreater, c, largest), c, largest);
  ValueId negative_infinity = builder.constant(kNegativeInfinity, type);
  largest = builder.select(builder.binary(OpCode::kEqual, largest, negative_infinity), builder.constant(0, type), largest);
  auto shifted = [&](ValueId value) { return builder.unary(OpCode::kExp, builder.binary(OpCode::kSubtract, value, largest)); };
  ValueId total = builder.binary(OpCode::kAdd, builder.binary(OpCode::kAdd, shifted(a), shifted(b)), shifted(c));
  return builder.binary(OpCode::kAdd, builder.unary(OpCode::kLog, total), largest);
}

// Kernel inputs of one time step: the neighbouring row (t - 1 forward, t + 1
// backward), log_probs along l' at t, the extended targets, the lengths.
enum StepInput { kNeighbour, kGathered, kPrimes, kInputLengths, kTargetLengths };
// Scalars: 0 t, 1 the neighbour row's stride along s.
void launch_step(const char* op_name, const Lattice& lattice, const at::Tensor& rows, int64_t step,
                 bool backward) {
  const int64_t neighbour_step = backward ? std::min(step + 1, lattice.steps - 1) : std::max<int64_t>(step - 1, 0);
  const at::Tensor inputs[] = {rows.select(1, neighbour_step), lattice.gathered.select(1, step), lattice.primes,
                               lattice.input_lengths, lattice.target_lengths};
  const c10::Scalar scalars[] = {step, rows.stride(2)};
  const int64_t coordinate_dims[] = {1};
  ElementwiseOptions options;
  options.coordinate_dims = coordinate_dims;
  launch_elementwise(op_name, backward ? "ctc_beta_step" : "ctc_alpha_step", inputs, {rows.select(1, step)},
                     scalars, [backward](ElementwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    const std::vector<ValueId>& in = context.inputs;
    const DType type = builder.dtype_of(in[kGathered]);
    ValueId s = context.coordinate(1), t = context.scalars[0], stride = context.scalars[1];
    auto integer = [&](int64_t value) { return builder.constant(value, DType::kInt64); };
    ValueId negative_infinity = builder.constant(kNegativeInfinity, type);
    ValueId doubled = builder.binary(OpCode::kMultiply, in[kTargetLengths], integer(2));
    ValueId last_step = builder.binary(OpCode::kSubtract, in[kInputLengths], integer(1));
    // The neighbour `distance` states away (towards s = 0 forward, the end
    // backward), or -inf when `allowed` fails; the load stays in the row.
    auto neighbour = [&](int64_t distance, ValueId allowed) {
      ValueId offset = builder.binary(OpCode::kMultiply, integer(backward ? distance : -distance), stride);
      ValueId value = builder.indexed_load(kNeighbour, builder.select(allowed, offset, integer(0)));
      return builder.select(allowed, value, negative_infinity);
    };
    ValueId lp = in[kGathered];
    ValueId first, second, skip, start, active;
    if (!backward) {
      first = neighbour(0, builder.constant(1, DType::kBool));
      second = neighbour(1, builder.binary(OpCode::kGreater, s, integer(0)));
      ValueId can_skip = builder.binary(OpCode::kGreater, s, integer(1));
      ValueId two_back = builder.indexed_load(kPrimes, builder.select(can_skip, integer(-2), integer(0)));
      skip = neighbour(2, builder.binary(OpCode::kLogicalAnd, can_skip,
                                         builder.binary(OpCode::kNotEqual, two_back, in[kPrimes])));
      // t = 0: l'(0) (the blank) and l'(1) (the first label) start a path.
      ValueId first_label = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kEqual, s, integer(1)),
                                           builder.binary(OpCode::kGreater, in[kTargetLengths], integer(0)));
      ValueId opens = builder.binary(OpCode::kLogicalOr, builder.binary(OpCode::kEqual, s, integer(0)), first_label);
      start = builder.select(opens, lp, negative_infinity);
      ValueId initial = builder.binary(OpCode::kEqual, t, integer(0));
      ValueId value = builder.select(initial, start, builder.binary(OpCode::kAdd, log_sum_exp3(builder, first, second, skip), lp));
      active = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kLess, t, in[kInputLengths]),
                              builder.binary(OpCode::kLessEqual, s, doubled));
      return {builder.select(active, value, negative_infinity)};
    }
    first = neighbour(0, builder.constant(1, DType::kBool));
    second = neighbour(1, builder.binary(OpCode::kLess, s, doubled));
    ValueId can_skip = builder.binary(OpCode::kLess, s, builder.binary(OpCode::kSubtract, doubled, integer(1)));
    ValueId two_on = builder.indexed_load(kPrimes, builder.select(can_skip, integer(2), integer(0)));
    skip = neighbour(2, builder.binary(OpCode::kLogicalAnd, can_skip,
                                       builder.binary(OpCode::kNotEqual, two_on, in[kPrimes])));
    // t = input length - 1: the last blank and the last label end a path.
    ValueId last_label = builder.binary(OpCode::kLogicalAnd,
                                        builder.binary(OpCode::kEqual, s, builder.binary(OpCode::kSubtract, doubled, integer(1))),
                                        builder.binary(OpCode::kGreater, in[kTargetLengths], integer(0)));
    ValueId closes = builder.binary(OpCode::kLogicalOr, builder.binary(OpCode::kEqual, s, doubled), last_label);
    start = builder.select(closes, lp, negative_infinity);
    ValueId final_step = builder.binary(OpCode::kEqual, t, last_step);
    ValueId value = builder.select(final_step, start, builder.binary(OpCode::kAdd, log_sum_exp3(builder, first, second, skip), lp));
    active = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kLessEqual, t, last_step),
                            builder.binary(OpCode::kLessEqual, s, doubled));
    return {builder.select(active, value, negative_infinity)};
  });
}

at::Tensor run_lattice(const char* op_name, const Lattice& lattice, const at::TensorOptions& options,
                       bool backward) {
  at::Tensor rows = at::full({lattice.samples, lattice.steps, lattice.width}, kNegativeInfinity, options);
  for (int64_t index = 0; index < lattice.steps; ++index) {
    launch_step(op_name, lattice, rows, backward ? lattice.steps - 1 - index : index, backward);
  }
  return rows;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef input_lengths,
                                            at::IntArrayRef target_lengths, int64_t blank,
                                            bool zero_infinity) {
  check_same_device({log_probs, targets});
  const Lattice lattice = build_lattice("ctc_loss_cpu", log_probs, targets, input_lengths, target_lengths, blank);
  at::Tensor log_alpha = run_lattice("aten::_ctc_loss", lattice, log_probs.options(), false);
  // The likelihood: the last two alphas at each sample's last step (the
  // last one alone for an empty target; 1 or 0 for an empty input).
  std::vector<int64_t> last(lattice.samples), before_last(lattice.samples);
  std::vector<double> fixed(lattice.samples, 0.0);
  std::vector<uint8_t> is_fixed(lattice.samples, 0);
  const int64_t row = lattice.steps * lattice.width;
  for (int64_t sample = 0; sample < lattice.samples; ++sample) {
    const int64_t step = std::max<int64_t>(input_lengths[sample] - 1, 0);
    const int64_t length = target_lengths[sample];
    last[sample] = sample * row + step * lattice.width + 2 * length;
    before_last[sample] = length > 0 ? last[sample] - 1 : -1;
    if (input_lengths[sample] == 0) {
      is_fixed[sample] = 1;
      fixed[sample] = length == 0 ? 0.0 : kNegativeInfinity;
    }
  }
  const at::Device device = log_probs.device();
  at::Tensor indices = at::tensor(before_last, at::kLong).to(device);
  at::Tensor first = at::take(log_alpha, at::tensor(last, at::kLong).to(device));
  at::Tensor second = at::where(indices.ge(0), at::take(log_alpha, indices.clamp_min(0)),
                                at::full({}, kNegativeInfinity, log_probs.options()));
  at::Tensor largest = at::maximum(first, second);
  largest.masked_fill_(largest.eq(kNegativeInfinity), 0.0);
  at::Tensor likelihood = first.sub(largest).exp_().add_(second.sub(largest).exp_()).log_().add_(largest);
  likelihood = at::where(at::tensor(std::vector<int64_t>(is_fixed.begin(), is_fixed.end()), at::kLong).to(device).ne(0),
                         at::tensor(fixed, at::kDouble).to(device).to(log_probs.scalar_type()), likelihood);
  return {likelihood.neg(), log_alpha};
}

at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs,
                             const at::Tensor& targets, at::IntArrayRef input_lengths,
                             at::IntArrayRef target_lengths, const at::Tensor& neg_log_likelihood,
                             const at::Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  check_same_device({grad, log_probs, targets, neg_log_likelihood, log_alpha});
  const Lattice lattice = build_lattice("ctc_loss_backward_cpu", log_probs, targets, input_lengths,
                                        target_lengths, blank);
  at::Tensor log_beta = run_lattice("aten::_ctc_loss_backward", lattice, log_probs.options(), true);
  const int64_t samples = lattice.samples, steps = lattice.steps, labels = lattice.labels,
                width = lattice.width;
  at::Tensor result = at::empty({steps, samples, labels}, log_probs.options());
  if (result.numel() == 0) return result;
  // collected[n, t, c] = log(sum over s with l'(s) = c of exp(alpha + beta)),
  // added one s at a time from the last, as the CPU's loop adds them (the
  // gradient subtracts two close numbers, so the order shows).
  const std::vector<int64_t> cells = {samples, steps, labels};
  at::Tensor collected = at::full(cells, kNegativeInfinity, log_probs.options());
  const int64_t coordinate_dims[] = {2};
  ElementwiseOptions by_class;
  by_class.coordinate_dims = coordinate_dims;
  for (int64_t state = width - 1; state >= 0; --state) {
    const at::Tensor inputs[] = {collected, log_alpha.select(2, state).unsqueeze(2).expand(cells),
                                 log_beta.select(2, state).unsqueeze(2).expand(cells),
                                 lattice.primes.select(1, state).view({samples, 1, 1}).expand(cells)};
    launch_elementwise("aten::_ctc_loss_backward", "ctc_collect", inputs, {collected}, {},
                       [](ElementwiseContext& context) -> std::vector<ValueId> {
      ir::Builder& builder = context.builder;
      const std::vector<ValueId>& in = context.inputs;
      const DType type = builder.dtype_of(in[0]);
      ValueId sum = in[0], term = builder.binary(OpCode::kAdd, in[1], in[2]);
      ValueId largest = builder.select(builder.binary(OpCode::kLess, sum, term), term, sum);
      auto shifted = [&](ValueId value) {
        return builder.unary(OpCode::kExp, builder.binary(OpCode::kSubtract, value, largest));
      };
      ValueId added = builder.binary(OpCode::kAdd, builder.unary(OpCode::kLog, builder.binary(OpCode::kAdd, shifted(sum), shifted(term))),
                                     largest);
      ValueId empty = builder.binary(OpCode::kEqual, sum, builder.constant(kNegativeInfinity, type));
      ValueId merged = builder.select(empty, term, added);
      ValueId hit = builder.binary(OpCode::kEqual, in[3], context.coordinate(2));
      return {builder.select(hit, merged, sum)};
    }, by_class);
  }
  // (exp(lp) - exp(collected + nll - lp)) * grad, zero past the input length
  // and for an infinite loss under zero_infinity.
  std::vector<int64_t> lengths(input_lengths.begin(), input_lengths.end());
  const at::Device device = log_probs.device();
  at::Tensor steps_left = at::tensor(lengths, at::kLong).to(device).view({samples, 1, 1}).expand({samples, steps, labels});
  const at::Tensor inputs[] = {log_probs.permute({1, 0, 2}), collected,
                               neg_log_likelihood.view({samples, 1, 1}).expand({samples, steps, labels}),
                               grad.view({samples, 1, 1}).expand({samples, steps, labels}), steps_left};
  const int64_t time_dims[] = {1};
  ElementwiseOptions options;
  options.coordinate_dims = time_dims;
  const c10::Scalar scalars[] = {zero_infinity};
  launch_elementwise("aten::_ctc_loss_backward", "ctc_gradient", inputs, {result.permute({1, 0, 2})},
                     scalars, [](ElementwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    const std::vector<ValueId>& in = context.inputs;
    const DType type = builder.dtype_of(in[0]);
    ValueId lp = in[0], nll = in[2];
    ValueId value = builder.binary(
        OpCode::kMultiply,
        builder.binary(OpCode::kSubtract, builder.unary(OpCode::kExp, lp),
                       builder.unary(OpCode::kExp, builder.binary(OpCode::kSubtract,
                                                                  builder.binary(OpCode::kAdd, in[1], nll), lp))),
        in[3]);
    ValueId zero = builder.constant(0, type);
    ValueId infinite = builder.binary(OpCode::kLogicalAnd, context.scalars[0],
                                      builder.binary(OpCode::kEqual, nll, builder.constant(-kNegativeInfinity, type)));
    ValueId past = builder.binary(OpCode::kGreaterEqual, context.coordinate(1), in[4]);
    return {builder.select(builder.binary(OpCode::kLogicalOr, infinite, past), zero, value)};
  });
  return result;
}

}  // namespace kiln::torch_integration::compiled
