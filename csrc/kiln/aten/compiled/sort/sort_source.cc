// The stable merge sort and the sort kernel, as C text (see sort_source.h).
#include "kiln/aten/compiled/sort/sort_source.h"

#include "kiln/aten/compiled/sort/cpu_order_source.h"

namespace kiln::torch_integration::compiled {
namespace {

// Written once with PREFIX as a placeholder; stable_sort_source substitutes
// the element prefix. Bottom-up merge sort: insertion-sorted runs of 16 (cheap
// and stable), then merges that take from the left run on ties.
const char* kStableSort = R"KILN(
static inline int PREFIX_before_ascending(PREFIX_compute a, PREFIX_compute b) {
  return (!PREFIX_is_nan(a) && PREFIX_is_nan(b)) || a < b;
}
static inline int PREFIX_before_descending(PREFIX_compute a, PREFIX_compute b) {
  return (PREFIX_is_nan(a) && !PREFIX_is_nan(b)) || a > b;
}
#define KILN_STABLE_SORT(NAME, BEFORE)                                                     \
  static void NAME(PREFIX_compute* keys, int64_t* indices, PREFIX_compute* key_scratch,     \
                   int64_t* index_scratch, int64_t n) {                                    \
    for (int64_t start = 0; start < n; start += 16) {                                      \
      int64_t stop = start + 16 < n ? start + 16 : n;                                      \
      for (int64_t i = start + 1; i < stop; ++i) {                                         \
        PREFIX_compute key = keys[i];                                                      \
        int64_t index = indices[i];                                                        \
        int64_t j = i;                                                                     \
        while (j > start && BEFORE(key, keys[j - 1])) {                                    \
          keys[j] = keys[j - 1];                                                           \
          indices[j] = indices[j - 1];                                                     \
          --j;                                                                             \
        }                                                                                  \
        keys[j] = key;                                                                     \
        indices[j] = index;                                                                \
      }                                                                                    \
    }                                                                                      \
    PREFIX_compute* from_keys = keys; int64_t* from_indices = indices;                     \
    PREFIX_compute* to_keys = key_scratch; int64_t* to_indices = index_scratch;            \
    for (int64_t width = 16; width < n; width *= 2) {                                      \
      for (int64_t low = 0; low < n; low += 2 * width) {                                   \
        int64_t middle = low + width < n ? low + width : n;                                \
        int64_t high = low + 2 * width < n ? low + 2 * width : n;                          \
        int64_t left = low, right = middle, out = low;                                     \
        while (left < middle && right < high) {                                            \
          if (BEFORE(from_keys[right], from_keys[left])) {                                 \
            to_keys[out] = from_keys[right]; to_indices[out++] = from_indices[right++];    \
          } else {                                                                         \
            to_keys[out] = from_keys[left]; to_indices[out++] = from_indices[left++];      \
          }                                                                                \
        }                                                                                  \
        while (left < middle) { to_keys[out] = from_keys[left]; to_indices[out++] = from_indices[left++]; } \
        while (right < high) { to_keys[out] = from_keys[right]; to_indices[out++] = from_indices[right++]; } \
      }                                                                                    \
      PREFIX_compute* swap_keys = from_keys; from_keys = to_keys; to_keys = swap_keys;     \
      int64_t* swap_indices = from_indices; from_indices = to_indices; to_indices = swap_indices; \
    }                                                                                      \
    if (from_keys != keys) {                                                               \
      for (int64_t i = 0; i < n; ++i) { keys[i] = from_keys[i]; indices[i] = from_indices[i]; } \
    }                                                                                      \
  }
KILN_STABLE_SORT(PREFIX_sort_ascending, PREFIX_before_ascending)
KILN_STABLE_SORT(PREFIX_sort_descending, PREFIX_before_descending)
)KILN";

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

std::string stable_sort_source(std::string_view prefix) {
  return replace_all(kStableSort, "PREFIX", prefix);
}

std::string sort_row_source(bool descending) {
  // Values are written from the sorted keys rather than re-read from the
  // input, so an out= values tensor may alias self.
  std::string text = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  const value_t* input = (const value_t*)rows[0];
  value_t* values = (value_t*)rows[1];
  int64_t* sorted_indices = (int64_t*)rows[2];
  int64_t* indices = (int64_t*)scratch;
  int64_t* index_scratch = indices + n;
  value_compute* keys = (value_compute*)(index_scratch + n);
  value_compute* key_scratch = keys + n;
  for (int64_t i = 0; i < n; ++i) { keys[i] = value_load(input[i * steps[0]]); indices[i] = i; }
  SORT(keys, indices, key_scratch, index_scratch, n);
  for (int64_t i = 0; i < n; ++i) {
    values[i * steps[1]] = value_store(keys[i]);
    sorted_indices[i * steps[2]] = indices[i];
  }
}
)KILN";
  return replace_all(text, "SORT", descending ? "value_sort_descending" : "value_sort_ascending");
}

std::string unstable_sort_row_source(bool descending) {
  // A row read with stride 0 is left in input order, as the CPU does (it
  // fills the indices and skips the sort).
  std::string text = cpu_order_pair_source("value") +
                     cpu_order_source("value", "unstable",
                                      descending ? "value_before_descending(a.key, b.key)"
                                                 : "value_before_ascending(a.key, b.key)");
  text += R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  const value_t* input = (const value_t*)rows[0];
  value_t* values = (value_t*)rows[1];
  int64_t* sorted_indices = (int64_t*)rows[2];
  value_pair* pairs = (value_pair*)scratch;
  for (int64_t i = 0; i < n; ++i) { pairs[i].key = value_load(input[i * steps[0]]); pairs[i].index = i; }
  if (steps[0] != 0) unstable_sort(pairs, n);
  for (int64_t i = 0; i < n; ++i) {
    values[i * steps[1]] = value_store(pairs[i].key);
    sorted_indices[i * steps[2]] = pairs[i].index;
  }
}
)KILN";
  return text;
}

}  // namespace kiln::torch_integration::compiled
