// torch_kiln._C: Python bindings only. Logic lives in the layers below; every
// function here converts arguments, calls one of them, and converts back.
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

#include <future>

#include "kiln/aten/adaptive/adaptive_eager.h"
#include "kiln/aten/adaptive/fused_region_cache.h"
#include "kiln/aten/library/library_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/base/config.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/generator.h"
#include "kiln/c10/host_allocator.h"
#include "kiln/c10/status_error.h"
#include "kiln/compiler/kernel_cache.h"
#include "kiln/compiler/private_folder.h"
#include "kiln/python/custom_kernel_bindings.h"
#include "kiln/python/distributed_bindings.h"
#include "kiln/python/program_bindings.h"
#include "kiln/python/profiler_bindings.h"
#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {
namespace {

namespace py = pybind11;

// The gate of _test_hold_stream (guarded by the GIL, which both bindings hold).
std::promise<void>& test_stream_gate() {
  static std::promise<void> gate;
  return gate;
}

void add_stat_array(py::dict& result, const std::string& name,
                    const c10::CachingAllocator::StatArray& stats) {
  static const char* const kPools[] = {"all", "small_pool", "large_pool"};
  for (size_t pool = 0; pool < stats.size(); ++pool) {
    std::string prefix = name + "." + kPools[pool] + ".";
    result[py::str(prefix + "current")] = stats[pool].current;
    result[py::str(prefix + "peak")] = stats[pool].peak;
    result[py::str(prefix + "allocated")] = stats[pool].allocated;
    result[py::str(prefix + "freed")] = stats[pool].freed;
  }
}

// The keys torch.cuda.memory_stats() reports, for the stats Kiln keeps.
py::dict memory_stats(int device) {
  c10::CachingDeviceAllocator::DeviceStats stats =
      device_allocator().getDeviceStats(static_cast<c10::DeviceIndex>(resolve_device_index(device)));
  py::dict result;
  add_stat_array(result, "allocation", stats.allocation);
  add_stat_array(result, "segment", stats.segment);
  add_stat_array(result, "active", stats.active);
  add_stat_array(result, "allocated_bytes", stats.allocated_bytes);
  add_stat_array(result, "reserved_bytes", stats.reserved_bytes);
  add_stat_array(result, "active_bytes", stats.active_bytes);
  add_stat_array(result, "requested_bytes", stats.requested_bytes);
  result["num_alloc_retries"] = stats.num_alloc_retries;
  result["num_ooms"] = stats.num_ooms;
  result["num_device_alloc"] = stats.num_device_alloc;
  result["num_device_free"] = stats.num_device_free;
  return result;
}

py::dict device_properties(int device) {
  DeviceProperties properties = runtime().driver().properties(resolve_device_index(device));
  py::dict result;
  result["name"] = properties.name;
  result["total_memory"] = properties.total_memory;
  result["multi_processor_count"] = properties.compute_units;
  result["major"] = properties.capability_major;
  result["minor"] = properties.capability_minor;
  return result;
}

py::dict executed_ops() {
  py::dict result;
  for (const auto& [name, counts] : op_counts()) {
    py::dict by_path;
    for (int path = 0; path < kOpPathCount; ++path) {
      if (counts.by_path[path] > 0) {
        by_path[op_path_name(static_cast<OpPath>(path))] = counts.by_path[path];
      }
    }
    result[py::str(name)] = by_path;
  }
  return result;
}

// A thread holding the GIL must not wait for room on a full stream: the
// stream's worker may need the GIL to release a tensor's Python object
// (Stream::enqueue). Ops called from Python run without it (PyTorch's bindings
// release it), so a Python loop that runs ahead of the device still waits.
bool may_wait_without_the_gil() { return !Py_IsInitialized() || !PyGILState_Check(); }

}  // namespace

// Adaptive eager (aten/adaptive/adaptive_eager.h): its mode and counters.
void add_adaptive_eager_bindings(py::module& module) {
  module.def("_adaptive_eager_mode", [] {
    switch (adaptive::mode()) {
      case AdaptiveEagerMode::kOn: return "on";
      case AdaptiveEagerMode::kOff: return "off";
      case AdaptiveEagerMode::kAlways: return "always";
    }
    return "on";
  });
  module.def("_set_adaptive_eager_mode", [](const std::string& mode) {
    if (mode == "on") adaptive::set_mode(AdaptiveEagerMode::kOn);
    else if (mode == "off") adaptive::set_mode(AdaptiveEagerMode::kOff);
    else if (mode == "always") adaptive::set_mode(AdaptiveEagerMode::kAlways);
    else throw py::value_error("adaptive eager mode must be 'on', 'off' or 'always', got '" + mode + "'");
  });
  module.def("_adaptive_eager_stats", [] {
    adaptive::Stats stats = adaptive::stats();
    py::dict result;
    result["ops_held"] = stats.ops_held;
    result["regions_fused"] = stats.regions_fused;
    result["ops_fused"] = stats.ops_fused;
    result["regions_unfused"] = stats.regions_unfused;
    result["single_ops"] = stats.single_ops;
    result["reductions_fused"] = stats.reductions_fused;
    result["row_kernels_fused"] = stats.row_kernels_fused;
    result["bytes_not_stored"] = stats.bytes_not_stored;
    result["region_keys"] = stats.region_keys;
    result["kernels_compiled"] = stats.kernels_compiled;
    result["compile_failures"] = stats.compile_failures;
    result["compiles_pending"] = stats.compiles_pending;
    return result;
  });
  module.def("_reset_adaptive_eager", [] { adaptive::reset(); });
  module.def("_adaptive_eager_synchronous_compiles", [](bool synchronous) {
    adaptive::set_synchronous_compiles(synchronous);
  });
  module.def("_adaptive_eager_wait_for_compiles", [] {
    py::gil_scoped_release release;
    adaptive::wait_for_compiles();
  });
}

PYBIND11_MODULE(_C, module) {
  module.doc() = "Bindings of the kiln device runtime (torch_kiln._C)";
  Stream::set_wait_permission(&may_wait_without_the_gil);
  bind_program(module);
  bind_distributed(module);
  bind_custom_kernels(module);
  bind_profiler(module);

  module.def("_init", [] { runtime(); });
  module.def("_is_initialized", &Runtime::initialized);
  module.def("_is_in_bad_fork", &Runtime::in_bad_fork);
  // Counting devices does not initialize the runtime, as on CUDA.
  module.def("_device_count", [] { return config().num_devices(); });
  module.def("_get_device", [] { return runtime().current_device(); });
  module.def("_set_device", [](int device) {
    check_device_index(device);
    runtime().set_current_device(device);
  });
  module.def("_exchange_device", [](int device) {
    int previous = runtime().current_device();
    if (device >= 0) {
      check_device_index(device);
      runtime().set_current_device(device);
    }
    return previous;
  });
  // Called at interpreter exit (torch_kiln registers it with atexit): work
  // still queued holds tensors whose Python objects need the GIL when the
  // stream worker releases them, and after finalization starts a thread that
  // asks for the GIL is torn down mid-destructor. Errors are not raised here:
  // nothing is left to report them to.
  module.def("_drain_streams", [] {
    if (!Runtime::initialized() || Runtime::in_bad_fork()) return;
    py::gil_scoped_release no_gil;
    for (int device = 0; device < config().num_devices(); ++device) {
      (void)runtime().synchronize_device(device);
    }
  });
  module.def("_synchronize", [](int device) {
    int index = resolve_device_index(device);
    py::gil_scoped_release no_gil;
    check_status(runtime().synchronize_device(index));
  });
  module.def("_get_device_properties", &device_properties);

  module.def("_memory_stats", &memory_stats);
  module.def("_empty_cache", [] { device_allocator().emptyCache(); });
  module.def("_reset_peak_memory_stats", [](int device) {
    device_allocator().resetPeakStats(static_cast<c10::DeviceIndex>(resolve_device_index(device)));
  });
  module.def("_reset_accumulated_memory_stats", [](int device) {
    device_allocator().resetAccumulatedStats(
        static_cast<c10::DeviceIndex>(resolve_device_index(device)));
  });
  module.def("_mem_get_info", [](int device) {
    return device_allocator().getMemoryInfo(
        static_cast<c10::DeviceIndex>(resolve_device_index(device)));
  });
  module.def("_host_memory_stats", [] {
    PinnedHostStats stats = runtime().pinned_host_allocator().stats();
    py::dict result;
    result["allocated_bytes"] = stats.allocated_bytes;
    result["reserved_bytes"] = stats.reserved_bytes;
    result["allocations"] = stats.allocations;
    result["segments"] = stats.segments;
    return result;
  });
  module.def("_host_empty_cache", [] { host_allocator().empty_cache(); });

  module.def("_get_default_generator", [](int device) {
    const at::Generator& generator =
        default_generator(static_cast<c10::DeviceIndex>(resolve_device_index(device)));
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(generator));
  });

  module.def("_get_fallback_mode", [] { return fallback_mode_name(config().fallback_mode()); });
  module.def("_set_fallback_mode", [](const std::string& mode) {
    mutable_config().set_fallback_mode(value_or_throw(parse_fallback_mode(mode)));
  });
  module.def("_get_float64_policy", [] { return float64_policy_name(config().float64_policy()); });
  module.def("_launch_blocking", [] { return config().launch_blocking(); });
  module.def("_config_problems", [] { return config().problems(); });
  module.def("_cache_directory", [] { return config().cache_dir(); });
  module.def("_disk_cache_disabled", [] { return config().disk_cache_disabled(); });
  // The kernel cache's folder rules (private_folder.h), for the program
  // cache, whose entries are unpickled (compile/lowering/program_cache.py).
  module.def("_make_private_directories",
             [](const std::string& path) { check_status(make_private_directories(path)); });
  module.def("_check_private", [](const std::string& path, const std::string& what) {
    check_status(check_private(path, what));
  });
  module.def("_dump_directory", [] { return config().dump_dir(); });
  module.def("_distributed_shared_memory", [] { return config().distributed_shared_memory(); });
  // For tests of error propagation: queues work on the current stream that fails.
  module.def("_test_enqueue_failure", [](const std::string& message) {
    check_status(current_runtime_stream().enqueue(
        "kiln::test_failure", [message]() { return internal_error(message); }));
  });
  // For tests of work still queued: holds the current stream with an item
  // that waits until _test_release_stream() (the caller must release it
  // before anything waits for the stream).
  module.def("_test_hold_stream", [] {
    std::shared_future<void> opened = test_stream_gate().get_future().share();
    check_status(current_runtime_stream().enqueue("kiln::test_hold", [opened]() {
      opened.wait();
      return Status();
    }));
  });
  module.def("_test_release_stream", [] {
    test_stream_gate().set_value();
    test_stream_gate() = std::promise<void>();
  });
  module.def("_reused_in_stream_order", &reused_in_stream_order);
  module.def("_convolution_writes_output_directly",
             [](const at::Tensor& input, const at::Tensor& weight, std::vector<int64_t> stride,
                std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
               return library::convolution_writes_output_directly(input, weight, stride, padding, dilation,
                                                                  groups);
             });
  module.def("_executed_ops", &executed_ops);
  module.def("_clear_op_tracking", &clear_op_tracking);
  module.def("_compiler_stats", [] {
    CompilerStats stats = KernelCache::instance().stats();
    py::dict result;
    result["kernels_compiled"] = stats.kernels_compiled;
    result["memory_hits"] = stats.memory_hits;
    result["disk_hits"] = stats.disk_hits;
    result["compile_seconds"] = stats.compile_seconds;
    result["compile_failures"] = stats.compile_failures;
    result["disk_evictions"] = stats.disk_evictions;
    result["stale_files_removed"] = stats.stale_files_removed;
    return result;
  });
  module.def("_reset_compiler_stats", [] { KernelCache::instance().reset_stats(); });
  add_adaptive_eager_bindings(module);
}

}  // namespace kiln::torch_integration
