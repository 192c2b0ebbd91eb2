// libstdc++-order sorting and selection as C text (see cpu_order_source.h).
#include "kiln/aten/compiled/sort/cpu_order_source.h"

namespace kiln::torch_integration::compiled {
namespace {

// NAME, PAIR and LESS are substituted. Positions are offsets into `p`.
const char* kCpuOrder = R"KILN(
static inline int NAME_less(PAIR_pair a, PAIR_pair b) { return LESS; }
static inline void NAME_swap(PAIR_pair* p, int64_t i, int64_t j) {
  PAIR_pair t = p[i]; p[i] = p[j]; p[j] = t;
}
/* Moves the element `last` down while it goes before its left neighbour; a
   smaller element is known to exist to the left (unguarded). */
static void NAME_linear_insert(PAIR_pair* p, int64_t last) {
  PAIR_pair value = p[last];
  int64_t next = last - 1;
  while (NAME_less(value, p[next])) { p[last] = p[next]; last = next; --next; }
  p[last] = value;
}
static void NAME_insertion_sort(PAIR_pair* p, int64_t first, int64_t last) {
  if (first == last) return;
  for (int64_t i = first + 1; i < last; ++i) {
    if (NAME_less(p[i], p[first])) {
      PAIR_pair value = p[i];
      for (int64_t j = i; j > first; --j) p[j] = p[j - 1];
      p[first] = value;
    } else {
      NAME_linear_insert(p, i);
    }
  }
}
static void NAME_median_to_first(PAIR_pair* p, int64_t result, int64_t a, int64_t b, int64_t c) {
  if (NAME_less(p[a], p[b])) {
    if (NAME_less(p[b], p[c])) NAME_swap(p, result, b);
    else if (NAME_less(p[a], p[c])) NAME_swap(p, result, c);
    else NAME_swap(p, result, a);
  } else if (NAME_less(p[a], p[c])) NAME_swap(p, result, a);
  else if (NAME_less(p[b], p[c])) NAME_swap(p, result, c);
  else NAME_swap(p, result, b);
}
static int64_t NAME_partition(PAIR_pair* p, int64_t first, int64_t last, int64_t pivot) {
  for (;;) {
    while (NAME_less(p[first], p[pivot])) ++first;
    --last;
    while (NAME_less(p[pivot], p[last])) --last;
    if (!(first < last)) return first;
    NAME_swap(p, first, last);
    ++first;
  }
}
static int64_t NAME_partition_pivot(PAIR_pair* p, int64_t first, int64_t last) {
  int64_t middle = first + (last - first) / 2;
  NAME_median_to_first(p, first, first + 1, middle, last - 1);
  return NAME_partition(p, first + 1, last, first);
}
/* Heap of p[first, first + length) rooted at first, largest (last in order) on top. */
static void NAME_adjust_heap(PAIR_pair* p, int64_t first, int64_t hole, int64_t length, PAIR_pair value) {
  const int64_t top = hole;
  int64_t child = hole;
  while (child < (length - 1) / 2) {
    child = 2 * (child + 1);
    if (NAME_less(p[first + child], p[first + child - 1])) --child;
    p[first + hole] = p[first + child];
    hole = child;
  }
  if ((length & 1) == 0 && child == (length - 2) / 2) {
    child = 2 * (child + 1);
    p[first + hole] = p[first + child - 1];
    hole = child - 1;
  }
  int64_t parent = (hole - 1) / 2;
  while (hole > top && NAME_less(p[first + parent], value)) {
    p[first + hole] = p[first + parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  p[first + hole] = value;
}
static void NAME_make_heap(PAIR_pair* p, int64_t first, int64_t last) {
  int64_t length = last - first;
  if (length < 2) return;
  for (int64_t parent = (length - 2) / 2;; --parent) {
    NAME_adjust_heap(p, first, parent, length, p[first + parent]);
    if (parent == 0) return;
  }
}
static void NAME_pop_heap(PAIR_pair* p, int64_t first, int64_t last, int64_t result) {
  PAIR_pair value = p[result];
  p[result] = p[first];
  NAME_adjust_heap(p, first, 0, last - first, value);
}
static void NAME_heap_select(PAIR_pair* p, int64_t first, int64_t middle, int64_t last) {
  NAME_make_heap(p, first, middle);
  for (int64_t i = middle; i < last; ++i) {
    if (NAME_less(p[i], p[first])) NAME_pop_heap(p, first, middle, i);
  }
}
static void NAME_sort_heap(PAIR_pair* p, int64_t first, int64_t last) {
  while (last - first > 1) { --last; NAME_pop_heap(p, first, last, last); }
}
static int NAME_log2(int64_t n) { int result = 0; while (n > 1) { n >>= 1; ++result; } return result; }
static void NAME_introsort_loop(PAIR_pair* p, int64_t first, int64_t last, int depth) {
  while (last - first > 16) {
    if (depth == 0) {
      NAME_heap_select(p, first, last, last);
      NAME_sort_heap(p, first, last);
      return;
    }
    --depth;
    int64_t cut = NAME_partition_pivot(p, first, last);
    NAME_introsort_loop(p, cut, last, depth);
    last = cut;
  }
}
static void NAME_sort(PAIR_pair* p, int64_t n) {
  if (n <= 1) return;
  NAME_introsort_loop(p, 0, n, 2 * NAME_log2(n));
  if (n > 16) {
    NAME_insertion_sort(p, 0, 16);
    for (int64_t i = 16; i < n; ++i) NAME_linear_insert(p, i);
  } else {
    NAME_insertion_sort(p, 0, n);
  }
}
static void NAME_nth_element(PAIR_pair* p, int64_t nth, int64_t n) {
  if (n == 0 || nth == n) return;
  int64_t first = 0, last = n;
  int depth = 2 * NAME_log2(n);
  while (last - first > 3) {
    if (depth == 0) {
      NAME_heap_select(p, first, nth + 1, last);
      NAME_swap(p, first, nth);
      return;
    }
    --depth;
    int64_t cut = NAME_partition_pivot(p, first, last);
    if (cut <= nth) first = cut; else last = cut;
  }
  NAME_insertion_sort(p, first, last);
}
static void NAME_partial_sort(PAIR_pair* p, int64_t middle, int64_t n) {
  NAME_heap_select(p, 0, middle, n);
  NAME_sort_heap(p, 0, middle);
}
)KILN";

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

std::string cpu_order_source(std::string_view prefix, std::string_view name, std::string_view less) {
  std::string text = replace_all(kCpuOrder, "LESS", less);
  text = replace_all(std::move(text), "NAME", name);
  return replace_all(std::move(text), "PAIR", prefix);
}

std::string cpu_order_pair_source(std::string_view prefix) {
  std::string p(prefix);
  return "typedef struct { " + p + "_compute key; int64_t index; } " + p + "_pair;\n";
}

}  // namespace kiln::torch_integration::compiled
