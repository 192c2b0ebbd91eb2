// Device time for the autograd profiler's marker mode: a PrivateUse1
// ProfilerStubs (torch/csrc/profiler/stubs/base.h).
//
// torch.autograd.profiler.profile(use_device="kiln") without use_kineto, and
// record_function ranges in that mode, time the device as CUDA's legacy mode
// does: an event recorded on the current stream when each op starts and ends,
// the op's device time the time between the two events' completion. Without
// these stubs PyTorch's marker mode has nothing to record with and fails in
// its callbacks. The Kineto path (device_activity_profiler.cc) is the one that
// sees each kernel; this one sees spans of the stream.
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include <memory>

#include "kiln/c10/device_guard.h"
#include "kiln/c10/status_error.h"
#include "kiln/runtime/event.h"

namespace kiln::torch_integration {
namespace {

class DeviceTimingStubs : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    Runtime& kiln = runtime();
    const int index = kiln.current_device();
    if (device != nullptr) *device = static_cast<c10::DeviceIndex>(index);
    auto marker = std::make_shared<Event>(/*enable_timing=*/true);
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    check_status(marker->record(current_runtime_stream(index)));
    *event = std::static_pointer_cast<void>(marker);
  }

  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* start,
                const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    auto* first = static_cast<const Event*>(start->get());
    auto* second = static_cast<const Event*>(end->get());
    first->synchronize();
    second->synchronize();
    // PyTorch's stubs answer in microseconds.
    return static_cast<float>(value_or_throw(first->elapsed_milliseconds(*second)) * 1000.0);
  }

  void mark(const char* name) const override {}
  void rangePush(const char* name) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    Runtime& kiln = runtime();
    const int previous = kiln.current_device();
    for (int device = 0; device < kiln.device_count(); ++device) {
      kiln.set_current_device(device);
      op(device);
    }
    kiln.set_current_device(previous);
  }

  void synchronize() const override {
    Runtime& kiln = runtime();
    for (int device = 0; device < kiln.device_count(); ++device) check_status(kiln.synchronize_device(device));
  }
};

struct RegisterStubs {
  RegisterStubs() {
    static DeviceTimingStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
};
RegisterStubs register_stubs;

}  // namespace
}  // namespace kiln::torch_integration
