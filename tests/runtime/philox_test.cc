#include "kiln/base/philox.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <tuple>

namespace kiln {
namespace {

// Known-answer vectors from Random123 (kat_vectors, philox4x32 with 10 rounds).
TEST(Philox, KnownAnswerZeroCounterZeroKey) {
  PhiloxCounter out = philox4x32_10({0u, 0u, 0u, 0u}, {0u, 0u});
  PhiloxCounter expected = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  EXPECT_EQ(out, expected);
}

TEST(Philox, KnownAnswerAllOnes) {
  PhiloxCounter out = philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                    {0xffffffffu, 0xffffffffu});
  PhiloxCounter expected = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu};
  EXPECT_EQ(out, expected);
}

TEST(Philox, KnownAnswerPiDigits) {
  PhiloxCounter out = philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                                    {0xa4093822u, 0x299f31d0u});
  PhiloxCounter expected = {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u};
  EXPECT_EQ(out, expected);
}

TEST(Philox, BlockIsThePhiloxOfSeedAndOffset) {
  // philox_block packs the offset into counter words 0 and 1 (low word first)
  // and the seed into the key (low word first).
  uint64_t seed = 0x299f31d0a4093822ull;
  uint64_t offset = 0x85a308d3243f6a88ull;
  PhiloxCounter direct = philox4x32_10({0x243f6a88u, 0x85a308d3u, 0u, 0u},
                                       {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(philox_block(seed, offset), direct);
  EXPECT_EQ(philox_block(0, 0), (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu,
                                               0x9b00dbd8u}));
}

TEST(Philox, BlockIsAPureFunction) {
  EXPECT_EQ(philox_block(42, 7), philox_block(42, 7));
  EXPECT_EQ(philox_block(UINT64_MAX, UINT64_MAX), philox_block(UINT64_MAX, UINT64_MAX));
}

TEST(Philox, BlocksDifferAcrossOffsetsAndSeeds) {
  std::set<PhiloxCounter> seen;
  int produced = 0;
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{42}, uint64_t{1} << 32,
                        uint64_t{0xdeadbeefcafef00d}}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{1000},
                            uint64_t{1} << 32, (uint64_t{1} << 32) + 1}) {
      seen.insert(philox_block(seed, offset));
      ++produced;
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), produced);
  // High halves matter: seeds and offsets that differ only above bit 31.
  EXPECT_NE(philox_block(5, 0), philox_block(5 + (uint64_t{1} << 32), 0));
  EXPECT_NE(philox_block(0, 5), philox_block(0, 5 + (uint64_t{1} << 32)));
}

TEST(Philox, OutputBitsAreRoughlyBalanced) {
  // A weak sanity check on 4096 blocks: about half of all bits are set.
  int64_t ones = 0;
  constexpr int kBlocks = 4096;
  for (uint64_t offset = 0; offset < kBlocks; ++offset) {
    for (uint32_t word : philox_block(1234, offset)) ones += __builtin_popcount(word);
  }
  double fraction = static_cast<double>(ones) / (kBlocks * 128.0);
  EXPECT_NEAR(fraction, 0.5, 0.01);
}

}  // namespace
}  // namespace kiln
