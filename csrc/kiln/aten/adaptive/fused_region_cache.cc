#include "kiln/aten/adaptive/fused_region_cache.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <c10/util/Exception.h>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/base/logging.h"
#include "kiln/base/thread_name.h"

namespace kiln::torch_integration::adaptive {
namespace {

constexpr char kFusedRegionName[] = "kiln::adaptive_region";

enum class SlotState : uint8_t { kCompiling, kReady, kFailed };

struct Slot {
  SlotState state = SlotState::kCompiling;
  KernelEntry entry = nullptr;
};

struct Job {
  std::string key;
  ir::Kernel kernel;
};

class Compiler {
 public:
  ~Compiler() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      jobs_.clear();
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  KernelEntry find_or_queue(const std::string& key, const std::function<ir::Kernel()>& build) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = slots_.find(key);
      if (found != slots_.end()) return found->second.state == SlotState::kReady ? found->second.entry : nullptr;
      slots_.emplace(key, Slot{});
      ++stats_.keys;
      ++stats_.compiles_pending;
    }
    ir::Kernel kernel = build();
    if (synchronous_) {
      finish(key, compile(key, kernel));
      std::lock_guard<std::mutex> lock(mutex_);
      return slots_[key].entry;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(Job{key, std::move(kernel)});
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    work_.notify_one();
    return nullptr;
  }

  KernelEntry find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = slots_.find(key);
    return found != slots_.end() && found->second.state == SlotState::kReady ? found->second.entry : nullptr;
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return stats_.compiles_pending == 0; });
  }

  void set_synchronous(bool synchronous) { synchronous_ = synchronous; }
  bool synchronous() const { return synchronous_; }

  FusedRegionCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void clear() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return stats_.compiles_pending == 0; });
    slots_.clear();
    stats_ = FusedRegionCacheStats{};
  }

 private:
  static KernelEntry compile(const std::string& key, const ir::Kernel& kernel) {
    try {
      return compiled::build_kernel(key, kFusedRegionName, [&]() { return kernel; });
    } catch (const c10::Error& error) {
      report_failure(error.what_without_backtrace());
    } catch (const std::exception& error) {
      report_failure(error.what());
    }
    return nullptr;
  }

  static void report_failure(const char* what) {
    KILN_LOG(kWarning, std::string("adaptive eager: a fused region did not compile, so its ops run one "
                                   "by one (please report this): ") + what);
  }

  void finish(const std::string& key, KernelEntry entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = slots_.find(key);
    if (found != slots_.end()) {
      found->second.state = entry != nullptr ? SlotState::kReady : SlotState::kFailed;
      found->second.entry = entry;
    }
    ++(entry != nullptr ? stats_.kernels_compiled : stats_.compile_failures);
    if (--stats_.compiles_pending == 0) idle_.notify_all();
  }

  void run() {
    set_current_thread_name("kiln-fuse-compile");
    // Lower this thread's priority (Linux: per thread), and so the compiler's.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      work_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      KernelEntry entry = compile(job.key, job.kernel);
      finish(job.key, entry);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::unordered_map<std::string, Slot> slots_;
  std::deque<Job> jobs_;
  FusedRegionCacheStats stats_;
  std::atomic<bool> synchronous_{false};
  bool stopping_ = false;
  std::thread thread_;
};

Compiler& compiler() {
  static Compiler instance;
  return instance;
}

}  // namespace

KernelEntry fused_kernel_for(const std::string& key, const std::function<ir::Kernel()>& build) {
  return compiler().find_or_queue(key, build);
}

KernelEntry fused_kernel_if_ready(const std::string& key) { return compiler().find(key); }

void set_synchronous_compiles(bool synchronous) { compiler().set_synchronous(synchronous); }

bool synchronous_compiles() { return compiler().synchronous(); }

void wait_for_compiles() { compiler().wait(); }

FusedRegionCacheStats fused_region_cache_stats() { return compiler().stats(); }

void clear_fused_region_cache() { compiler().clear(); }

}  // namespace kiln::torch_integration::adaptive
