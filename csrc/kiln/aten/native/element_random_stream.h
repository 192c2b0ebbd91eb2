// Random numbers for the native sampling kernels (distributions.cc,
// multinomial.cc): a private Philox4x32-10 stream per output element, drawn
// from the kiln generator, so torch.manual_seed and get/set_rng_state replay
// them exactly, as they do the compiled random ops.
//
// Compiled random ops need a fixed number of words per element (the Philox
// counter is the element's index). Rejection samplers (gamma, Poisson,
// binomial) need an unbounded number, so each element here owns a whole
// counter range: counter = (element index mod 2^32, block number within the
// element, launch offset + element index / 2^32). A launch reserves
// launch_offset_blocks(numel) offsets from the generator under its mutex, as
// the compiled kernels reserve one, so no two launches, compiled or native,
// share a counter.
//
// Header-only; a stream is used by one thread (the one running the queued
// kernel). The numbers are not the CPU generator's: only their distribution
// is the same.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>

#include "kiln/base/philox.h"
#include "kiln/c10/generator.h"

namespace kiln::torch_integration::native {

// The seed and first offset a launch over `numel` elements draws from.
struct ElementRandomLaunch {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// Reserves the offsets for `numel` elements from `generator` (or the default
// generator of `device`): one per 2^32 elements, at least one.
inline ElementRandomLaunch reserve_element_random_launch(const std::optional<at::Generator>& generator,
                                                         const c10::Device& device, int64_t numel) {
  auto* kiln_generator =
      at::get_generator_or_default<KilnGenerator>(generator, default_generator(device.index()));
  std::lock_guard<std::mutex> lock(kiln_generator->mutex_);
  ElementRandomLaunch launch;
  launch.seed = kiln_generator->current_seed();
  const uint64_t blocks = numel <= 0 ? 1 : 1 + (static_cast<uint64_t>(numel) - 1) / (uint64_t{1} << 32);
  launch.offset = kiln_generator->reserve_blocks(blocks);
  return launch;
}

class ElementRandomStream {
 public:
  ElementRandomStream(const ElementRandomLaunch& launch, uint64_t element)
      : key_{static_cast<uint32_t>(launch.seed), static_cast<uint32_t>(launch.seed >> 32)},
        element_low_(static_cast<uint32_t>(element)),
        offset_(launch.offset + (element >> 32)) {}

  uint32_t next_word() {
    if (used_ == 4) {
      PhiloxCounter counter = {element_low_, block_++, static_cast<uint32_t>(offset_),
                               static_cast<uint32_t>(offset_ >> 32)};
      words_ = philox4x32_10(counter, key_);
      used_ = 0;
    }
    return words_[used_++];
  }

  // Uniform in [0, 1) with 53 random bits (two words), as ATen's
  // uniform_real_distribution<double>.
  double uniform() {
    const uint64_t high = next_word() & ((uint32_t{1} << 21) - 1);
    const uint64_t bits = (high << 32) | next_word();
    return static_cast<double>(bits) * 0x1p-53;
  }

  // Standard normal by Box-Muller; the second value of each pair is kept
  // for the next call.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));  // 1 - u is in (0, 1]
    const double angle = 2.0 * M_PI * uniform();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  PhiloxKey key_;
  uint32_t element_low_;
  uint64_t offset_;
  uint32_t block_ = 0;
  PhiloxCounter words_{};
  int used_ = 4;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace kiln::torch_integration::native
