#include "kiln/aten/op_tracking.h"

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

struct Tracker {
  std::mutex mutex;
  std::unordered_map<std::string, OpCounts, NameHash, std::equal_to<>> counts;
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
  }
  return "unknown";
}

bool record_op(std::string_view op_name, OpPath path) {
  Tracker& state = tracker();
  std::lock_guard<std::mutex> lock(state.mutex);
  auto found = state.counts.find(op_name);
  if (found == state.counts.end()) found = state.counts.emplace(op_name, OpCounts{}).first;
  int64_t& count = found->second.by_path[static_cast<int>(path)];
  return count++ == 0;
}

std::map<std::string, OpCounts> op_counts() {
  Tracker& state = tracker();
  std::lock_guard<std::mutex> lock(state.mutex);
  return std::map<std::string, OpCounts>(state.counts.begin(), state.counts.end());
}

void clear_op_tracking() {
  Tracker& state = tracker();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.counts.clear();
}

}  // namespace kiln::torch_integration
