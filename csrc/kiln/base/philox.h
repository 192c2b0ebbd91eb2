// Philox4x32-10, the counter-based random number generator of Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3" (SC'11).
//
// A counter-based generator has no sequential state: output block n is a pure
// function of (key, counter = n). A device generator therefore needs only a
// seed (the key) and an offset (the next unused counter), which is what
// torch.kiln.get_rng_state() saves. Header-only and thread-safe.
#pragma once

#include <array>
#include <cstdint>

namespace kiln {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

namespace philox_detail {
constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void multiply(uint32_t a, uint32_t b, uint32_t& high, uint32_t& low) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  high = static_cast<uint32_t>(product >> 32);
  low = static_cast<uint32_t>(product);
}

inline PhiloxCounter round(const PhiloxCounter& c, const PhiloxKey& k) {
  uint32_t high0, low0, high1, low1;
  multiply(kMultiplier0, c[0], high0, low0);
  multiply(kMultiplier1, c[2], high1, low1);
  return {high1 ^ c[1] ^ k[0], low1, high0 ^ c[3] ^ k[1], low0};
}
}  // namespace philox_detail

// Ten rounds of Philox4x32 over `counter` with `key`.
inline PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int i = 0; i < 10; ++i) {
    if (i > 0) {
      key[0] += philox_detail::kWeyl0;
      key[1] += philox_detail::kWeyl1;
    }
    counter = philox_detail::round(counter, key);
  }
  return counter;
}

// Four 32-bit random words for block `offset` of the stream keyed by `seed`.
inline PhiloxCounter philox_block(uint64_t seed, uint64_t offset) {
  PhiloxCounter counter = {static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
                           0u, 0u};
  PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return philox4x32_10(counter, key);
}

}  // namespace kiln
