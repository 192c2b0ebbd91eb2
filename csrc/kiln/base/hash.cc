#include "kiln/base/hash.h"

namespace kiln {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

// The 64-bit finaliser of MurmurHash3: every input bit affects every output bit.
uint64_t finalise(uint64_t value) {
  value ^= value >> 33;
  value *= 0xff51afd7ed558ccdULL;
  value ^= value >> 33;
  value *= 0xc4ceb9fe1a85ec53ULL;
  value ^= value >> 33;
  return value;
}

}  // namespace

uint64_t hash_64(std::string_view bytes, uint64_t seed) {
  uint64_t hash = kFnvOffset ^ finalise(seed + 0x9e3779b97f4a7c15ULL);
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= kFnvPrime;
  }
  return finalise(hash ^ bytes.size());
}

uint64_t hash_combine(uint64_t hash, uint64_t value) {
  return finalise(hash ^ (finalise(value) + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2)));
}

std::string digest_hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  uint64_t halves[2] = {hash_64(bytes, 1), hash_64(bytes, 2)};
  std::string hex;
  hex.reserve(32);
  for (uint64_t half : halves) {
    for (int shift = 60; shift >= 0; shift -= 4) hex.push_back(kDigits[(half >> shift) & 0xf]);
  }
  return hex;
}

}  // namespace kiln
