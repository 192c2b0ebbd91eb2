// KernelCache: compiled kernels by signature, in memory and on disk.
//
// An eager op asks lookup() for its kernel on every call (a shared-lock hash
// lookup). On a miss it calls load() with a generator of the kernel's source;
// the cache then tries the disk cache and compiles only when that misses.
// docs/design/kernel_cache.md describes the layout on disk, the key, the locking and
// the eviction.
//
// Thread-safety: every method may be called from several threads at once.
// Several KernelCache objects (in one process or in many) may share a folder:
// a per-key file lock makes each kernel compile once.
//
// Lifetime: function pointers handed out stay valid for the life of the
// process, even after the KernelCache that loaded them is destroyed (the
// loaded objects are never unloaded).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kiln/base/hash.h"
#include "kiln/base/status.h"
#include "kiln/compiler/toolchain.h"

namespace kiln {

// Part of every disk-cache key. Bump it when generated code changes meaning
// without its text changing (the calling convention, say), so that objects
// built by an older Kiln are never reused.
inline constexpr std::string_view kCodegenVersion = "kiln-codegen-1";

// What the code generator hands the cache on a miss.
struct KernelSource {
  std::string name;          // readable, e.g. "add_f32_r2_strided"; in file names and errors
  std::string ir_text;       // printed IR, for KILN_DUMP_DIR and errors
  std::string c_source;      // a complete C translation unit
  std::string entry_symbol;  // the exported function to resolve
};

struct CompilerStats {
  uint64_t kernels_compiled = 0;  // successful compiles
  uint64_t memory_hits = 0;       // lookup() hits, and load() calls served from memory
  uint64_t disk_hits = 0;         // kernels loaded from the disk cache
  uint64_t compile_failures = 0;  // compiles (or loads of a fresh object) that failed
  uint64_t disk_evictions = 0;    // entries removed to keep under the size bound
  uint64_t stale_files_removed = 0;  // leftovers of processes killed mid-compile, removed
  double compile_seconds = 0;     // wall time spent in the compiler
};

class KernelCache {
 public:
  struct Options {
    // Folder of the disk cache (config: KILN_CACHE_DIR/kernels). Created as needed.
    std::string directory;
    // Bound on the total size of the entries in `directory`.
    uint64_t size_limit_bytes = uint64_t{1} << 30;
    // False: compile in a private temporary folder, never touch `directory`.
    bool disk_enabled = true;
    // When not empty, <name>-<key>.ir and .c of every kernel loaded go here.
    std::string dump_directory;
    // The C compiler (KILN_CC).
    std::string compiler = "cc";
    // A compiler run taking longer is stopped and fails (KILN_COMPILE_TIMEOUT).
    double compile_timeout_seconds = 300;
  };

  // Options from config(): KILN_CACHE_DIR, KILN_CACHE_SIZE,
  // KILN_DISABLE_DISK_CACHE, KILN_DUMP_DIR, KILN_CC and KILN_COMPILE_TIMEOUT.
  static Options options_from_config();
  // The process-wide cache, with options_from_config(); never destroyed.
  static KernelCache& instance();

  // Touches nothing on disk; the toolchain is probed on the first load miss.
  explicit KernelCache(Options options);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  const Options& options() const { return options_; }

  // Fast path, for every eager op: the entry function for `signature` (a short
  // string such as "add|f32,f32->f32|r2|strided") if this cache has loaded it,
  // else nullptr. A hit counts as a memory hit.
  void* lookup(std::string_view signature);

  // Slow path: the entry function for `signature`. `generate` is called only
  // when the signature is not in memory; the disk cache is tried for its
  // source, and the source is compiled when that misses. Concurrent calls for
  // one signature generate and compile once. A failed generate() is returned
  // as is (with context); a failed compile is kInternal naming the kernel, the
  // place its source was saved, and the compiler's diagnostics. Nothing is
  // remembered about a failure: a later call tries again.
  StatusOr<void*> load(std::string_view signature,
                       const std::function<StatusOr<KernelSource>()>& generate);

  CompilerStats stats() const;
  void reset_stats();

 private:
  using FunctionMap = StringMap<void*>;

  StatusOr<void*> load_slow(const std::string& signature,
                            const std::function<StatusOr<KernelSource>()>& generate);
  StatusOr<const Toolchain*> toolchain();
  std::string key_of(const KernelSource& source, const Toolchain& toolchain) const;
  // The entry for `key`: from the disk cache, else compiled into it.
  StatusOr<void*> load_through_disk(const KernelSource& source, const std::string& key,
                                    const Toolchain& toolchain);
  // Compiles in a private temporary folder (disk cache disabled).
  StatusOr<void*> load_without_disk(const KernelSource& source, const std::string& key,
                                    const Toolchain& toolchain);
  // Compiles `source` to `object_path`, timing it; on failure saves the source
  // and returns the error to hand the caller.
  Status compile(const KernelSource& source, const std::string& key,
                 const std::string& source_path, const std::string& object_path,
                 const Toolchain& toolchain);
  // dlopen + dlsym; the library is kept for the life of the process.
  StatusOr<void*> open_entry(const std::string& object_path, const std::string& entry_symbol);
  void dump(const KernelSource& source, const std::string& key);
  void evict_beyond_limit(const std::string& keep_key);

  const Options options_;

  mutable std::shared_mutex mutex_;  // guards functions_ and key_functions_
  FunctionMap functions_;            // by signature
  FunctionMap key_functions_;        // by disk key: one source under two signatures

  // One mutex per signature being loaded, so a signature compiles once.
  std::mutex in_flight_mutex_;
  std::unordered_map<std::string, std::shared_ptr<std::mutex>> in_flight_;

  std::mutex toolchain_mutex_;
  std::optional<Toolchain> toolchain_;

  std::atomic<uint64_t> kernels_compiled_{0};
  std::atomic<uint64_t> memory_hits_{0};
  std::atomic<uint64_t> disk_hits_{0};
  std::atomic<uint64_t> compile_failures_{0};
  std::atomic<uint64_t> disk_evictions_{0};
  std::atomic<uint64_t> stale_files_removed_{0};
  std::atomic<uint64_t> compile_nanoseconds_{0};
  std::atomic<bool> warned_unusable_{false};  // the warning that the disk cache cannot be written, once
};

}  // namespace kiln
