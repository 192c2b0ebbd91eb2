// cumsum and cumprod as log-step scans of pointwise kernels (see scan_ops.h).
#include "kiln/aten/compiled/reduction/scan_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/cumprod_meta.h>
#include <ATen/ops/cumsum_meta.h>
#include <ATen/ops/empty.h>

#include <initializer_list>
#include <string>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/reduction.h"
#include "kiln/aten/compiled/launch/reduction_support.h"
#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;

enum class ScanKind { kSum, kProduct };

// ATen's CPU accumulate type (acc_type<T, /*is_cuda=*/false>) of a result dtype.
DType accumulate_dtype(DType result) {
  switch (result) {
    case DType::kFloat16:
    case DType::kBFloat16: return DType::kFloat32;
    case DType::kFloat32:
    case DType::kFloat64: return DType::kFloat64;
    default: return DType::kInt64;
  }
}

at::ScalarType scalar_type_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return at::kFloat;
    case DType::kFloat64: return at::kDouble;
    default: return at::kLong;
  }
}

// One step: out = a (+ or *) b, or out = a when `b` is undefined. The first
// step reads the op's input, which is converted to the result dtype first.
void scan_step(const char* op_name, ScanKind kind, DType result, DType accumulate, bool first,
               const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  at::TensorIteratorConfig config;
  config.add_output(out).add_const_input(a);
  if (b.defined()) config.add_const_input(b);
  at::TensorIterator iter =
      config.check_all_same_dtype(false).resize_outputs(false).build();
  std::string key = !b.defined() ? "scan_copy" : kind == ScanKind::kSum ? "scan_sum" : "scan_product";
  if (first) key = key + "/from_" + ir::dtype_name(result);
  launch_pointwise(op_name, key, iter, {},
                   [kind, result, accumulate, first](PointwiseContext& context) -> std::vector<ir::ValueId> {
                     auto value = [&](int index) {
                       ir::ValueId x = context.inputs[index];
                       if (first) x = context.builder.cast(x, result);
                       return context.builder.cast(x, accumulate);
                     };
                     if (context.inputs.size() == 1) return {value(0)};
                     ir::OpCode op = kind == ScanKind::kSum ? ir::OpCode::kAdd : ir::OpCode::kMultiply;
                     return {context.binary(op, value(0), value(1))};
                   });
}

// Elements per block of the blocked scan.
constexpr int64_t kBlock = 16;

struct ScanTypes {
  ScanKind kind;
  DType result;      // what the op's input is converted to first
  DType accumulate;  // what the scan computes and keeps partial results in
};

c10::Scalar identity(ScanKind kind) { return kind == ScanKind::kSum ? 0 : 1; }

c10::DimVector with_last(c10::IntArrayRef leading, std::initializer_list<int64_t> last) {
  c10::DimVector shape(leading.begin(), leading.end());
  shape.insert(shape.end(), last.begin(), last.end());
  return shape;
}

// The first `count` * kBlock elements of the last dim of `tensor` viewed as
// [..., count, kBlock].
at::Tensor whole_blocks(const at::Tensor& tensor, int64_t count) {
  const int64_t rank = tensor.dim();
  c10::DimVector sizes(tensor.sizes().begin(), tensor.sizes().end() - 1);
  c10::DimVector strides(tensor.strides().begin(), tensor.strides().end() - 1);
  const int64_t stride = tensor.stride(rank - 1);
  sizes.append({count, kBlock});
  strides.append({stride * kBlock, stride});
  return tensor.as_strided(sizes, strides, tensor.storage_offset());
}

// The inclusive scan of `source` along its last dim (length >= 2) into
// `target` (same shape), in blocks of kBlock:
//   1. each block is copied into a row of 2 * kBlock - 1 slots after
//      kBlock - 1 slots of the identity;
//   2. one reduction folds, for every position t of a block, the kBlock slots
//      from t on: the identities then elements 0..t of the block, i.e. the
//      block's own inclusive scan;
//   3. the block totals are scanned the same way (recursively), giving each
//      block the fold of all blocks before it;
//   4. one pointwise step combines the two.
// Work O(numel * kBlock) in log_kBlock(length) levels, every kernel parallel.
void scan_last_dim(const char* op_name, const ScanTypes& types, bool first,
                   const at::Tensor& source, const at::Tensor& target) {
  const int64_t rank = source.dim();
  const int64_t length = source.size(rank - 1);
  const int64_t blocks = (length + kBlock - 1) / kBlock;
  const int64_t whole = length / kBlock;
  const int64_t rest = length - whole * kBlock;
  c10::IntArrayRef leading = source.sizes().slice(0, rank - 1);
  const at::TensorOptions options = source.options().dtype(scalar_type_of(types.accumulate));

  // 1. The padded blocks, stored slot-major (blocks fastest) so that the
  // reduction below vectorises across neighbouring blocks (launch_reduction's
  // column kernel) rather than decomposing every output position.
  at::Tensor padded =
      at::empty(with_last(leading, {2 * kBlock - 1, blocks}), options).transpose(-1, -2);
  padded.fill_(identity(types.kind));
  at::Tensor slots = padded.narrow(-1, kBlock - 1, kBlock);
  if (whole > 0) {
    scan_step(op_name, types.kind, types.result, types.accumulate, first, slots.narrow(-2, 0, whole),
              whole_blocks(source, whole), at::Tensor());
  }
  if (rest > 0) {
    scan_step(op_name, types.kind, types.result, types.accumulate, first,
              slots.select(-2, blocks - 1).narrow(-1, 0, rest), source.narrow(-1, whole * kBlock, rest),
              at::Tensor());
  }

  // 2. The scans within blocks: windows of kBlock slots, one per position.
  c10::DimVector window_sizes = with_last(leading, {blocks, kBlock, kBlock});
  c10::DimVector window_strides(padded.strides().begin(), padded.strides().end() - 2);
  window_strides.append({padded.stride(-2), padded.stride(-1), padded.stride(-1)});
  at::Tensor windows = padded.as_strided(window_sizes, window_strides, padded.storage_offset());
  at::Tensor local = at::empty(with_last(leading, {kBlock, blocks}), options).transpose(-1, -2);
  ReductionSpec spec;
  spec.op = types.kind == ScanKind::kSum ? ir::ReduceOp::kSum : ir::ReduceOp::kProduct;
  spec.element = [](ReductionContext& context) { return context.inputs[0]; };
  const int64_t reduced_dim = windows.dim() - 1;
  launch_reduction(op_name, types.kind == ScanKind::kSum ? "scan_blocks_sum" : "scan_blocks_product",
                   {windows}, {local.unsqueeze(-1)}, {reduced_dim}, {}, spec);
  if (blocks == 1) {
    scan_step(op_name, types.kind, types.result, types.accumulate, false, target,
              local.select(-2, 0).narrow(-1, 0, length), at::Tensor());
    return;
  }

  // 3. What precedes each block: the identity, then the scan of the totals.
  at::Tensor preceding = at::empty(with_last(leading, {blocks}), options);
  preceding.narrow(-1, 0, 1).fill_(identity(types.kind));
  at::Tensor totals = local.select(-1, kBlock - 1).narrow(-1, 0, blocks - 1);
  ScanTypes inner{types.kind, types.accumulate, types.accumulate};
  scan_last_dim(op_name, inner, false, totals, preceding.narrow(-1, 1, blocks - 1));

  // 4. Combine.
  if (whole > 0) {
    at::Tensor before = preceding.narrow(-1, 0, whole).unsqueeze(-1).expand(with_last(leading, {whole, kBlock}));
    scan_step(op_name, types.kind, types.result, types.accumulate, false, whole_blocks(target, whole),
              local.narrow(-2, 0, whole), before);
  }
  if (rest > 0) {
    at::Tensor before = preceding.narrow(-1, blocks - 1, 1).expand(with_last(leading, {rest}));
    scan_step(op_name, types.kind, types.result, types.accumulate, false,
              target.narrow(-1, whole * kBlock, rest), local.select(-2, blocks - 1).narrow(-1, 0, rest),
              before);
  }
}

// The inclusive scan of `self` along `dim` into `result` (sized).
void scan_into(const char* op_name, ScanKind kind, const at::Tensor& self, int64_t dim,
               const at::Tensor& result) {
  if (result.numel() == 0) return;
  DType result_dtype = require_ir_dtype(result.scalar_type(), op_name);
  if (self.dim() == 0) {
    convert_into(op_name, result, self);
    return;
  }
  // The CPU kernel dispatches on the result's dtype, which excludes bool (an
  // out= or dtype= of bool; found by tests/python/op_fuzz.py).
  TORCH_CHECK_NOT_IMPLEMENTED(result.scalar_type() != at::kBool, "\"",
                              kind == ScanKind::kSum ? "cumsum" : "cumprod",
                              "_out_cpu\" not implemented for 'Bool'");
  if (self.size(at::maybe_wrap_dim(dim, self.dim())) == 1) {
    convert_into(op_name, result, self);
    return;
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  ScanTypes types{kind, result_dtype, accumulate_dtype(result_dtype)};
  // An in-place scan reads `self` only in step 1 and writes it only in step
  // 4 (or the final copy), after everything read from it was copied.
  scan_last_dim(op_name, types, true, self.movedim(dim, -1), result.movedim(dim, -1));
}

template <typename Meta>
at::Tensor scan(const char* op_name, ScanKind kind, const at::Tensor& self, int64_t dim,
                std::optional<at::ScalarType> dtype) {
  return structured<Meta>(nullptr, [&](const at::Tensor& result) {
    scan_into(op_name, kind, self, dim, result);
  }, self, dim, dtype);
}

template <typename Meta>
at::Tensor& scan_out(const char* op_name, ScanKind kind, const at::Tensor& self, int64_t dim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  structured<Meta>(&out, [&](const at::Tensor& result) {
    scan_into(op_name, kind, self, dim, result);
  }, self, dim, dtype);
  return out;
}

template <typename Meta>
at::Tensor& scan_in_place(const char* op_name, ScanKind kind, at::Tensor& self, int64_t dim,
                          std::optional<at::ScalarType> dtype) {
  // In place: structured() (structured_run.h) has no in-place form.
  StructuredOutputs<Meta> meta({self}, /*in_place=*/true);
  meta.meta(self, dim, dtype);
  scan_into(op_name, kind, self, dim, self);
  return self;
}

}  // namespace

at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan<at::meta::structured_cumsum>("aten::cumsum", ScanKind::kSum, self, dim, dtype);
}

at::Tensor& cumsum_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                       at::Tensor& out) {
  return scan_out<at::meta::structured_cumsum>("aten::cumsum.out", ScanKind::kSum, self, dim,
                                               dtype, out);
}

at::Tensor& cumsum_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan_in_place<at::meta::structured_cumsum>("aten::cumsum_", ScanKind::kSum, self, dim,
                                                    dtype);
}

at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan<at::meta::structured_cumprod>("aten::cumprod", ScanKind::kProduct, self, dim, dtype);
}

at::Tensor& cumprod_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                        at::Tensor& out) {
  return scan_out<at::meta::structured_cumprod>("aten::cumprod.out", ScanKind::kProduct, self,
                                                dim, dtype, out);
}

at::Tensor& cumprod_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan_in_place<at::meta::structured_cumprod>("aten::cumprod_", ScanKind::kProduct, self,
                                                     dim, dtype);
}

}  // namespace kiln::torch_integration::compiled
