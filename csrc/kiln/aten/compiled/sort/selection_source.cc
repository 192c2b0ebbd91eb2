// C text of the selection kernels (see selection_source.h).
#include "kiln/aten/compiled/sort/selection_source.h"

#include "kiln/aten/compiled/sort/cpu_order_source.h"

namespace kiln::torch_integration::compiled {
namespace {

// NaN goes first for the largest, last for the smallest (numpy's order).
const char* kLargestFirst = "(value_is_nan(a.key) && !value_is_nan(b.key)) || a.key > b.key";
const char* kSmallestFirst = "(!value_is_nan(a.key) && value_is_nan(b.key)) || a.key < b.key";

// Reads a row into (key, index) pairs.
const char* kLoadPairs = R"KILN(
static void kiln_load_pairs(const value_t* input, int64_t step, int64_t n, value_pair* pairs) {
  for (int64_t i = 0; i < n; ++i) { pairs[i].key = value_load(input[i * step]); pairs[i].index = i; }
}
)KILN";

}  // namespace

std::string topk_row_source(bool largest) {
  std::string text = cpu_order_pair_source("value") + kLoadPairs +
                     cpu_order_source("value", "select", largest ? kLargestFirst : kSmallestFirst);
  text += R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  const int64_t k = args->scalars[0].integer;
  const int sorted = (int)args->scalars[1].integer;
  if (k == 0) return;
  value_pair* pairs = (value_pair*)scratch;
  kiln_load_pairs((const value_t*)rows[0], steps[0], n, pairs);
  if (k * 64 <= n) {
    select_partial_sort(pairs, k, n);
  } else {
    select_nth_element(pairs, k - 1, n);
    if (sorted) select_sort(pairs, k - 1);
  }
  value_t* values = (value_t*)rows[1];
  int64_t* indices = (int64_t*)rows[2];
  for (int64_t i = 0; i < k; ++i) {
    values[i * steps[1]] = value_store(pairs[i].key);
    indices[i * steps[2]] = pairs[i].index;
  }
}
)KILN";
  return text;
}

std::string kthvalue_row_source() {
  // Quickselect over [low, high]: the median of (low, low + 1, high) becomes
  // the pivot at low, then two scans meet and the side holding k is kept.
  return cpu_order_pair_source("value") + kLoadPairs + R"KILN(
static inline int kiln_greater_or_nan(value_compute a, value_compute b) {
  return (value_is_nan(a) && !value_is_nan(b)) || a > b;
}
static inline void kiln_swap(value_pair* p, int64_t i, int64_t j) {
  value_pair t = p[i]; p[i] = p[j]; p[j] = t;
}
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  const int64_t k = args->scalars[0].integer - 1;
  value_pair* p = (value_pair*)scratch;
  kiln_load_pairs((const value_t*)rows[0], steps[0], n, p);
  int64_t low = 0, high = n - 1;
  for (;;) {
    if (high <= low) break;
    if (high == low + 1) {
      if (kiln_greater_or_nan(p[low].key, p[high].key)) kiln_swap(p, low, high);
      break;
    }
    int64_t middle = (low + high) >> 1;
    kiln_swap(p, middle, low + 1);
    if (kiln_greater_or_nan(p[low + 1].key, p[high].key)) kiln_swap(p, low + 1, high);
    if (kiln_greater_or_nan(p[low].key, p[high].key)) kiln_swap(p, low, high);
    if (kiln_greater_or_nan(p[low + 1].key, p[low].key)) kiln_swap(p, low + 1, low);
    int64_t i = low + 1, j = high;
    value_compute pivot = p[low].key;
    for (;;) {
      do ++i; while (kiln_greater_or_nan(pivot, p[i].key));
      do --j; while (kiln_greater_or_nan(p[j].key, pivot));
      if (j < i) break;
      kiln_swap(p, i, j);
    }
    kiln_swap(p, low, j);
    if (j <= k) low = i;
    if (j >= k) high = j - 1;
  }
  *(value_t*)rows[1] = value_store(p[k].key);
  *(int64_t*)rows[2] = p[k].index;
}
)KILN";
}

std::string median_row_source(bool ignore_nan) {
  // Ties by index make the order total; nanmedian's also puts NaN last.
  const char* less = ignore_nan
      ? "a.key < b.key || (a.key == b.key && a.index < b.index) || (value_is_nan(b.key) && !value_is_nan(a.key))"
      : "a.key < b.key || (a.key == b.key && a.index < b.index)";
  std::string text = cpu_order_pair_source("value") + kLoadPairs + cpu_order_source("value", "median", less);
  text += ignore_nan ? "#define KILN_IGNORE_NAN 1\n" : "#define KILN_IGNORE_NAN 0\n";
  text += R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  value_pair* pairs = (value_pair*)scratch;
  kiln_load_pairs((const value_t*)rows[0], steps[0], n, pairs);
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (value_is_nan(pairs[i].key)) {
      if (!KILN_IGNORE_NAN) {
        /* median: the first NaN. */
        *(value_t*)rows[1] = value_store(pairs[i].key);
        *(int64_t*)rows[2] = i;
        return;
      }
      ++nans;
    }
  }
  /* C division truncates: an all-NaN row selects rank 0. */
  const int64_t nth = (n - nans - 1) / 2;
  median_nth_element(pairs, nth, n);
  *(value_t*)rows[1] = value_store(pairs[nth].key);
  *(int64_t*)rows[2] = pairs[nth].index;
}
)KILN";
  return text;
}

std::string mode_row_source() {
  std::string text = cpu_order_pair_source("value") + kLoadPairs + cpu_order_source("value", "mode", "a.key < b.key");
  text += R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  value_pair* pairs = (value_pair*)scratch;
  kiln_load_pairs((const value_t*)rows[0], steps[0], n, pairs);
  mode_sort(pairs, n);
  value_compute mode = 0;
  int64_t mode_index = 0, run = 0, longest = 0;
  for (int64_t i = 0; i < n; ++i) {
    ++run;
    if (i == n - 1 || pairs[i].key != pairs[i + 1].key) {
      if (run > longest) { mode = pairs[i].key; mode_index = pairs[i].index; longest = run; }
      run = 0;
    }
  }
  *(value_t*)rows[1] = value_store(mode);
  *(int64_t*)rows[2] = mode_index;
}
)KILN";
  return text;
}

}  // namespace kiln::torch_integration::compiled
