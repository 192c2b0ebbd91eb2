// KilnGenerator: the per-device random number generator, counter-based
// (Philox4x32-10, base/philox.h) as CUDA's is.
//
// Its whole state is a seed and an offset (the next unused Philox block), so
// get_state()/set_state() save and restore exactly the stream of numbers to
// come. Random ops that run through the CPU fallback draw from a CPU generator
// seeded from this one (aten/cpu_fallback), which keeps torch.kiln.manual_seed
// in control of every random op on the device.
//
// Thread-safety: like every PyTorch generator, callers hold mutex_ while using it.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace kiln::torch_integration {

class KilnGenerator final : public c10::GeneratorImpl {
 public:
  explicit KilnGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override;  // reseeds from a non-deterministic source
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // Reserves `blocks` Philox blocks and returns the offset of the first.
  uint64_t reserve_blocks(uint64_t blocks);
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  KilnGenerator* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The default generator of `device` (current device when -1).
const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator new_generator(c10::DeviceIndex device);

}  // namespace kiln::torch_integration
