#include "kiln/compiler/kernel_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kiln/base/config.h"
#include "kiln/base/hash.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using EntryFunction = int (*)(int);

// Kernel number `n`: returns x + n. Sources differ, so each has its own key.
KernelSource test_source(int n, const std::string& name = "") {
  KernelSource source;
  source.name = name.empty() ? "test_add_" + std::to_string(n) : name;
  source.ir_text = "kernel " + source.name + " { out = x + " + std::to_string(n) + " }\n";
  source.c_source = "int kiln_test_entry(int x) { return x + " + std::to_string(n) + "; }\n";
  source.entry_symbol = "kiln_test_entry";
  return source;
}

std::string read_text(const std::string& path) {
  std::ifstream input(path, std::ios::binary);
  std::stringstream text;
  text << input.rdbuf();
  return text.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

bool exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

// Every file under `directory` whose name ends with `suffix`.
std::set<std::string> files_ending(const std::string& directory, const std::string& suffix) {
  std::set<std::string> found;
  if (!exists(directory)) return found;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(directory)) {
    std::string path = entry.path().string();
    if (path.size() >= suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.insert(path);
    }
  }
  return found;
}

std::string only(const std::set<std::string>& paths) {
  EXPECT_EQ(paths.size(), 1u);
  return paths.empty() ? std::string() : *paths.begin();
}

int call(void* function, int x) { return reinterpret_cast<EntryFunction>(function)(x); }

class KernelCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln-kernel-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(root_, error);
  }

  KernelCache::Options options() const {
    KernelCache::Options options;
    options.directory = root_ + "/kernels";
    options.size_limit_bytes = uint64_t{1} << 30;
    options.compiler = "cc";
    return options;
  }

  // A generator that counts its calls.
  std::function<StatusOr<KernelSource>()> generator(KernelSource source, int* calls = nullptr) {
    return [source, calls]() -> StatusOr<KernelSource> {
      if (calls != nullptr) ++*calls;
      return source;
    };
  }

  // Loads `source` and checks the result computes x + n.
  void* load_ok(KernelCache& cache, const std::string& signature, int n) {
    StatusOr<void*> loaded = cache.load(signature, generator(test_source(n)));
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    if (!loaded.ok()) return nullptr;
    EXPECT_EQ(call(loaded.value(), 10), 10 + n);
    return loaded.value();
  }

  // Builds kernel `n` in a child process, so this process has never loaded
  // the object (dlopen would otherwise hand back the copy already mapped).
  void build_in_child(int n) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      KernelCache cache(options());
      StatusOr<void*> loaded = cache.load("child", generator(test_source(n)));
      std::_Exit(loaded.ok() && call(loaded.value(), 1) == 1 + n ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }

  std::string root_;
};

TEST_F(KernelCacheTest, CompilesOnceThenServesFromMemory) {
  KernelCache cache(options());
  EXPECT_EQ(cache.lookup("add|i32"), nullptr);
  int calls = 0;
  StatusOr<void*> first = cache.load("add|i32", generator(test_source(1), &calls));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(call(first.value(), 41), 42);
  EXPECT_EQ(calls, 1);

  EXPECT_EQ(cache.lookup("add|i32"), first.value());
  StatusOr<void*> again = cache.load("add|i32", generator(test_source(1), &calls));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), first.value());
  EXPECT_EQ(calls, 1) << "a signature in memory must not be generated again";
  EXPECT_EQ(cache.lookup("add|f32"), nullptr);

  CompilerStats stats = cache.stats();
  EXPECT_EQ(stats.kernels_compiled, 1u);
  EXPECT_EQ(stats.memory_hits, 2u);  // one lookup, one load
  EXPECT_EQ(stats.disk_hits, 0u);
  EXPECT_EQ(stats.compile_failures, 0u);
  EXPECT_GT(stats.compile_seconds, 0.0);

  // One entry on disk: <dir>/<first two hex digits>/<key>.so, .meta and .lock.
  std::string object = only(files_ending(root_ + "/kernels", ".so"));
  std::string key = fs::path(object).stem().string();
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(fs::path(object).parent_path().filename().string(), key.substr(0, 2));
  std::string metadata = read_text(root_ + "/kernels/" + key.substr(0, 2) + "/" + key + ".meta");
  EXPECT_NE(metadata.find("size " + std::to_string(fs::file_size(object))), std::string::npos);
  EXPECT_TRUE(exists(root_ + "/kernels/" + key.substr(0, 2) + "/" + key + ".lock"));
  EXPECT_TRUE(files_ending(root_ + "/kernels", ".c").empty()) << "the compiled source is removed";

  cache.reset_stats();
  stats = cache.stats();
  EXPECT_EQ(stats.kernels_compiled + stats.memory_hits + stats.disk_hits, 0u);
  EXPECT_EQ(stats.compile_seconds, 0.0);
}

TEST_F(KernelCacheTest, SecondCacheOnTheSameFolderHitsTheDisk) {
  KernelCache first(options());
  load_ok(first, "add", 2);
  KernelCache second(options());
  int calls = 0;
  StatusOr<void*> loaded = second.load("add", generator(test_source(2), &calls));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(call(loaded.value(), 1), 3);
  EXPECT_EQ(calls, 1);  // the source is needed for the key
  EXPECT_EQ(second.stats().kernels_compiled, 0u);
  EXPECT_EQ(second.stats().disk_hits, 1u);
}

TEST_F(KernelCacheTest, OneSourceUnderTwoSignaturesCompilesOnce) {
  KernelCache cache(options());
  void* a = load_ok(cache, "add|a", 3);
  void* b = load_ok(cache, "add|b", 3);
  EXPECT_EQ(a, b);
  EXPECT_EQ(cache.stats().kernels_compiled, 1u);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
  EXPECT_EQ(cache.lookup("add|b"), a);
}

// How an entry on disk gets damaged.
enum class Damage { kTruncated, kOverwritten, kGarbageWithValidChecksum, kNoMetadata, kBadMetadata };

class DamagedEntryTest : public KernelCacheTest, public testing::WithParamInterface<Damage> {};

TEST_P(DamagedEntryTest, IsDeletedAndRebuilt) {
  build_in_child(4);
  std::string object = only(files_ending(root_ + "/kernels", ".so"));
  std::string metadata = object.substr(0, object.size() - 3) + ".meta";
  std::string bytes = read_text(object);
  switch (GetParam()) {
    case Damage::kTruncated:
      write_text(object, bytes.substr(0, bytes.size() / 2));
      break;
    case Damage::kOverwritten:
      write_text(object, std::string(bytes.size(), 'x'));
      break;
    case Damage::kGarbageWithValidChecksum: {
      // The checksum matches, so only dlopen() can tell.
      std::string garbage(bytes.size(), 'x');
      write_text(object, garbage);
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx",
                    static_cast<unsigned long long>(hash_64(garbage)));
      std::string text = read_text(metadata);
      size_t at = text.find("hash ");
      ASSERT_NE(at, std::string::npos);
      text.replace(at + 5, 16, hash);
      write_text(metadata, text);
      break;
    }
    case Damage::kNoMetadata:
      ASSERT_EQ(std::remove(metadata.c_str()), 0);
      break;
    case Damage::kBadMetadata:
      write_text(metadata, "\x01\x02 not metadata");
      break;
  }

  KernelCache cache(options());
  load_ok(cache, "add", 4);
  EXPECT_EQ(cache.stats().kernels_compiled, 1u);
  EXPECT_EQ(cache.stats().disk_hits, 0u);
  EXPECT_EQ(cache.stats().compile_failures, 0u);
  EXPECT_EQ(read_text(object), bytes) << "the entry is rebuilt in place";

  // The rebuilt entry is sound: another cache gets a disk hit.
  KernelCache next(options());
  load_ok(next, "add", 4);
  EXPECT_EQ(next.stats().disk_hits, 1u);
  EXPECT_EQ(next.stats().kernels_compiled, 0u);
}

std::string damage_name(const testing::TestParamInfo<Damage>& info) {
  static const char* const kNames[] = {"Truncated", "Overwritten", "GarbageWithValidChecksum",
                                       "NoMetadata", "BadMetadata"};
  return kNames[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(KernelCache, DamagedEntryTest,
                         testing::Values(Damage::kTruncated, Damage::kOverwritten,
                                         Damage::kGarbageWithValidChecksum, Damage::kNoMetadata,
                                         Damage::kBadMetadata),
                         damage_name);

TEST_F(KernelCacheTest, CompileFailureNamesTheKernelAndKeepsTheSource) {
  KernelCache cache(options());
  KernelSource broken = test_source(5, "broken_kernel");
  broken.c_source = "int kiln_test_entry(int x) { return x + ; }\n";
  StatusOr<void*> failed = cache.load("broken", generator(broken));
  ASSERT_FALSE(failed.ok());
  const std::string& message = failed.status().message();
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);
  EXPECT_NE(message.find("broken_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("error"), std::string::npos) << "compiler diagnostics: " << message;
  size_t at = message.find("saved at ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string saved = message.substr(at + 9, message.find('\n', at) - at - 9);
  EXPECT_EQ(saved.rfind(root_ + "/kernels/failed/broken_kernel-", 0), 0u) << saved;
  EXPECT_EQ(read_text(saved), broken.c_source);
  EXPECT_NE(message.find(saved + ":"), std::string::npos)
      << "diagnostics should point at the saved file: " << message;
  EXPECT_EQ(cache.stats().compile_failures, 1u);
  EXPECT_EQ(cache.stats().kernels_compiled, 0u);

  // Consistent afterwards: no entry, no lock held, nothing remembered.
  EXPECT_TRUE(files_ending(root_ + "/kernels", ".so").empty());
  EXPECT_TRUE(files_ending(root_ + "/kernels", ".meta").empty());
  for (const std::string& lock : files_ending(root_ + "/kernels", ".lock")) {
    int descriptor = open(lock.c_str(), O_RDWR);
    ASSERT_GE(descriptor, 0);
    EXPECT_EQ(flock(descriptor, LOCK_EX | LOCK_NB), 0) << lock << " is still held";
    close(descriptor);
  }
  EXPECT_EQ(cache.lookup("broken"), nullptr);
  load_ok(cache, "other", 6);
  // The same signature is tried again, and a fixed source now loads.
  int calls = 0;
  StatusOr<void*> fixed = cache.load("broken", generator(test_source(5), &calls));
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(call(fixed.value(), 0), 5);
  EXPECT_EQ(cache.stats().compile_failures, 1u);
}

TEST_F(KernelCacheTest, GeneratorAndToolchainErrorsAreReturned) {
  KernelCache cache(options());
  StatusOr<void*> failed =
      cache.load("gen", []() -> StatusOr<KernelSource> { return invalid_argument("no such op"); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("gen"), std::string::npos);
  EXPECT_NE(failed.status().message().find("no such op"), std::string::npos);

  KernelCache::Options no_compiler = options();
  no_compiler.compiler = "/nonexistent/kiln-cc";
  KernelCache without(no_compiler);
  failed = without.load("add", generator(test_source(7)));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(failed.status().message().find("KILN_CC"), std::string::npos);
  EXPECT_EQ(without.stats().compile_failures, 0u);
}

TEST_F(KernelCacheTest, SizeBoundEvictsTheLeastRecentlyUsed) {
  std::string kernels = root_ + "/kernels";
  {
    KernelCache unbounded(options());
    load_ok(unbounded, "a", 11);
  }
  std::string a = only(files_ending(kernels, ".so"));
  uint64_t entry_bytes = fs::file_size(a) + fs::file_size(a.substr(0, a.size() - 3) + ".meta");

  KernelCache::Options bounded = options();
  bounded.size_limit_bytes = 2 * entry_bytes + entry_bytes / 2;  // room for two entries
  KernelCache cache(bounded);
  load_ok(cache, "b", 12);
  std::set<std::string> objects = files_ending(kernels, ".so");
  ASSERT_EQ(objects.size(), 2u);
  objects.erase(a);
  std::string b = only(objects);
  EXPECT_EQ(cache.stats().disk_evictions, 0u);

  load_ok(cache, "a", 11);  // a disk hit makes a the most recently used
  EXPECT_EQ(cache.stats().disk_hits, 1u);
  load_ok(cache, "c", 13);  // three entries do not fit: b goes
  EXPECT_EQ(cache.stats().disk_evictions, 1u);
  objects = files_ending(kernels, ".so");
  EXPECT_EQ(objects.size(), 2u);
  EXPECT_TRUE(objects.count(a));
  EXPECT_FALSE(objects.count(b));
  std::string b_base = b.substr(0, b.size() - 3);
  EXPECT_FALSE(exists(b_base + ".meta"));
  EXPECT_FALSE(exists(b_base + ".lock"));
  // b's function was handed out before: still callable after its file went.
  EXPECT_EQ(call(cache.lookup("b"), 0), 12);

  // The entry just written is never evicted, even if it alone is too big.
  KernelCache::Options tiny = options();
  tiny.size_limit_bytes = 1;
  KernelCache small(tiny);
  load_ok(small, "d", 14);
  EXPECT_EQ(small.stats().disk_evictions, 2u);
  EXPECT_EQ(files_ending(kernels, ".so").size(), 1u);
}

TEST_F(KernelCacheTest, LeftoversOfAKilledCompileAreRemovedOnceStale) {
  // What a process killed during a compile or a write leaves in an entry's
  // folder: the key's C source and temporary files. Removed when an entry is
  // added, once older than any live compile could be.
  std::string kernels = root_ + "/kernels";
  KernelCache cache(options());
  load_ok(cache, "a", 21);
  std::string folder = fs::path(only(files_ending(kernels, ".so"))).parent_path().string();
  const std::string key_source = folder + "/0123456789abcdef0123456789abcdef.c";
  const std::string stale[] = {key_source, folder + "/.kiln-object-AbCdEf", folder + "/.kiln-write-AbCdEf"};
  const std::string fresh = folder + "/.kiln-object-GhIjKl";
  timespec two_hours_ago;
  clock_gettime(CLOCK_REALTIME, &two_hours_ago);
  two_hours_ago.tv_sec -= 7200;
  const timespec times[2] = {two_hours_ago, two_hours_ago};
  for (const std::string& path : stale) {
    write_text(path, "left behind");
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  write_text(fresh, "a compile still running");
  load_ok(cache, "b", 22);
  for (const std::string& path : stale) EXPECT_FALSE(exists(path)) << path;
  EXPECT_TRUE(exists(fresh));
  EXPECT_EQ(cache.stats().stale_files_removed, 3u);
  EXPECT_EQ(call(cache.lookup("a"), 0), 21);
}

TEST_F(KernelCacheTest, DisabledDiskCacheWritesNothingThere) {
  KernelCache::Options disabled = options();
  disabled.disk_enabled = false;
  KernelCache cache(disabled);
  load_ok(cache, "add", 21);
  EXPECT_EQ(cache.stats().kernels_compiled, 1u);
  KernelCache other(disabled);
  load_ok(other, "add", 21);
  EXPECT_EQ(other.stats().kernels_compiled, 1u) << "no disk hit when the disk cache is off";
  EXPECT_EQ(other.stats().disk_hits, 0u);

  // A failure keeps its source in the temporary folder, not the cache folder.
  KernelSource broken = test_source(22, "broken_private");
  broken.c_source = "this is not C\n";
  StatusOr<void*> failed = cache.load("broken", generator(broken));
  ASSERT_FALSE(failed.ok());
  const std::string& message = failed.status().message();
  size_t at = message.find("saved at ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string saved = message.substr(at + 9, message.find('\n', at) - at - 9);
  EXPECT_TRUE(exists(saved)) << saved;
  EXPECT_EQ(saved.find(root_), std::string::npos);
  std::remove(saved.c_str());
  std::remove((saved.substr(0, saved.size() - 2) + ".ir").c_str());

  EXPECT_FALSE(exists(root_ + "/kernels"));
  EXPECT_TRUE(fs::is_empty(root_));
}

TEST_F(KernelCacheTest, DumpFolderReceivesIrAndSource) {
  KernelCache::Options dumping = options();
  dumping.dump_directory = root_ + "/dump/nested";
  KernelCache cache(dumping);
  load_ok(cache, "add", 31);
  std::string key = fs::path(only(files_ending(root_ + "/kernels", ".so"))).stem().string();
  std::string base = dumping.dump_directory + "/test_add_31-" + key;
  EXPECT_EQ(read_text(base + ".ir"), test_source(31).ir_text);
  EXPECT_EQ(read_text(base + ".c"), test_source(31).c_source);

  // A disk hit is dumped too, and a failing kernel's source is kept there.
  fs::remove_all(dumping.dump_directory);
  KernelCache second(dumping);
  load_ok(second, "add", 31);
  EXPECT_EQ(second.stats().disk_hits, 1u);
  EXPECT_TRUE(exists(base + ".c"));
  KernelSource broken = test_source(32, "broken/name with spaces");
  broken.c_source = "int kiln_test_entry(int x) { return y; }\n";
  StatusOr<void*> failed = second.load("broken", generator(broken));
  ASSERT_FALSE(failed.ok());
  std::string prefix = dumping.dump_directory + "/broken_name_with_spaces-";
  EXPECT_NE(failed.status().message().find("saved at " + prefix), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(files_ending(dumping.dump_directory, ".c").size(), 2u);
}

TEST_F(KernelCacheTest, ConcurrentLoadsOfOneSignatureCompileOnce) {
  KernelCache cache(options());
  std::atomic<int> calls{0};
  auto generate = [&calls]() -> StatusOr<KernelSource> {
    ++calls;
    return test_source(41);
  };
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<void*> results(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      StatusOr<void*> loaded = cache.load("add", generate);
      if (loaded.ok()) results[i] = loaded.value();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(calls.load(), 1);
  for (void* result : results) EXPECT_EQ(result, results[0]);
  ASSERT_NE(results[0], nullptr);
  EXPECT_EQ(call(results[0], 1), 42);
  EXPECT_EQ(cache.stats().kernels_compiled, 1u);
  EXPECT_EQ(cache.stats().memory_hits, static_cast<uint64_t>(kThreads - 1));
}

TEST_F(KernelCacheTest, TwoCachesInThreadsCompileOnce) {
  KernelCache first(options()), second(options());
  std::latch start(2);
  StatusOr<void*> results[2] = {internal_error("not run"), internal_error("not run")};
  std::thread a([&] {
    start.arrive_and_wait();
    results[0] = first.load("add", generator(test_source(51)));
  });
  std::thread b([&] {
    start.arrive_and_wait();
    results[1] = second.load("add", generator(test_source(51)));
  });
  a.join();
  b.join();
  ASSERT_TRUE(results[0].ok() && results[1].ok());
  EXPECT_EQ(call(results[1].value(), 0), 51);
  EXPECT_EQ(first.stats().kernels_compiled + second.stats().kernels_compiled, 1u);
  EXPECT_EQ(first.stats().disk_hits + second.stats().disk_hits, 1u);
}

TEST_F(KernelCacheTest, TwoProcessesStartedTogetherCompileOnce) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  pid_t children[2];
  for (pid_t& child : children) {
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(gate[1]);
      char byte;
      while (read(gate[0], &byte, 1) > 0) {  // returns 0 when the parent closes the pipe
      }
      KernelCache cache(options());
      StatusOr<void*> loaded = cache.load("add", generator(test_source(61)));
      if (!loaded.ok() || call(loaded.value(), 0) != 61) std::_Exit(100);
      // Exit code: 10 * compiles + disk hits.
      std::_Exit(static_cast<int>(10 * cache.stats().kernels_compiled + cache.stats().disk_hits));
    }
  }
  close(gate[0]);
  close(gate[1]);  // both start now
  int compiles = 0, disk_hits = 0;
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 100) << "a child failed to load the kernel";
    compiles += WEXITSTATUS(status) / 10;
    disk_hits += WEXITSTATUS(status) % 10;
  }
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(disk_hits, 1);
  EXPECT_EQ(files_ending(root_ + "/kernels", ".so").size(), 1u);
}

TEST(KernelCacheInstance, UsesTheConfiguration) {
  KernelCache::Options options = KernelCache::options_from_config();
  EXPECT_EQ(options.directory, config().cache_dir() + "/kernels");
  EXPECT_EQ(options.size_limit_bytes, config().cache_size_bytes());
  EXPECT_EQ(options.compiler, config().c_compiler());
  EXPECT_EQ(&KernelCache::instance(), &KernelCache::instance());
  EXPECT_EQ(KernelCache::instance().options().directory, options.directory);
}

}  // namespace
}  // namespace kiln
