// Config: every KILN_* environment variable is read here and nowhere else.
//
// The environment is read once, on the first call to config(); the result is a
// process-wide snapshot. A few settings (fallback mode) may be changed later
// through the setters, which is how the Python API overrides them. All methods
// are thread-safe. docs/reference/configuration.md lists every variable.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "kiln/base/status.h"

namespace kiln {

// What happens when an op has no Kiln kernel and must run on the CPU.
enum class FallbackMode {
  kWarn,    // run on the CPU, warn once per op (default)
  kSilent,  // run on the CPU without a warning
  kError,   // refuse: raise NotImplementedError naming the op
};

// How float64 tensors live on the device.
enum class Float64Policy {
  kNative,   // stored and computed as float64 (default)
  kFloat32,  // stored and computed as float32, with a one-time warning
};

// Adaptive eager (aten/adaptive/): pointwise ops fused while the host runs ahead.
enum class AdaptiveEagerMode {
  kOn = 0,  // hold and fuse ops while the stream has work (default)
  kOff,     // launch every op on its own
  kAlways,  // hold ops even on an idle stream: tests and debugging
};

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

class Config {
 public:
  // KILN_NUM_DEVICES: number of logical devices (default 1, at most 64).
  int num_devices() const { return num_devices_; }
  // KILN_DEVICE_MEMORY: capacity of each device in bytes. Accepts a plain byte
  // count or a number with a K/M/G/T(iB) suffix. Default: half of physical
  // memory shared among the devices.
  uint64_t device_memory_bytes() const { return device_memory_bytes_; }
  // KILN_LAUNCH_BLOCKING=1: every launch runs before the enqueueing call returns.
  bool launch_blocking() const { return launch_blocking_; }
  // KILN_HOLD_QUEUED_TENSORS=1: queued work keeps every tensor it uses alive
  // until it ran, so memory is reused only then (for telling a suspected
  // stream-order bug apart; default 0: memory is reused in stream order, as
  // on CUDA, docs/design/memory.md).
  bool hold_queued_tensors() const { return hold_queued_tensors_; }
  // KILN_FALLBACK=warn|silent|error.
  FallbackMode fallback_mode() const;
  void set_fallback_mode(FallbackMode mode);
  // KILN_FLOAT64=native|float32.
  Float64Policy float64_policy() const;
  void set_float64_policy(Float64Policy policy);
  // KILN_ADAPTIVE_EAGER=on|off|always (also 1|0; default on).
  AdaptiveEagerMode adaptive_eager_mode() const { return adaptive_eager_mode_; }
  // KILN_LOG_LEVEL=error|warning|info|debug (default warning).
  LogLevel log_level() const { return log_level_; }
  // KILN_CC: the C compiler that builds kernels (default "cc", found on PATH).
  const std::string& c_compiler() const { return c_compiler_; }
  // KILN_COMPILE_TIMEOUT: seconds a compiler run may take before it is
  // stopped and the compile fails (default 300).
  double compile_timeout_seconds() const { return compile_timeout_seconds_; }
  // KILN_CACHE_DIR: root of Kiln's on-disk caches; compiled kernels live in its
  // kernels/ folder. Default $XDG_CACHE_HOME/kiln (when absolute), else
  // $HOME/.cache/kiln.
  const std::string& cache_dir() const { return cache_dir_; }
  // KILN_CACHE_SIZE: bound on the kernel cache's size on disk (a byte size as
  // for KILN_DEVICE_MEMORY; default 1GiB). Least recently used kernels go first.
  uint64_t cache_size_bytes() const { return cache_size_bytes_; }
  // KILN_DISABLE_DISK_CACHE=1: compile kernels in a private temporary folder
  // and neither read nor write the cache folder.
  bool disk_cache_disabled() const { return disk_cache_disabled_; }
  // KILN_DUMP_DIR: when set, the IR and C source of every kernel loaded are
  // written there. Empty when unset.
  const std::string& dump_dir() const { return dump_dir_; }
  // KILN_DISTRIBUTED_SHARED_MEMORY=0: collectives of a group whose ranks
  // share a host go through Gloo too, not through shared memory (default 1).
  bool distributed_shared_memory() const { return distributed_shared_memory_; }

  // Problems found while reading the environment (an unparsable value, which
  // was replaced by the default). Empty when all was well.
  const std::string& problems() const { return problems_; }

 private:
  friend const Config& config();
  friend Config& mutable_config();
  Config();

  int num_devices_ = 1;
  uint64_t device_memory_bytes_ = 0;
  bool launch_blocking_ = false;
  bool hold_queued_tensors_ = false;
  std::atomic<int> fallback_mode_{0};   // FallbackMode
  std::atomic<int> float64_policy_{0};  // Float64Policy
  AdaptiveEagerMode adaptive_eager_mode_ = AdaptiveEagerMode::kOn;
  LogLevel log_level_ = LogLevel::kWarning;
  std::string c_compiler_ = "cc";
  double compile_timeout_seconds_ = 300;
  std::string cache_dir_;
  uint64_t cache_size_bytes_ = uint64_t{1} << 30;
  bool disk_cache_disabled_ = false;
  std::string dump_dir_;
  bool distributed_shared_memory_ = true;
  std::string problems_;
};

// The process-wide configuration, read from the environment on first use.
const Config& config();
Config& mutable_config();

// Parses "4GiB", "512M", "1048576" into bytes.
StatusOr<uint64_t> parse_byte_size(const std::string& text);
StatusOr<FallbackMode> parse_fallback_mode(const std::string& text);
StatusOr<Float64Policy> parse_float64_policy(const std::string& text);
const char* fallback_mode_name(FallbackMode mode);
const char* float64_policy_name(Float64Policy policy);

}  // namespace kiln
