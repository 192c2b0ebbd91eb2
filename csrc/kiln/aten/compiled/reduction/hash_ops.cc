#include "kiln/aten/compiled/reduction/hash_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/bitwise_xor.h>
#include <ATen/ops/hash_tensor_meta.h>

#include <vector>

#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

void hash_into(const at::Tensor& self, at::IntArrayRef dim, int64_t mode, at::Tensor& out) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  if (out.numel() == 0) return;
  // The 64-bit patterns, as int64 (the same bits as the uint64 result).
  at::Tensor bits = at::isFloatingType(self.scalar_type()) ? self.to(at::kDouble).view(at::kLong)
                                                           : self.to(at::kLong);
  if (bits.dim() == 0) bits = bits.reshape({1});
  // Kept dims first (in order), reduced dims last, flattened into one.
  std::vector<bool> reduced(bits.dim(), dim.empty());
  for (int64_t entry : dim) reduced[at::maybe_wrap_dim(entry, self.dim())] = true;
  std::vector<int64_t> order, kept_sizes;
  int64_t count = 1;
  for (int64_t index = 0; index < bits.dim(); ++index) {
    if (!reduced[index]) {
      order.push_back(index);
      kept_sizes.push_back(bits.size(index));
    }
  }
  for (int64_t index = 0; index < bits.dim(); ++index) {
    if (reduced[index]) {
      order.push_back(index);
      count *= bits.size(index);
    }
  }
  kept_sizes.push_back(count);
  bits = bits.permute(order).reshape(kept_sizes);
  while (count > 1) {
    const int64_t half = count / 2;
    at::Tensor folded = at::bitwise_xor(bits.narrow(-1, 0, half), bits.narrow(-1, count - half, half));
    // An odd count leaves the middle element: it joins the first.
    if (count % 2 == 1) folded.narrow(-1, 0, 1).bitwise_xor_(bits.narrow(-1, half, 1));
    bits = folded;
    count = half;
  }
  out.view(at::kLong).copy_(bits.reshape(out.sizes()));
}

}  // namespace

at::Tensor hash_tensor(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  return structured<at::meta::structured_hash_tensor>(nullptr, [&](at::Tensor& result) {
    hash_into(self, dim, mode, result);
  }, self, dim, keepdim, mode);
}

at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                            int64_t mode, at::Tensor& out) {
  structured<at::meta::structured_hash_tensor>(&out, [&](at::Tensor& result) {
    hash_into(self, dim, mode, result);
  }, self, dim, keepdim, mode);
  return out;
}

}  // namespace kiln::torch_integration::compiled
