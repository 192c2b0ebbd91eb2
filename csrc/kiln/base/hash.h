// Stable hashing: the same bytes give the same hash on every run, machine and
// build, so hashes can name files in the on-disk kernel cache.
//
// Not cryptographic. hash_64 is FNV-1a followed by a 64-bit finaliser (from
// MurmurHash3), which spreads FNV's weak low bits; digest_hex combines two
// independently seeded hashes into 128 bits, enough that two different kernel
// sources never share a cache file in practice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kiln {

uint64_t hash_64(std::string_view bytes, uint64_t seed = 0);

// Mixes `value` into `hash`; order matters. For building a hash from fields.
uint64_t hash_combine(uint64_t hash, uint64_t value);

// 32 lowercase hex digits: a 128-bit digest of `bytes`.
std::string digest_hex(std::string_view bytes);

// An unordered_map keyed by std::string that a std::string_view looks up
// without making a string (heterogeneous lookup): for the kernel signatures
// the per-op hot path builds as views. std::hash, not the stable hash above:
// these maps live in memory only.
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
template <typename Value>
using StringMap = std::unordered_map<std::string, Value, TransparentStringHash, std::equal_to<>>;

}  // namespace kiln
