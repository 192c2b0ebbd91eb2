// Separable gathers and their scatter-adds: the kernels behind padding
// (reflection, replication) and upsampling (nearest, nearest-exact, linear,
// bilinear, trilinear, bicubic), forward and backward.
//
// Each of these ops reads, for every output element, a few input elements
// along each spatial dim independently: a list of taps (source index and, for
// interpolation, a weight) that depends only on the output coordinate along
// that dim. As ATen's CPU kernels do, the host computes those per-dim tables
// (a few entries per output row or column, with exactly the CPU's index and
// weight arithmetic) and the kernel combines them: the forward is
//     out[n, c, y, x] = sum_i sum_j w_y[i] * w_x[j] * in[n, c, idx_y[i], idx_x[j]]
// summed in ATen's order (outer dim's taps outermost; each partial sum
// multiplied by its weight, then added), and the backward adds each grad_output
// element times the weight product at every tap's input element, one
// position (and tap) at a time in row-major order, as the CPU does.
//
// Tables are device tensors the kernel reads through strides: the table of
// spatial dim d has stride `taps` along d and 0 elsewhere, so the compiled
// kernel depends only on dtypes, rank and tap counts, never on sizes.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kiln::torch_integration::compiled {

struct SpatialAxis {
  int64_t dim = 0;   // the tensor dim it maps (the same in input and output)
  int64_t taps = 1;  // per output coordinate
  // output_size * taps source indices along `dim`, each in [0, input size).
  std::vector<int64_t> indices;
  // output_size * taps weights, or empty for a plain gather (taps == 1).
  std::vector<double> weights;
};

// output = the separable gather of `input` (both the caller's, same rank, equal
// sizes outside the axes' dims). Weighted axes sum in `input`'s compute dtype
// with weights rounded to `weight_dtype` first (the CPU stores them so).
void spatial_gather(const char* op_name, const at::Tensor& input, const at::Tensor& output,
                    const std::vector<SpatialAxis>& axes, at::ScalarType weight_dtype);

// grad_input (zeroed here) += the transpose of that gather applied to
// grad_output. `float_buffer`: half types accumulate in a float32 buffer and
// round once at the end (the CPU's upsampling backward), else in place.
void spatial_scatter_add(const char* op_name, const at::Tensor& grad_output,
                         const at::Tensor& grad_input, const std::vector<SpatialAxis>& axes,
                         at::ScalarType weight_dtype, bool float_buffer);

}  // namespace kiln::torch_integration::compiled
