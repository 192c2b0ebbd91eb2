#include "kiln/aten/op_tracking.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace kiln::torch_integration {
namespace {

// Hashes std::string and std::string_view alike, so a lookup by the
// string_view each kernel passes allocates nothing.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view name) const { return std::hash<std::string_view>()(name); }
};

// One op's counts. Counters are never removed (clearing zeroes them), so a
// thread may cache a counter's address for a static op name.
struct Counter {
  std::atomic<int64_t> by_path[kOpPathCount] = {};
};

struct Tracker {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<Counter>, NameHash, std::equal_to<>> counts;
};

Tracker& tracker() {
  static Tracker* instance = new Tracker();  // used by exit-time code: never destroyed
  return *instance;
}

}  // namespace

const char* op_path_name(OpPath path) {
  switch (path) {
    case OpPath::kNative: return "native";
    case OpPath::kCompiled: return "compiled";
    case OpPath::kLibrary: return "library";
    case OpPath::kFallback: return "fallback";
    case OpPath::kCustom: return "custom";
  }
  return "unknown";
}

namespace {

Counter& counter_for(std::string_view op_name) {
  Tracker& state = tracker();
  std::lock_guard<std::mutex> lock(state.mutex);
  auto found = state.counts.find(op_name);
  if (found == state.counts.end()) {
    found = state.counts.emplace(std::string(op_name), std::make_unique<Counter>()).first;
  }
  return *found->second;
}

bool count(Counter& counter, OpPath path) {
  return counter.by_path[static_cast<int>(path)].fetch_add(1, std::memory_order_relaxed) == 0;
}

}  // namespace

bool record_op(std::string_view op_name, OpPath path) { return count(counter_for(op_name), path); }

namespace {

// Counters of static names by address: an open-addressing table filled with
// compare-and-swap, read without locks (a TLS map costs more here, through
// __tls_get_addr in a shared library).
constexpr size_t kStaticSlots = 4096;
struct StaticSlot {
  std::atomic<const char*> name{nullptr};
  std::atomic<Counter*> counter{nullptr};
};
StaticSlot static_slots[kStaticSlots];

}  // namespace

bool record_static_op(const char* op_name, OpPath path) {
  size_t index = (reinterpret_cast<uintptr_t>(op_name) >> 3) * 0x9E3779B97F4A7C15ULL >> 52;
  for (size_t probe = 0; probe < kStaticSlots; ++probe) {
    StaticSlot& slot = static_slots[(index + probe) % kStaticSlots];
    const char* name = slot.name.load(std::memory_order_acquire);
    if (name == nullptr) {
      const char* expected = nullptr;
      if (!slot.name.compare_exchange_strong(expected, op_name, std::memory_order_acq_rel)) {
        name = expected;  // another thread claimed the slot first
      } else {
        slot.counter.store(&counter_for(op_name), std::memory_order_release);
        name = op_name;
      }
    }
    if (name != op_name) continue;
    Counter* counter = slot.counter.load(std::memory_order_acquire);
    // The claiming thread may not have published the counter yet.
    if (counter == nullptr) counter = &counter_for(op_name);
    return count(*counter, path);
  }
  return record_op(op_name, path);  // the table is full: the locked path
}

std::map<std::string, OpCounts> op_counts() {
  Tracker& state = tracker();
  std::lock_guard<std::mutex> lock(state.mutex);
  std::map<std::string, OpCounts> result;
  for (const auto& [name, counter] : state.counts) {
    OpCounts counts;
    bool any = false;
    for (int path = 0; path < kOpPathCount; ++path) {
      counts.by_path[path] = counter->by_path[path].load(std::memory_order_relaxed);
      any = any || counts.by_path[path] != 0;
    }
    if (any) result.emplace(name, counts);
  }
  return result;
}

void clear_op_tracking() {
  Tracker& state = tracker();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (auto& entry : state.counts) {
    for (auto& path_count : entry.second->by_path) path_count.store(0, std::memory_order_relaxed);
  }
}

}  // namespace kiln::torch_integration
