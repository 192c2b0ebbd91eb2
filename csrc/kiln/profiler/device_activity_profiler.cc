// Kiln's device timeline in torch.profiler: a Kineto child profiler.
//
// PyTorch 2.14 lets a PrivateUse1 backend hand Kineto an IActivityProfiler
// (torch/csrc/profiler/standalone/privateuse1_profiler.h). When a profile asks
// for the device's activities (ProfilerActivity.PrivateUse1, which
// torch.profiler turns into use_device="kiln"), Kineto configures a session
// from it, starts and stops it with the trace, forwards the correlation id of
// each host op it profiles (pushCorrelationId/popCorrelationId, on the op's
// thread), and asks it for its activities when the trace is processed, with a
// callback that finds the host op of a correlation id. The session turns
// kiln::device_trace's records (runtime/device_trace.h) into Kineto
// activities linked to those ops; PyTorch then counts their durations as the
// ops' device time (key_averages' device_time columns) and
// export_chrome_trace() draws them on one track per kiln stream.
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/aten/op_tracking.h"
#include "kiln/runtime/device_trace.h"

namespace kiln::torch_integration {
namespace {

using libkineto::ActivityType;

// What the device did, as Kineto types it: copies as memcpy, fills as
// memset, everything else (Kiln's kernels, library calls, collectives) as a
// kernel, as cuBLAS's and NCCL's kernels are on CUDA. The "kind" metadata
// tells them apart.
struct Classified {
  ActivityType type;
  const char* kind;
};

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

class Classifier {
 public:
  Classifier() {
    for (const auto& [name, counts] : op_counts()) {
      if (counts.by_path[static_cast<int>(OpPath::kLibrary)] > 0) library_ops_.insert(name);
    }
  }
  Classified operator()(const std::string& name) const {
    if (starts_with(name, "aten::copy_") || starts_with(name, "aten::_copy_from") ||
        starts_with(name, "aten::_local_scalar_dense")) {
      return {ActivityType::GPU_MEMCPY, "copy"};
    }
    if (starts_with(name, "aten::fill_") || starts_with(name, "aten::zero_")) {
      return {ActivityType::GPU_MEMSET, "fill"};
    }
    if (library_ops_.count(name) > 0) return {ActivityType::CONCURRENT_KERNEL, "library"};
    return {ActivityType::CONCURRENT_KERNEL, "kernel"};
  }

 private:
  std::set<std::string> library_ops_;
};

// Activities point at the span they belong to; Kineto's copies of them outlive
// the session, so the span lives as long as the process.
const libkineto::TraceSpan& device_span() {
  static const libkineto::TraceSpan* span = new libkineto::TraceSpan(0, 0, "kiln");
  return *span;
}

class DeviceActivitySession : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    device_trace::start();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    device_trace::stop();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0,
                 INT64_MAX);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t start_time, int64_t end_time) override {
    const Classifier classify;
    for (const device_trace::Activity& recorded : device_trace::take()) {
      if (recorded.start_ns < start_time || recorded.end_ns > end_time) continue;
      const std::string name = recorded.name;
      const Classified kind = recorded.kind == device_trace::Activity::Kind::kCollective
                                  ? Classified{ActivityType::CONCURRENT_KERNEL, "collective"}
                                  : classify(name);
      libkineto::GenericTraceActivity activity(device_span(), kind.type, name);
      activity.startTime = recorded.start_ns;
      activity.endTime = recorded.end_ns;
      activity.id = static_cast<int32_t>(recorded.correlation);
      activity.device = recorded.device;
      activity.resource = recorded.stream;
      activity.threadId = static_cast<int32_t>(recorded.stream);
      if (recorded.correlation != 0) activity.linked = linked_activity(static_cast<int32_t>(recorded.correlation));
      activity.addMetadataQuoted("kind", kind.kind);
      activity.addMetadataQuoted("device", "kiln:" + std::to_string(recorded.device));
      activity.addMetadataQuoted("stream", std::to_string(recorded.stream));
      activity.addMetadataQuoted("correlation", std::to_string(recorded.correlation));
      activity.addMetadataQuoted("launch", recorded.queued ? "queued" : "inline");
      logger.handleGenericActivity(activity);
      streams_.insert({recorded.device, recorded.stream});
    }
    status_ = libkineto::TraceStatus::READY;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    int device = streams_.empty() ? 0 : streams_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, kSortIndexBase + device, "kiln", "kiln " + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& [device, stream] : streams_) {
      infos.push_back(libkineto::ResourceInfo{stream, stream, device,
                                              "kiln:" + std::to_string(device) + " stream " +
                                                  std::to_string(stream)});
    }
    return infos;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

  void pushCorrelationId(uint64_t id) override { device_trace::push_correlation(id); }
  void popCorrelationId() override { device_trace::pop_correlation(); }

 private:
  // Below the host's tracks in the trace viewer, as Kineto puts GPUs.
  static constexpr int64_t kSortIndexBase = 0x1000000;
  std::set<std::pair<int, int64_t>> streams_;
};

class DeviceActivityProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& config) override {
    // Only a profile that asked for the device's activities records them.
    for (ActivityType type : activity_types) {
      if (activities_.count(type) > 0) return std::make_unique<DeviceActivitySession>();
    }
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t start_time_ms, int64_t duration_ms, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  const std::string name_ = "kiln";
  const std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                           ActivityType::GPU_MEMSET};
};

REGISTER_PRIVATEUSE1_PROFILER(DeviceActivityProfiler);

}  // namespace
}  // namespace kiln::torch_integration
