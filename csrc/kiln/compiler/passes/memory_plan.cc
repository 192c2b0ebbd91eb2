#include "kiln/compiler/passes/memory_plan.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <utility>

namespace kiln::compiler {
namespace {

constexpr uint64_t kMaxBytes = std::numeric_limits<uint64_t>::max();

std::string prefix() { return "memory plan: "; }

bool lifetimes_intersect(const BufferRequest& a, const BufferRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

// "[64, 192)", for messages.
std::string byte_range(uint64_t offset, uint64_t bytes) {
  return "[" + std::to_string(offset) + ", " + std::to_string(offset + bytes) + ")";
}

// One buffer already in the arena, as the byte range its aligned size takes.
struct PlacedBuffer {
  uint64_t offset = 0;
  uint64_t end = 0;
  size_t index = 0;
};

// The best-fit offset for `request` (aligned size `bytes`) given the buffers
// placed so far, sorted by offset. Buffers not live with `request` do not
// constrain it, so they are skipped. The gaps are walked with a running end,
// not pairwise, because two constraining buffers may themselves overlap in
// memory (they need not be live together).
uint64_t best_fit_offset(const std::vector<BufferRequest>& requests,
                         const std::vector<PlacedBuffer>& placed_by_offset,
                         const BufferRequest& request, uint64_t bytes) {
  uint64_t cursor = 0;  // end of the forbidden bytes seen so far
  uint64_t best_offset = 0;
  uint64_t best_gap = kMaxBytes;
  bool found = false;
  for (const PlacedBuffer& placed : placed_by_offset) {
    if (!lifetimes_intersect(requests[placed.index], request)) continue;
    if (placed.offset > cursor) {
      uint64_t gap = placed.offset - cursor;
      // Strictly smaller only: on a tie the lower offset, seen first, stays.
      if (gap >= bytes && gap < best_gap) {
        best_gap = gap;
        best_offset = cursor;
        found = true;
      }
    }
    cursor = std::max(cursor, placed.end);
  }
  return found ? best_offset : cursor;
}

// Requests with bytes > 0, largest first: big buffers laid down first leave
// gaps that smaller ones fill, while the reverse order would scatter small
// buffers and strand space beneath big ones. Ties keep the plan deterministic.
std::vector<size_t> placement_order(const std::vector<BufferRequest>& requests) {
  std::vector<size_t> order;
  for (size_t index = 0; index < requests.size(); ++index) {
    if (requests[index].bytes > 0) order.push_back(index);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const BufferRequest& left = requests[a];
    const BufferRequest& right = requests[b];
    if (left.bytes != right.bytes) return left.bytes > right.bytes;
    if (left.first_step != right.first_step) return left.first_step < right.first_step;
    return a < b;
  });
  return order;
}

// The first pair of buffers live at one step whose bytes overlap, found by a
// sweep over steps: the buffers live at a step never overlap one another if
// the plan is right, so each newcomer need only be compared with its two
// neighbours by offset among those still live.
std::string find_overlap(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  std::vector<size_t> by_start;
  for (size_t index = 0; index < requests.size(); ++index) {
    if (requests[index].bytes > 0) by_start.push_back(index);
  }
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    return requests[a].first_step < requests[b].first_step;
  });
  using Ending = std::pair<int32_t, size_t>;  // (last_step, index), earliest end on top
  std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>> ending;
  std::map<uint64_t, size_t> live_by_offset;
  auto overlap_message = [&](size_t a, size_t b) {
    int32_t step = std::max(requests[a].first_step, requests[b].first_step);
    return prefix() + "requests " + std::to_string(a) + " and " + std::to_string(b) +
           " are both live at step " + std::to_string(step) + " but overlap in memory (" +
           byte_range(plan.offsets[a], requests[a].bytes) + " and " +
           byte_range(plan.offsets[b], requests[b].bytes) + ")";
  };
  for (size_t index : by_start) {
    const BufferRequest& request = requests[index];
    while (!ending.empty() && ending.top().first < request.first_step) {
      live_by_offset.erase(plan.offsets[ending.top().second]);
      ending.pop();
    }
    uint64_t offset = plan.offsets[index];
    auto above = live_by_offset.lower_bound(offset);
    if (above != live_by_offset.end() && above->first < offset + request.bytes) {
      return overlap_message(above->second, index);
    }
    if (above != live_by_offset.begin()) {
      auto below = std::prev(above);
      if (below->first + requests[below->second].bytes > offset) {
        return overlap_message(below->second, index);
      }
    }
    live_by_offset.emplace(offset, index);
    ending.emplace(request.last_step, index);
  }
  return "";
}

}  // namespace

std::string check_buffer_requests(const std::vector<BufferRequest>& requests) {
  uint64_t total = 0;
  for (size_t index = 0; index < requests.size(); ++index) {
    const BufferRequest& request = requests[index];
    std::string name = prefix() + "request " + std::to_string(index);
    if (request.last_step < request.first_step) {
      return name + " has last_step " + std::to_string(request.last_step) +
             " before first_step " + std::to_string(request.first_step);
    }
    if (request.bytes > kMaxBytes - (kPlanAlignment - 1)) {
      return name + " has " + std::to_string(request.bytes) +
             " bytes, too many to align to " + std::to_string(kPlanAlignment);
    }
    uint64_t aligned = align_plan_bytes(request.bytes);
    if (total > kMaxBytes - aligned) {
      return name + " makes the total size of all requests overflow 64 bits";
    }
    total += aligned;
  }
  return "";
}

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  // Documented contract: bad requests give an empty plan, which
  // check_memory_plan rejects with the reason; nothing below the torch line throws.
  if (!check_buffer_requests(requests).empty()) return plan;
  plan.offsets.assign(requests.size(), 0);
  for (const BufferRequest& request : requests) plan.naive_bytes += align_plan_bytes(request.bytes);

  std::vector<PlacedBuffer> placed_by_offset;  // kept sorted by offset for the gap walk
  for (size_t index : placement_order(requests)) {
    const BufferRequest& request = requests[index];
    uint64_t bytes = align_plan_bytes(request.bytes);
    uint64_t offset = best_fit_offset(requests, placed_by_offset, request, bytes);
    PlacedBuffer placed{offset, offset + bytes, index};
    auto position = std::upper_bound(
        placed_by_offset.begin(), placed_by_offset.end(), offset,
        [](uint64_t value, const PlacedBuffer& other) { return value < other.offset; });
    placed_by_offset.insert(position, placed);
    plan.offsets[index] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, placed.end);
  }
  return plan;
}

std::string check_memory_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  std::string bad_request = check_buffer_requests(requests);
  if (!bad_request.empty()) return bad_request;
  if (plan.offsets.size() != requests.size()) {
    return prefix() + std::to_string(plan.offsets.size()) + " offsets for " +
           std::to_string(requests.size()) + " requests";
  }
  if (plan.arena_bytes % kPlanAlignment != 0) {
    return prefix() + "arena of " + std::to_string(plan.arena_bytes) +
           " bytes is not a multiple of " + std::to_string(kPlanAlignment);
  }
  uint64_t naive_bytes = 0;
  for (const BufferRequest& request : requests) naive_bytes += align_plan_bytes(request.bytes);
  if (plan.naive_bytes != naive_bytes) {
    return prefix() + "naive_bytes is " + std::to_string(plan.naive_bytes) +
           " but the aligned sizes sum to " + std::to_string(naive_bytes);
  }
  for (size_t index = 0; index < requests.size(); ++index) {
    uint64_t offset = plan.offsets[index];
    uint64_t bytes = requests[index].bytes;
    std::string name = prefix() + "request " + std::to_string(index);
    if (offset % kPlanAlignment != 0) {
      return name + " has offset " + std::to_string(offset) + ", not a multiple of " +
             std::to_string(kPlanAlignment);
    }
    if (bytes == 0 && offset != 0) {
      return name + " has zero bytes but offset " + std::to_string(offset) + " instead of 0";
    }
    // Written so that offset + bytes cannot overflow.
    if (bytes > plan.arena_bytes || offset > plan.arena_bytes - bytes) {
      return name + " (" + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
             ") ends past the arena of " + std::to_string(plan.arena_bytes) + " bytes";
    }
  }
  return find_overlap(requests, plan);
}

}  // namespace kiln::compiler
