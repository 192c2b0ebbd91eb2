// Static memory plan: places every intermediate buffer of a compiled program
// at a fixed byte offset inside one arena, reusing memory between buffers
// whose lifetimes do not intersect. Below the torch line.
//
// The program is a sequence of steps (kernel launches, library calls). A
// buffer is live over the closed interval [first_step, last_step]: written
// first at first_step, read last at last_step. Two buffers whose intervals
// intersect (share at least one step) are live together and must not overlap
// in memory; two whose intervals are disjoint may share bytes. A buffer read
// at step s and another written first at step s are both live at s, so an
// output never aliases an input of the same step.
//
// Algorithm: greedy by size with best fit (the offset-calculation heuristic
// of Pisarchyk and Lee, "Efficient Memory Management for Deep Neural Net
// Inference", 2020, also used by TensorFlow Lite's arena planner). Buffers are
// placed one at a time, largest first (ties: earlier first_step, then lower
// index). For each buffer, the already placed buffers whose lifetimes
// intersect its own mark forbidden byte ranges; the gaps between them are
// candidates, and the buffer takes the smallest gap it fits in (ties: the
// lowest offset). If no gap between placed buffers fits, it goes right after
// the highest end among them (offset 0 when none is live with it).
// Why this one: the exact problem (dynamic storage allocation) is NP-hard;
// placing large buffers first keeps small ones from fragmenting the arena,
// and best fit keeps large gaps for later buffers. It is simple, needs no
// tuning, and the paper found it close to the lower bound (the largest sum of
// sizes live at one step) on common inference networks. Each buffer's end
// never exceeds the sum of the sizes placed before it plus its own, so the
// arena is never larger than naive_bytes. Cost: O(n log n) to sort plus O(n^2)
// to place n buffers, fine for the few thousand buffers of a graph, paid once
// per compile.
//
// Sizes are rounded up to kPlanAlignment before placing, so every offset and
// the arena size are multiples of it. Zero-byte buffers get offset 0 and take
// no space (they alias nothing that is ever read).
//
// Errors: nothing here throws or aborts. Bad requests (last_step before
// first_step, sizes whose aligned total overflows 64 bits) are named by
// check_buffer_requests(); plan_memory() then returns a plan with no offsets,
// which check_memory_plan() rejects with the same message.
//
// Thread-safety: pure functions of their arguments; safe to call from any
// thread. Deterministic: the same requests always give the same plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::compiler {

struct BufferRequest {
  uint64_t bytes = 0;      // size of the buffer
  int32_t first_step = 0;  // the step that writes it first
  int32_t last_step = 0;   // the last step that reads it (>= first_step)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per request, byte offset into one arena
  uint64_t arena_bytes = 0;       // total arena size
  uint64_t naive_bytes = 0;       // sum of all (aligned) sizes, without reuse, for statistics
};

// Alignment of every offset and of the arena size, in bytes: a cache line,
// and enough for any vector load the generated kernels issue.
inline constexpr uint64_t kPlanAlignment = 64;

// Returns `bytes` rounded up to a multiple of kPlanAlignment. The caller makes
// sure it does not overflow (check_buffer_requests does).
inline constexpr uint64_t align_plan_bytes(uint64_t bytes) {
  return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

// Validates requests: returns an empty string, or a description of the first
// bad request, e.g. "memory plan: request 3 has last_step 2 before first_step 5".
std::string check_buffer_requests(const std::vector<BufferRequest>& requests);

// Places every buffer in one arena so that two buffers whose [first_step, last_step]
// intervals intersect never overlap in memory; offsets are multiples of kPlanAlignment;
// zero-byte requests get offset 0 and take no space. Deterministic (same input -> same plan).
// If check_buffer_requests(requests) is not empty, returns an empty plan (no offsets).
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests);

// Checks a plan: every invariant above (requests valid, one offset per request,
// offsets aligned, zero-byte buffers at 0, every buffer inside the arena, the
// arena a multiple of kPlanAlignment, naive_bytes the sum of aligned sizes, and
// no two buffers live at one step overlapping in memory); returns an empty string
// or a description of the first violation. O(n log n).
std::string check_memory_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace kiln::compiler
