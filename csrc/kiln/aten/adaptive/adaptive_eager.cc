#include "kiln/aten/adaptive/adaptive_eager.h"

#include <ATen/Context.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/aten/adaptive/fused_region_cache.h"
#include "kiln/aten/adaptive/held_region.h"
#include "kiln/base/hash.h"
#include "kiln/c10/device_allocator.h"

namespace kiln::torch_integration::adaptive {

namespace detail {
std::atomic<int> current_mode{static_cast<int>(config().adaptive_eager_mode())};
}  // namespace detail

namespace {

constexpr char kFusedRegionName[] = "kiln::adaptive_region";
// A region opens only while at least this many items are queued or running:
// with one, the device may finish it before the host dispatches the next op,
// and then waits for the held op it could have been running. (The models of
// the suites' CI subset ran up to 25 % slower holding behind one item: most
// regions there stay one op, between two library calls.)
constexpr uint64_t kHoldDepth = 2;
// A region opens only with an op that touches at least this many bytes (all
// its operands). Below it an op's kernel takes a few microseconds, less
// than the host takes to dispatch the op from Python, so the device keeps up
// and fusing saves it time no one waits for, while holding an op (about
// 0.7 us) and submitting its region (about 1.7 us) cost the host, the
// bottleneck then. Small Hugging Face models (2 x 32 tokens, 128 wide: ops
// of 96 to 192 KiB) ran 5-17 % slower holding their ops; with this floor
// they run as fast as unfused, and CNN activations and the chain
// benchmarks (megabytes per op) still fuse. The floor depends on the op
// alone, not on timing, so where regions start stays the same every step.
constexpr size_t kMinRegionBytes = size_t{256} << 10;
constexpr char kUnfusedRegionName[] = "kiln::adaptive_region_unfused";

struct Counters {
  std::atomic<uint64_t> ops_held{0};
  std::atomic<uint64_t> regions_fused{0};
  std::atomic<uint64_t> ops_fused{0};
  std::atomic<uint64_t> regions_unfused{0};
  std::atomic<uint64_t> single_ops{0};
  std::atomic<uint64_t> reductions_fused{0};
  std::atomic<uint64_t> row_kernels_fused{0};
  std::atomic<uint64_t> bytes_not_stored{0};
};
Counters counters;

// The IR of each op signature held so far, built once per process: one map
// for pointwise kernels, one for reductions.
struct OpKernels {
  std::shared_mutex mutex;
  StringMap<std::shared_ptr<const OpKernel>> kernels;
};
OpKernels pointwise_kernels, reduction_kernels;

std::shared_ptr<const OpKernel> op_kernel(OpKernels& map, std::string_view signature,
                                          c10::function_ref<ir::Kernel()> build_ir,
                                          bool (*fusable)(const ir::Kernel&)) {
  {
    std::shared_lock<std::shared_mutex> lock(map.mutex);
    auto found = map.kernels.find(signature);
    if (found != map.kernels.end()) return found->second;
  }
  auto op = std::make_shared<OpKernel>();
  op->signature = std::string(signature);
  op->kernel = build_ir();
  op->fusable = fusable(op->kernel);
  std::unique_lock<std::shared_mutex> lock(map.mutex);
  return map.kernels.emplace(op->signature, std::move(op)).first->second;
}

// The ops of a chain (pointwise ops launched one after another, nothing else
// reaching the stream between them) that ran unheld, counted as the region
// they would have made had the first been held: the next op continues the
// span while it could have joined that region by its index space and the
// region's limits.
struct UnheldSpan {
  uint64_t end = UINT64_MAX;  // Stream::ordering_points() right after the span's last op
  int rank = 0;
  int64_t sizes[ir::kMaxRank] = {};
  size_t ops = 0;
  int scalars = 0;
  const OpKernel* first = nullptr;  // its first op (OpKernels live as long as the process)

  // As a region would take it: the same index space or one with a common
  // refinement (HeldRegion::try_add).
  bool continued_by(const Stream& stream, int op_rank, const LaunchArgs& args, int op_scalars) const {
    if (end != stream.ordering_points() || ops >= HeldRegion::kMaxOps || scalars + op_scalars > ir::kMaxScalars) {
      return false;
    }
    int64_t refined[ir::kMaxRank];
    int refined_rank = 0;
    return refine_index_spaces(sizes, rank, args.sizes, op_rank, refined, refined_rank);
  }
  // The op about to be launched unheld joins the span (or starts it); its
  // launch hands over one piece of work.
  void add(const Stream& stream, const OpKernel& op, int op_rank, const LaunchArgs& args, int op_scalars,
           bool start) {
    if (start) {
      rank = op_rank;
      std::copy(args.sizes, args.sizes + op_rank, sizes);
      ops = 0;
      scalars = 0;
      first = &op;
    } else {
      int64_t refined[ir::kMaxRank];
      int refined_rank = 0;
      if (refine_index_spaces(sizes, rank, args.sizes, op_rank, refined, refined_rank)) {
        rank = refined_rank;
        std::copy(refined, refined + refined_rank, sizes);
      }
    }
    if (++ops == 2) first->begins_chains.store(true, std::memory_order_relaxed);
    scalars += op_scalars;
    end = stream.ordering_points() + 1;
  }
};

// A stream's open region.
//
// Where regions start and end must not depend on timing, or a loop meets new
// region keys (and compiles) long after its first steps. So an op that
// arrives while the device is about to run dry runs unheld, and so do the
// ops after it that could have joined the region it would have opened (its
// UnheldSpan); the first op that could not have joined starts the next
// region. The rest of a region the stream's worker submits early (the device
// ran dry) runs unheld the same way, and such a region, cut short by timing,
// runs fused only if its key's kernel is ready: it never queues a compile.
struct StreamRegion {
  std::mutex mutex;
  HeldRegion region;
  UnheldSpan unheld;
};

std::mutex regions_mutex;
std::unordered_map<const Stream*, std::unique_ptr<StreamRegion>> regions;  // streams live as long as the process

StreamRegion& region_of(const Stream& stream) {
  thread_local const Stream* last_stream = nullptr;
  thread_local StreamRegion* last_region = nullptr;
  if (last_stream == &stream) return *last_region;
  std::lock_guard<std::mutex> lock(regions_mutex);
  std::unique_ptr<StreamRegion>& slot = regions[&stream];
  if (!slot) slot = std::make_unique<StreamRegion>();
  last_stream = &stream;
  last_region = slot.get();
  return *slot;
}

StreamRegion* find_region(const Stream& stream) {
  std::lock_guard<std::mutex> lock(regions_mutex);
  auto found = regions.find(&stream);
  return found == regions.end() ? nullptr : found->second.get();
}

// Set while this thread submits a region: the submission's own enqueue must
// not come back for the region it is submitting (its lock is held).
thread_local bool submitting = false;

struct SubmittingScope {
  SubmittingScope() { submitting = true; }
  ~SubmittingScope() { submitting = false; }
};

struct Launch {
  KernelEntry entry;
  LaunchArgs args;
  compiled::LaunchShape shape;
};

// The fused kernel of `key` if it is ready; else nullptr, and the first time
// the key is seen its compile starts, if `may_compile`.
KernelEntry ready_kernel(const std::string& key, bool may_compile, const std::function<ir::Kernel()>& build) {
  return may_compile ? fused_kernel_for(key, build) : fused_kernel_if_ready(key);
}

// The launches of a region's ops, with `stored` buffers stored: one fused
// kernel when its key's kernel is ready, else the ops one by one (and the
// kernel's compile starts the first time its key is seen, if `may_compile`).
// Returns the name the profiler shows.
const char* add_region_launches(const HeldRegion& region, const std::vector<bool>& stored, bool may_compile,
                                std::vector<Launch>& launches) {
  if (region.size() >= 2) {
    KernelEntry fused =
        ready_kernel(region.key(stored), may_compile, [&]() { return region.fused_kernel(stored); });
    if (fused != nullptr) {
      Launch launch{fused, {}, {}};
      launch.args = region.fused_args(stored, launch.shape);
      launches.push_back(launch);
      counters.regions_fused.fetch_add(1, std::memory_order_relaxed);
      counters.ops_fused.fetch_add(region.size(), std::memory_order_relaxed);
      counters.bytes_not_stored.fetch_add(region.bytes_not_stored(stored), std::memory_order_relaxed);
      return kFusedRegionName;
    }
    counters.regions_unfused.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters.single_ops.fetch_add(1, std::memory_order_relaxed);
  }
  for (const HeldOp& op : region.ops()) launches.push_back(Launch{op.entry, op.args, op.shape});
  return region.size() == 1 ? region.ops().front().op_name : kUnfusedRegionName;
}

// The launches of a region whose reduction took row ops: one row kernel
// that also stores the region's results a tensor holds, unless the ops
// write a buffer they read (the row kernel computes them in more than one
// pass over the row); else every op one by one.
const char* add_row_launches(const HeldRegion& region, const std::vector<bool>& stored, bool may_compile,
                             std::vector<Launch>& launches) {
  const HeldReduction& reduction = *region.reduction();
  const bool nothing_stored = std::find(stored.begin(), stored.end(), true) == stored.end();
  if (nothing_stored || region.writes_no_input()) {
    const HeldRegion::RowStores stores = region.row_stores();
    KernelEntry fused =
        ready_kernel(region.row_key(stores), may_compile, [&]() { return region.fused_row_kernel(stores); });
    if (fused != nullptr) {
      Launch launch{fused, {}, {}};
      launch.args = region.fused_row_args(stores, launch.shape);
      launches.push_back(launch);
      counters.regions_fused.fetch_add(1, std::memory_order_relaxed);
      counters.ops_fused.fetch_add(region.size() + 1 + reduction.epilogue.size() + reduction.row_ops.size(),
                                   std::memory_order_relaxed);
      counters.reductions_fused.fetch_add(1, std::memory_order_relaxed);
      counters.row_kernels_fused.fetch_add(1, std::memory_order_relaxed);
      counters.bytes_not_stored.fetch_add(region.bytes_not_stored(stored) + region.row_bytes_not_stored(stores),
                                          std::memory_order_relaxed);
      return kFusedRegionName;
    }
  }
  counters.regions_unfused.fetch_add(1, std::memory_order_relaxed);
  for (const HeldOp& op : region.ops()) launches.push_back(Launch{op.entry, op.args, op.shape});
  launches.push_back(Launch{reduction.entry, reduction.args, reduction.shape});
  for (const HeldOp& op : reduction.epilogue) launches.push_back(Launch{op.entry, op.args, op.shape});
  for (const HeldReduction::RowOp& op : reduction.row_ops) {
    launches.push_back(Launch{op.launch.entry, op.launch.args, op.launch.shape});
  }
  return kUnfusedRegionName;
}

// The launches of a region whose ops a reduction follows. When nothing the
// ops wrote is held outside, one kernel runs the ops inside the reduction.
// When results are held but not the one the reduction reads, and the ops
// write none of their inputs, the ops run as a region storing what is held
// and the reduction computes its input again from the region's inputs
// (a LayerNorm's (x - mean) is held, its square is not): the square is
// neither stored nor loaded. Otherwise the ops run as a region that also
// stores what the reduction reads, then the reduction as it launched.
const char* add_reduction_launches(const HeldRegion& region, std::vector<bool> stored, bool may_compile,
                                   std::vector<Launch>& launches) {
  const HeldReduction& reduction = *region.reduction();
  if (!reduction.row_ops.empty()) return add_row_launches(region, stored, may_compile, launches);
  const bool nothing_stored = std::find(stored.begin(), stored.end(), true) == stored.end();
  bool source_held = false;
  for (int source : reduction.sources) source_held = source_held || (source >= 0 && stored[source]);
  const bool recompute = !nothing_stored && !source_held && region.writes_no_input();
  if (nothing_stored || recompute) {
    const std::vector<bool> values = region.stored_values();
    KernelEntry fused = ready_kernel(region.reduction_key(values), may_compile,
                                     [&]() { return region.fused_reduction_kernel(values); });
    KernelEntry region_kernel = nullptr;
    if (recompute && region.size() >= 2) {
      region_kernel = ready_kernel(region.key(stored), may_compile, [&]() { return region.fused_kernel(stored); });
    }
    if (fused != nullptr && (!recompute || region.size() == 1 || region_kernel != nullptr)) {
      if (region_kernel != nullptr) {
        Launch launch{region_kernel, {}, {}};
        launch.args = region.fused_args(stored, launch.shape);
        launches.push_back(launch);
      } else if (recompute) {
        const HeldOp& op = region.ops().front();
        launches.push_back(Launch{op.entry, op.args, op.shape});
      }
      Launch launch{fused, {}, {}};
      launch.args = region.fused_reduction_args(values, launch.shape);
      launches.push_back(launch);
      counters.regions_fused.fetch_add(1, std::memory_order_relaxed);
      counters.ops_fused.fetch_add(region.size() + 1 + reduction.epilogue.size(), std::memory_order_relaxed);
      counters.reductions_fused.fetch_add(1, std::memory_order_relaxed);
      counters.bytes_not_stored.fetch_add(region.bytes_not_stored(stored), std::memory_order_relaxed);
      return kFusedRegionName;
    }
    // Compiling (or failed): everything one by one.
    counters.regions_unfused.fetch_add(1, std::memory_order_relaxed);
    for (const HeldOp& op : region.ops()) launches.push_back(Launch{op.entry, op.args, op.shape});
  } else {
    for (int source : reduction.sources) {
      if (source >= 0) stored[source] = true;
    }
    add_region_launches(region, stored, may_compile, launches);
  }
  launches.push_back(Launch{reduction.entry, reduction.args, reduction.shape});
  for (const HeldOp& op : reduction.epilogue) launches.push_back(Launch{op.entry, op.args, op.shape});
  return kUnfusedRegionName;
}

// The rest of a region cut short runs unheld as its span, from the work the
// region handed over; before clear_deferred(), as a host launch that finds
// nothing deferred hands its work over at once and must see the span.
void continue_unheld(const Stream& stream, StreamRegion& state, const UnheldSpan& cut) {
  state.unheld = cut;
  state.unheld.end = cut.ops > 0 ? stream.ordering_points() : UINT64_MAX;
}

// Runs a region's launches, recorded for the profiler under `name`.
Status run_launches(const char* name, const std::vector<Launch>& launches) {
  RECORD_FUNCTION(name, c10::ArrayRef<const c10::IValue>());
  for (const Launch& launch : launches) compiled::run_now(launch.entry, launch.args, launch.shape);
  return Status();
}

// Hands the region over to the stream (add_region_launches,
// add_reduction_launches). Needs the region's lock. `cut_short`: the stream's
// worker submits it because the device ran dry, not because the program
// ended it; the rest of its chain then runs unheld (see StreamRegion).
void submit_locked(Stream& stream, StreamRegion& state, bool cut_short = false) {
  HeldRegion& region = state.region;
  if (region.empty()) {
    stream.clear_deferred();
    return;
  }
  // What the rest of a region cut short continues (none behind a reduction:
  // the region took no plain op after it).
  UnheldSpan cut;
  if (cut_short && !region.reduction()) {
    cut.first = region.ops().front().op.get();
    cut.rank = region.rank();
    std::copy(region.sizes(), region.sizes() + region.rank(), cut.sizes);
    cut.ops = region.size();
    cut.scalars = region.scalar_count();
  }
  if (!cut_short && region.size() == 1 && !region.reduction()) {
    region.ops().front().op->ends_alone.store(true, std::memory_order_relaxed);
  }
  SubmittingScope scope;
  std::vector<Launch> launches;
  const std::vector<bool> stored = region.stored_buffers();
  const char* name = nullptr;
  if (region.reduction()) {
    name = add_reduction_launches(region, stored, !cut_short, launches);
  } else if (region.size() >= 2 && std::find(stored.begin(), stored.end(), true) == stored.end()) {
    // No tensor holds anything the ops wrote, and pointwise ops do nothing
    // else: there is nothing to run.
    counters.regions_fused.fetch_add(1, std::memory_order_relaxed);
    counters.ops_fused.fetch_add(region.size(), std::memory_order_relaxed);
    counters.bytes_not_stored.fetch_add(region.bytes_not_stored(stored), std::memory_order_relaxed);
    region.release();
    if (cut_short) continue_unheld(stream, state, cut);
    stream.clear_deferred();
    return;
  } else {
    name = add_region_launches(region, stored, !cut_short, launches);
  }
  // Once queued, the work need not hold memory the allocator reuses in
  // stream order (launch_kernel's rule): it goes back to the pool as soon as
  // the host has dropped it, after the enqueue below (a block freed before
  // would be fenced without this work).
  std::vector<c10::Storage> holds = region.release();
  std::vector<c10::Storage> released;
  auto reused = std::stable_partition(holds.begin(), holds.end(), [](const c10::Storage& storage) {
    return !storage_reused_in_stream_order(storage);
  });
  released.assign(std::make_move_iterator(reused), std::make_move_iterator(holds.end()));
  holds.erase(reused, holds.end());
  // Small work submitted by the host runs at once in the host's thread when
  // the stream is idle, as a small unheld launch would (Stream::launch):
  // handing it to the worker would cost more than running it. It cannot
  // raise: pointwise kernels report no failures, and an earlier failure
  // keeps the stream from running anything inline.
  size_t bytes = 0;
  for (const Launch& launch : launches) bytes += launch.shape.bytes;
  Status status;
  if (!cut_short && stream.run_inline_if_idle(name, bytes, [&]() { return run_launches(name, launches); }, status)) {
    holds.clear();
  } else {
    // Queued otherwise, and always from the worker. The profiler shows the
    // region where it ran (the stream's worker). Its callbacks are the
    // submitting thread's (torch.profiler registers them per thread), so
    // they go with the work, as PyTorch hands them to its own threads;
    // checked first, as capturing the state costs more than a launch.
    std::optional<at::ThreadLocalState> profiler_state;
    if (at::hasThreadLocalCallbacks()) profiler_state.emplace();
    status = stream.enqueue(name, [name, launches = std::move(launches), holds = std::move(holds),
                                   profiler_state = std::move(profiler_state)]() {
      std::optional<at::ThreadLocalStateGuard> profiling;
      if (profiler_state) profiling.emplace(*profiler_state);
      return run_launches(name, launches);
    });
  }
  (void)status;  // neither the run in the caller nor a non-blocking stream's enqueue fails
  released.clear();
  if (cut_short) continue_unheld(stream, state, cut);
  stream.clear_deferred();
}

// The stream's deferred-work flush (Stream::set_deferred_flush). From the
// stream's worker (the device ran dry) it gives up when a host thread holds
// the region's lock: that thread is adding to it or submitting it.
void submit_held_work(Stream& stream, bool from_worker) {
  if (submitting || (from_worker && synchronous_compiles())) return;
  StreamRegion* state = find_region(stream);
  if (state == nullptr) {
    stream.clear_deferred();
    return;
  }
  std::unique_lock<std::mutex> lock(state->mutex, std::defer_lock);
  if (from_worker) {
    if (!lock.try_lock()) return;
  } else {
    lock.lock();
  }
  submit_locked(stream, *state, /*cut_short=*/from_worker);
}

const bool flush_installed = [] {
  Stream::set_deferred_flush(&submit_held_work);
  return true;
}();

}  // namespace

AdaptiveEagerMode mode() { return static_cast<AdaptiveEagerMode>(detail::current_mode.load()); }

void set_mode(AdaptiveEagerMode mode) { detail::current_mode.store(static_cast<int>(mode)); }

Stats stats() {
  Stats result;
  result.ops_held = counters.ops_held.load();
  result.regions_fused = counters.regions_fused.load();
  result.ops_fused = counters.ops_fused.load();
  result.regions_unfused = counters.regions_unfused.load();
  result.single_ops = counters.single_ops.load();
  result.reductions_fused = counters.reductions_fused.load();
  result.row_kernels_fused = counters.row_kernels_fused.load();
  result.bytes_not_stored = counters.bytes_not_stored.load();
  FusedRegionCacheStats cache = fused_region_cache_stats();
  result.region_keys = cache.keys;
  result.kernels_compiled = cache.kernels_compiled;
  result.compile_failures = cache.compile_failures;
  result.compiles_pending = cache.compiles_pending;
  return result;
}

void reset() {
  counters.ops_held = 0;
  counters.regions_fused = 0;
  counters.ops_fused = 0;
  counters.regions_unfused = 0;
  counters.single_ops = 0;
  counters.reductions_fused = 0;
  counters.row_kernels_fused = 0;
  counters.bytes_not_stored = 0;
  clear_fused_region_cache();
  // The keys are forgotten: so is which ops begin chains.
  for (OpKernels* map : {&pointwise_kernels, &reduction_kernels}) {
    std::shared_lock<std::shared_mutex> lock(map->mutex);
    for (const auto& [signature, op] : map->kernels) {
      op->begins_chains.store(false, std::memory_order_relaxed);
      op->ends_alone.store(false, std::memory_order_relaxed);
    }
  }
}

bool hold_pointwise_slow(Stream& stream, const char* op_name, std::string_view signature, KernelEntry entry,
                         const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                         const at::TensorIteratorBase& iter, c10::function_ref<ir::Kernel()> build_ir) {
  (void)flush_installed;
  const AdaptiveEagerMode current = mode();
  if (current == AdaptiveEagerMode::kOff || shape.positions <= 0) return false;
  if (at::globalContext().deterministicAlgorithms() || compiled::LaunchRecording::active() ||
      stream.held_by_current_thread() || config().launch_blocking() || Stream::running_queued_work()) {
    return false;
  }
  const bool always = current == AdaptiveEagerMode::kAlways;
  // An op that cannot fuse ends a chain, whatever the timing: its launch
  // hands over work the chain's next op sees.
  std::shared_ptr<const OpKernel> op = op_kernel(pointwise_kernels, signature, build_ir, is_fusable);
  if (!op->fusable) return false;
  StreamRegion& state = region_of(stream);
  const int op_scalars = static_cast<int>(op->kernel.scalars.size());
  std::lock_guard<std::mutex> lock(state.mutex);
  // An open region takes every op that may join, even once the device ran
  // dry: cutting it where the device happened to run dry would give a loop
  // new region keys, and compiles, at every step. (A device that stays dry
  // gets the region from the stream's worker, Stream::kDeferredPatience.)
  if (!state.region.empty()) {
    bool full = false;
    if (state.region.try_add(op_name, op, entry, args, shape, rank, iter, &full)) {
      if (state.region.size() == 2) {  // the region's first op begins chains
        state.region.ops().front().op->begins_chains.store(true, std::memory_order_relaxed);
      }
      counters.ops_held.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    // A full region ends before its independent tail, if it has one (the
    // next call of a chain): the tail goes on as the next region, with the op.
    HeldRegion tail = full ? state.region.split_independent_tail() : HeldRegion();
    submit_locked(stream, state);
    if (!tail.empty()) {
      state.region = std::move(tail);
      stream.mark_deferred();
      if (state.region.try_add(op_name, op, entry, args, shape, rank, iter)) {
        counters.ops_held.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      submit_locked(stream, state);
    }
    // The op cannot join: it starts the next region.
  } else if (state.unheld.continued_by(stream, rank, args, op_scalars)) {
    state.unheld.add(stream, *op, rank, args, op_scalars, /*start=*/false);
    return false;  // it continues the span running unheld
  } else if (!always && shape.bytes < kMinRegionBytes) {
    return false;  // too small to open a region (an open one took it above)
  } else if (!always && !op->begins_chains.load(std::memory_order_relaxed) &&
             (stream.items_in_flight() < kHoldDepth || op->ends_alone.load(std::memory_order_relaxed))) {
    // A device about to run dry gets the op at once, unless the op began a
    // chain of fusable work before (one region or one unheld span took a
    // second op): the device then waits only for the host to dispatch the
    // rest of the region, a loop whose steps start on an idle device fuses
    // from its first op, and whether such an op opens a region no longer
    // depends on timing once the loop's first step has shown its chains.
    // An op whose region once ended with it alone runs unheld too, until it
    // begins a chain (its unheld span shows that as well): most held ops of
    // the suites' models (a ReLU between a batch norm and a convolution) were
    // such regions of one, and holding one cost the host about 2.4 us (0.7 us
    // to hold, 1.7 us to submit, measured on Gemma) for nothing.
    state.unheld.add(stream, *op, rank, args, op_scalars, /*start=*/true);
    return false;
  }
  if (!state.region.try_add(op_name, op, entry, args, shape, rank, iter)) return false;
  stream.mark_deferred();
  counters.ops_held.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool hold_reduction_slow(Stream& stream, const char* op_name, std::string_view signature, KernelEntry entry,
                         const LaunchArgs& args, const compiled::LaunchShape& shape, int rank, int input_count,
                         c10::ArrayRef<at::Tensor> operands, c10::function_ref<ir::Kernel()> build_ir) {
  if (mode() == AdaptiveEagerMode::kOff || shape.positions <= 0 || shape.cost_per_position <= 0) return false;
  if (at::globalContext().deterministicAlgorithms() || compiled::LaunchRecording::active() ||
      stream.held_by_current_thread() || config().launch_blocking() || Stream::running_queued_work()) {
    return false;
  }
  StreamRegion& state = region_of(stream);
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.region.empty()) {
    // A reduction right after an unheld span might have fused with it: the
    // span's first op begins chains.
    if (state.unheld.end == stream.ordering_points() && state.unheld.first != nullptr) {
      state.unheld.first->begins_chains.store(true, std::memory_order_relaxed);
    }
    return false;
  }
  std::shared_ptr<const OpKernel> op = op_kernel(reduction_kernels, signature, build_ir, is_fusable_reduction);
  if (!op->fusable) return false;
  if (!state.region.try_add_reduction(op_name, op, entry, args, shape, rank, input_count, operands)) return false;
  state.region.ops().front().op->begins_chains.store(true, std::memory_order_relaxed);
  counters.ops_held.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace kiln::torch_integration::adaptive
