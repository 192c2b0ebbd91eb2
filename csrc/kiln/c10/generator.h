// KilnGenerator: the per-device random number generator, counter-based
// (Philox4x32-10, base/philox.h) as CUDA's is.
//
// Its whole state is a seed and an offset (the next unused Philox block), so
// get_state()/set_state() save and restore exactly the stream of numbers to
// come. Random ops that run through the CPU fallback draw from a CPU generator
// seeded from this one (aten/cpu_fallback), which keeps torch.kiln.manual_seed
// in control of every random op on the device.
//
// Part of the c10 layer (above the torch line); aten/ random ops and the CPU
// fallback draw offsets from it, and ATen's PrivateUse1 hooks (hooks.h) hand
// it to torch.Generator.
//
// Thread-safety: no method locks. Like every PyTorch generator, callers hold
// the generator's mutex_ while using it: torch.Generator's Python methods
// do, and Kiln's random ops take it around current_seed() and
// reserve_blocks() (aten/compiled/random_ops.cc, aten/cpu_fallback.cc).
// Everything is synchronous and host-only: no device work.
//
// Ownership: generators are intrusive-pointer counted (at::Generator). The
// default generators, one per device, are made on the first
// default_generator() call and held by a function-local static until static
// destruction.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace kiln::torch_integration {

class KilnGenerator final : public c10::GeneratorImpl {
 public:
  explicit KilnGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  // Sets the seed and restarts the stream at offset 0.
  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override;  // reseeds from a non-deterministic source
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  // The state is a CPU uint8 tensor of 16 bytes: the seed, then the offset,
  // in host byte order. set_state() throws c10::Error for another dtype or
  // size; it copies the tensor's first 16 bytes of memory as they lie, so
  // the tensor must be contiguous and host-readable (as get_state() makes it).
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // Reserves `blocks` Philox blocks and returns the offset of the first.
  // The caller holds mutex_ (see the top); no overflow check.
  uint64_t reserve_blocks(uint64_t blocks);
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  KilnGenerator* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The default generator of `device` (current device when -1). The first call
// creates the runtime and one generator per device (thread-safe, once; a
// call that throws leaves the next one to try again). The reference stays
// valid until static destruction. Throws RuntimeError for a bad index.
const at::Generator& default_generator(c10::DeviceIndex device);
// A new generator of `device` (current device when -1), seeded with the
// default seed and owned by the caller. Throws RuntimeError for a bad index.
at::Generator new_generator(c10::DeviceIndex device);

}  // namespace kiln::torch_integration
