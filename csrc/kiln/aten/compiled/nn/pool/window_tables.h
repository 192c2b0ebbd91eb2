// The 3-D average poolings (avg_pool3d.cc, adaptive_avg_pool3d.cc) over
// windows the host lists per output coordinate.
//
// A window along each dim depends only on the output coordinate along it, so
// each dim has two small int64 tables: the element offset of each tap of each
// output's window (entry o * taps + t; -1 for a slot that is no tap) and one
// entry per output (the op's share of the divisor, or the window's length).
// The kernel body reads the offsets of its window from the tables, so a
// window is unrolled once for every shape and padding.
//
// Operand layout, shared by both ops' kernels: input 0 is the pooled tensor
// (forward) or grad_output (backward); inputs 1 + 2k and 2 + 2k are dim k's
// offset and per-output tables (k = 0, 1, 2: depth, height, width). The
// forward iterates the output, (N, C, D, H, W); the backward iterates
// grad_output and, innermost, each window's taps, (N, C, D, H, W, tD, tH, tW),
// and scatters into grad_input's planes on one thread, in that order: the
// order the CPU adds in.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "kiln/aten/compiled/launch/indexed_kernel.h"

namespace kiln::torch_integration::compiled {

// A 4-D (C, D, H, W) tensor as 5-D with one batch; a 5-D one as it is.
at::Tensor batched_5d(const at::Tensor& tensor);

// Dim k's tables (the header comment), on the host or the device.
struct DimTables {
  at::Tensor offsets;     // output o's taps: entry o * taps + t
  at::Tensor per_output;  // entry o
};

// Launches a forward `spec` over batched `output` (5-D), reading batched
// `input` and each dim's `tables` of `taps` tap slots per output.
void launch_window_forward(const char* op_name, const IndexedKernelSpec& spec, const at::Tensor& input,
                           const at::Tensor& output, const std::array<DimTables, 3>& tables,
                           const std::array<int64_t, 3>& taps, c10::ArrayRef<c10::Scalar> scalars = {});

// In a forward body: every tap slot of the current output's window, read
// from the offset tables; `valid` is false for a slot that is no tap.
struct WindowTaps {
  std::array<std::vector<ir::ValueId>, 3> offset, valid;
};
WindowTaps load_window_taps(IndexedKernelContext& context, const std::array<int64_t, 3>& taps);

// Calls visit(ok, value) for each tap slot in (d, h, w) order, the CPU's:
// `ok` when it is a tap in all three dims, `value` input 0 there (its first
// element when not ok, so the load stays inside the plane).
template <typename Visit>
void for_each_window_tap(IndexedKernelContext& context, const WindowTaps& window, Visit&& visit) {
  ir::Builder& builder = context.builder;
  auto i64 = [&](int64_t value) { return builder.constant(static_cast<double>(value), ir::DType::kInt64); };
  const auto& offset = window.offset;
  const auto& valid = window.valid;
  for (size_t d = 0; d < valid[0].size(); ++d) {
    for (size_t h = 0; h < valid[1].size(); ++h) {
      for (size_t w = 0; w < valid[2].size(); ++w) {
        ir::ValueId ok = builder.binary(ir::OpCode::kLogicalAnd,
                                        builder.binary(ir::OpCode::kLogicalAnd, valid[0][d], valid[1][h]),
                                        valid[2][w]);
        ir::ValueId at = builder.select(
            ok,
            builder.binary(ir::OpCode::kAdd, builder.binary(ir::OpCode::kAdd, offset[0][d], offset[1][h]),
                           offset[2][w]),
            i64(0));
        visit(ok, builder.indexed_load(0, at));
      }
    }
  }
}

// In a backward body: the current tap slot, from the offset tables at the
// current position: whether it is a tap in all three dims and its element
// offset in the plane.
struct WindowTap {
  ir::ValueId ok, offset;
  ir::ValueId zero;  // int64 0, the offset of a slot that is no tap
};
WindowTap load_window_tap(IndexedKernelContext& context);

// Adds `delta` into output 0's plane at `tap`. A slot that is no tap adds a
// zero at the plane's first element: a kernel cannot skip a store.
void scatter_add_at_tap(IndexedKernelContext& context, const WindowTap& tap, ir::ValueId delta);

// Launches a backward `spec` over batched `gradient` (5-D) and `taps` tap
// slots per dim, reading each dim's `tables` and scattering into the planes
// of batched `target`.
void launch_window_backward(const char* op_name, const IndexedKernelSpec& spec,
                            const at::Tensor& gradient, const at::Tensor& target,
                            const std::array<DimTables, 3>& tables, const std::array<int64_t, 3>& taps,
                            c10::ArrayRef<c10::Scalar> scalars = {});

}  // namespace kiln::torch_integration::compiled
