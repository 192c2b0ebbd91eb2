#include "kiln/compiler/kernel_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "kiln/base/config.h"
#include "kiln/base/hash.h"
#include "kiln/base/logging.h"
#include "kiln/compiler/private_folder.h"
#include "kiln/compiler/shared_library.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMetadataHeader = "kiln-kernel-cache 1";

std::string errno_text() { return std::strerror(errno); }

// The CPU's model and feature flags (/proc/cpuinfo), read once: objects are
// built with -march=native, so one machine's entry must not load on another.
const std::string& cpu_features() {
  static const std::string features = [] {
    std::ifstream input("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(input, line)) {
      auto value_of = [&line] {
        size_t colon = line.find(':');
        return colon == std::string::npos ? std::string() : line.substr(colon + 1);
      };
      // x86 says "model name" and "flags"; Arm says "CPU part" and "Features".
      if (model.empty() && (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0)) {
        model = value_of();
      } else if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) {
        flags = value_of();
      }
      if (!model.empty() && !flags.empty()) break;
    }
    return model + "|" + flags;
  }();
  return features;
}

// `name` reduced to characters safe in a file name, and not too long.
std::string file_name_part(const std::string& name) {
  std::string safe;
  for (char c : name.substr(0, 64)) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-' || c == '.';
    safe.push_back(keep ? c : '_');
  }
  return safe.empty() ? "kernel" : safe;
}

std::string hex_64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Checks that the folders on the way to an entry are the user's alone
// (private_folder.h): the cache root, its kernels folder `directory` and the
// entry's `folder`. Fails with the refusal when one is not.
Status check_entry_folders(const std::string& directory, const std::string& folder) {
  KILN_RETURN_IF_ERROR(check_private(fs::path(directory).parent_path().string(), "kernel cache folder"));
  KILN_RETURN_IF_ERROR(check_private(directory, "kernel cache folder"));
  return check_private(folder, "kernel cache folder");
}

bool read_file(const std::string& path, std::string& bytes) {
  std::ifstream input(path, std::ios::binary);
  if (!input) return false;
  std::stringstream text;
  text << input.rdbuf();
  bytes = text.str();
  return !input.bad();
}

Status write_all(int descriptor, const std::string& bytes, const std::string& path) {
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t count = ::write(descriptor, bytes.data() + written, bytes.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return internal_error("cannot write " + path + ": " + errno_text());
    written += static_cast<size_t>(count);
  }
  return Status();
}

Status write_file(const std::string& path, const std::string& bytes) {
  int descriptor = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (descriptor < 0) return internal_error("cannot create " + path + ": " + errno_text());
  Status status = write_all(descriptor, bytes, path);
  ::close(descriptor);
  return status;
}

// Writes `bytes` to a temporary file next to `path` and renames it into place,
// so a reader sees the old file or the whole new one, never a part.
Status write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string pattern = fs::path(path).parent_path().string() + "/.kiln-write-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int descriptor = mkostemp(name.data(), O_CLOEXEC);
  if (descriptor < 0) return internal_error("cannot create a file next to " + path + ": " + errno_text());
  Status status = write_all(descriptor, bytes, path);
  ::fchmod(descriptor, 0600);
  ::close(descriptor);
  if (status.ok() && std::rename(name.data(), path.c_str()) != 0) {
    status = internal_error("cannot rename a file to " + path + ": " + errno_text());
  }
  if (!status.ok()) std::remove(name.data());
  return status;
}

// Sets the modification time to now, at full precision (the kernel's own file
// times are only as fine as its clock tick): the LRU order of eviction.
void touch(const std::string& path) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  timespec times[2] = {now, now};
  utimensat(AT_FDCWD, path.c_str(), times, 0);
}

// An exclusive flock() on a lock file, held until destroyed. The lock file of
// an evicted entry is deleted, so after locking we check that the path still
// names the file we locked, and start over if not.
class FileLock {
 public:
  static StatusOr<FileLock> acquire(const std::string& path) { return lock(path, true); }
  // Empty when another holds the lock.
  static std::optional<FileLock> try_acquire(const std::string& path) {
    StatusOr<FileLock> result = lock(path, false);
    if (!result.ok()) return std::nullopt;
    return std::move(result.value());
  }

  FileLock(FileLock&& other) noexcept : descriptor_(std::exchange(other.descriptor_, -1)) {}
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock() {
    if (descriptor_ >= 0) ::close(descriptor_);  // closing releases the lock
  }

 private:
  explicit FileLock(int descriptor) : descriptor_(descriptor) {}

  static StatusOr<FileLock> lock(const std::string& path, bool wait) {
    for (;;) {
      // O_CLOEXEC: a compiler started while we hold the lock must not inherit it.
      int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (descriptor < 0) return internal_error("cannot open the lock " + path + ": " + errno_text());
      int result;
      do {
        result = ::flock(descriptor, wait ? LOCK_EX : LOCK_EX | LOCK_NB);
      } while (result != 0 && errno == EINTR);
      if (result != 0) {
        Status status = internal_error("cannot lock " + path + ": " + errno_text());
        ::close(descriptor);
        return status;
      }
      struct stat locked, named;
      if (::fstat(descriptor, &locked) == 0 && ::stat(path.c_str(), &named) == 0 &&
          locked.st_dev == named.st_dev && locked.st_ino == named.st_ino) {
        return FileLock(descriptor);
      }
      ::close(descriptor);  // evicted while we waited: lock the new file
    }
  }

  int descriptor_;
};

// The files of one disk-cache entry.
struct EntryPaths {
  std::string folder, object, metadata, lock;
};

EntryPaths entry_paths(const std::string& directory, const std::string& key) {
  std::string folder = directory + "/" + key.substr(0, 2);
  return {folder, folder + "/" + key + ".so", folder + "/" + key + ".meta",
          folder + "/" + key + ".lock"};
}

std::string metadata_text(const std::string& object_bytes, const KernelSource& source) {
  return std::string(kMetadataHeader) + "\nsize " + std::to_string(object_bytes.size()) +
         "\nhash " + hex_64(hash_64(object_bytes)) + "\nname " + file_name_part(source.name) +
         "\nentry " + source.entry_symbol + "\n";
}

// Empty if the entry's object matches its metadata, else what is wrong.
std::string verify_entry(const EntryPaths& paths) {
  std::string metadata, object;
  if (!read_file(paths.metadata, metadata)) return "no metadata file";
  if (!read_file(paths.object, object)) return "no object file";
  std::istringstream lines(metadata);
  std::string line, size, hash;
  if (!std::getline(lines, line) || line != kMetadataHeader) return "unrecognised metadata";
  while (std::getline(lines, line)) {
    if (line.rfind("size ", 0) == 0) size = line.substr(5);
    if (line.rfind("hash ", 0) == 0) hash = line.substr(5);
  }
  if (size.empty() || hash.empty()) return "incomplete metadata";
  if (size != std::to_string(object.size())) {
    return "object is " + std::to_string(object.size()) + " bytes, metadata says " + size;
  }
  if (hash != hex_64(hash_64(object))) return "checksum mismatch";
  return "";
}

void remove_entry_files(const EntryPaths& paths) {
  std::remove(paths.object.c_str());
  std::remove(paths.metadata.c_str());
}

bool is_key(const std::string& text) {
  return text.size() == 32 &&
         std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The names in a folder (not . and ..); empty if it cannot be read.
std::vector<std::string> list_directory(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* folder = ::opendir(path.c_str())) {
    while (const dirent* item = ::readdir(folder)) {
      std::string name = item->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(folder);
  }
  return names;
}

// Objects stay loaded for the life of the process: their function pointers
// have been handed out. Never destroyed, like the runtime.
void keep_forever(std::unique_ptr<SharedLibrary> library) {
  static std::mutex* mutex = new std::mutex;
  static auto* libraries = new std::vector<std::unique_ptr<SharedLibrary>>;
  std::lock_guard<std::mutex> lock(*mutex);
  libraries->push_back(std::move(library));
}

}  // namespace

KernelCache::Options KernelCache::options_from_config() {
  const Config& settings = config();
  Options options;
  options.directory = settings.cache_dir() + "/kernels";
  options.size_limit_bytes = settings.cache_size_bytes();
  options.disk_enabled = !settings.disk_cache_disabled();
  options.dump_directory = settings.dump_dir();
  options.compiler = settings.c_compiler();
  options.compile_timeout_seconds = settings.compile_timeout_seconds();
  return options;
}

KernelCache& KernelCache::instance() {
  static KernelCache* cache = new KernelCache(options_from_config());  // never destroyed
  return *cache;
}

KernelCache::KernelCache(Options options) : options_(std::move(options)) {}

KernelCache::~KernelCache() = default;

void* KernelCache::lookup(std::string_view signature) {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  auto found = functions_.find(signature);
  if (found == functions_.end()) return nullptr;
  memory_hits_.fetch_add(1, std::memory_order_relaxed);
  return found->second;
}

StatusOr<void*> KernelCache::load(std::string_view signature,
                                  const std::function<StatusOr<KernelSource>()>& generate) {
  if (void* function = lookup(signature)) return function;
  std::string key(signature);
  std::shared_ptr<std::mutex> flight;
  {
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    std::shared_ptr<std::mutex>& slot = in_flight_[key];
    if (!slot) slot = std::make_shared<std::mutex>();
    flight = slot;
  }
  StatusOr<void*> result = [&] {
    std::lock_guard<std::mutex> lock(*flight);
    return load_slow(key, generate);
  }();
  {
    // Copies of the slot are made and dropped only under in_flight_mutex_, so
    // the count says whether anyone else still waits on it.
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    flight.reset();
    auto slot = in_flight_.find(key);
    if (slot != in_flight_.end() && slot->second.use_count() == 1) in_flight_.erase(slot);
  }
  return result;
}

StatusOr<void*> KernelCache::load_slow(const std::string& signature,
                                       const std::function<StatusOr<KernelSource>()>& generate) {
  if (void* function = lookup(signature)) return function;  // loaded while we waited
  StatusOr<KernelSource> generated = generate();
  if (!generated.ok()) {
    return generated.status().with_context("generating the kernel for '" + signature + "'");
  }
  const KernelSource& source = generated.value();
  StatusOr<const Toolchain*> compiler = toolchain();
  if (!compiler.ok()) return compiler.status();
  std::string key = key_of(source, *compiler.value());

  void* function = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto found = key_functions_.find(key);
    if (found != key_functions_.end()) function = found->second;
  }
  if (function != nullptr) {  // the same source under another signature
    memory_hits_.fetch_add(1, std::memory_order_relaxed);
  } else {
    dump(source, key);
    StatusOr<void*> loaded = options_.disk_enabled
                                 ? load_through_disk(source, key, *compiler.value())
                                 : load_without_disk(source, key, *compiler.value());
    if (!loaded.ok()) return loaded.status();
    function = loaded.value();
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  functions_.emplace(signature, function);
  key_functions_.emplace(key, function);
  return function;
}

StatusOr<const Toolchain*> KernelCache::toolchain() {
  std::lock_guard<std::mutex> lock(toolchain_mutex_);
  if (!toolchain_) {
    StatusOr<Toolchain> probed = Toolchain::probe(options_.compiler, options_.compile_timeout_seconds);
    if (!probed.ok()) return probed.status();  // not remembered: a later load probes again
    toolchain_.emplace(probed.value());
  }
  return &*toolchain_;
}

std::string KernelCache::key_of(const KernelSource& source, const Toolchain& toolchain) const {
  // Each field with its length, so no two field lists give the same bytes.
  std::string identity = toolchain.identity();
  std::string material;
  for (std::string_view field : {std::string_view(source.c_source),
                                 std::string_view(source.entry_symbol), kCodegenVersion,
                                 std::string_view(identity), std::string_view(cpu_features())}) {
    material += std::to_string(field.size());
    material += ':';
    material += field;
  }
  return digest_hex(material);
}

StatusOr<void*> KernelCache::load_through_disk(const KernelSource& source, const std::string& key,
                                               const Toolchain& toolchain) {
  EntryPaths paths = entry_paths(options_.directory, key);
  Status ready = make_private_directories(paths.folder);
  if (ready.ok()) {
    // A folder someone else may write is refused, not worked around: it is
    // how foreign code would reach dlopen.
    Status refused = check_entry_folders(options_.directory, paths.folder);
    if (!refused.ok()) return refused.with_context("loading kernel '" + source.name + "'");
  }
  // The entry's files, loaded if they are private to this user and match
  // their metadata. A refusal is returned as an error with `problem` empty; a
  // damaged entry sets `problem`.
  auto open_verified = [&](std::string& problem) -> StatusOr<void*> {
    for (const auto& [path, what] :
         {std::pair{paths.object, "kernel object"}, std::pair{paths.metadata, "kernel cache entry"}}) {
      if (::access(path.c_str(), F_OK) != 0) continue;  // a missing file is damage, found below
      Status refused = check_private(path, what);
      if (!refused.ok()) return refused.with_context("loading kernel '" + source.name + "'");
    }
    problem = verify_entry(paths);
    if (!problem.empty()) return internal_error(problem);
    StatusOr<void*> entry = open_entry(paths.object, source.entry_symbol);
    if (!entry.ok()) {
      problem = entry.status().message();
      return entry;
    }
    touch(paths.object);
    disk_hits_.fetch_add(1, std::memory_order_relaxed);
    return entry;
  };
  StatusOr<FileLock> lock = ready.ok() ? FileLock::acquire(paths.lock) : StatusOr<FileLock>(ready);
  if (!lock.ok()) {
    // A cache this process may not write (a read-only mount, such as a cache
    // built into a container image): no one changes its entries through this
    // mount, so they load without the lock. A kernel it lacks compiles in a
    // temporary folder, as for a cache that cannot be used at all.
    std::string problem;
    if (ready.ok() && ::access(paths.folder.c_str(), W_OK) != 0 && ::access(paths.object.c_str(), F_OK) == 0) {
      StatusOr<void*> entry = open_verified(problem);
      if (entry.ok() || problem.empty()) return entry;
    }
    if (!warned_unusable_.exchange(true)) {
      KILN_LOG(kWarning, "the kernel cache in " + options_.directory + " cannot be written (" +
                             lock.status().message() +
                             "); kernels it lacks are compiled without it, in temporary folders");
    }
    if (!problem.empty()) {
      KILN_LOG(kWarning, "kernel cache entry " + paths.object + " of '" + source.name + "' is damaged (" +
                             problem + "); compiling it without the cache");
    }
    return load_without_disk(source, key, toolchain);
  }
  StatusOr<void*> entry = internal_error("unset");
  {
    FileLock held = std::move(lock.value());
    struct stat info;
    if (::stat(paths.object.c_str(), &info) == 0 || ::stat(paths.metadata.c_str(), &info) == 0) {
      std::string problem;
      entry = open_verified(problem);
      if (entry.ok() || problem.empty()) return entry;
      KILN_LOG(kWarning, "kernel cache entry " + paths.object + " of '" + source.name +
                             "' is damaged (" + problem + "); rebuilding it");
      remove_entry_files(paths);
    }

    // Compiled beside the entry, under its lock, so the name is ours alone.
    KILN_RETURN_IF_ERROR(
        compile(source, key, paths.folder + "/" + key + ".c", paths.object, toolchain));
    std::string object;
    Status recorded = read_file(paths.object, object)
                          ? write_file_atomically(paths.metadata, metadata_text(object, source))
                          : internal_error("cannot read back " + paths.object);
    entry = recorded.ok() ? open_entry(paths.object, source.entry_symbol) : StatusOr<void*>(recorded);
    if (!entry.ok()) {
      remove_entry_files(paths);
      compile_failures_.fetch_add(1, std::memory_order_relaxed);
      return internal_error("kernel '" + source.name + "' compiled but cannot be used: " +
                            entry.status().message());
    }
    touch(paths.object);
  }
  evict_beyond_limit(key);  // after unlocking: evictions lock other entries
  return entry;
}

StatusOr<void*> KernelCache::load_without_disk(const KernelSource& source, const std::string& key,
                                               const Toolchain& toolchain) {
  std::error_code error;
  std::string pattern = (fs::temp_directory_path(error) / "kiln-kernels-XXXXXX").string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) {
    return internal_error("cannot create a temporary folder to compile kernel '" + source.name +
                          "' in (" + pattern + "): " + errno_text());
  }
  std::string folder = name.data();
  std::string object = folder + "/" + key + ".so";
  Status compiled = compile(source, key, folder + "/" + key + ".c", object, toolchain);
  StatusOr<void*> entry = compiled.ok() ? open_entry(object, source.entry_symbol)
                                        : StatusOr<void*>(compiled);
  fs::remove_all(folder, error);  // a loaded object stays mapped after its file is gone
  if (compiled.ok() && !entry.ok()) {
    compile_failures_.fetch_add(1, std::memory_order_relaxed);
    return internal_error("kernel '" + source.name + "' compiled but cannot be used: " +
                          entry.status().message());
  }
  return entry;
}

Status KernelCache::compile(const KernelSource& source, const std::string& key,
                            const std::string& source_path, const std::string& object_path,
                            const Toolchain& toolchain) {
  Status written = write_file(source_path, source.c_source);
  if (!written.ok()) {
    compile_failures_.fetch_add(1, std::memory_order_relaxed);
    return written.with_context("compiling kernel '" + source.name + "'");
  }
  auto start = std::chrono::steady_clock::now();
  Status status = toolchain.compile(source_path, object_path);
  auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - start);
  compile_nanoseconds_.fetch_add(static_cast<uint64_t>(elapsed.count()), std::memory_order_relaxed);
  if (status.ok()) {
    kernels_compiled_.fetch_add(1, std::memory_order_relaxed);
    std::remove(source_path.c_str());
    return status;
  }
  compile_failures_.fetch_add(1, std::memory_order_relaxed);

  // Keep the failing source where it survives us: in the dump folder (dump()
  // has written it there), else in <directory>/failed/, else in the temporary
  // folder when the disk cache is off.
  std::string base = file_name_part(source.name) + "-" + key;
  std::string saved;
  Status kept;
  if (!options_.dump_directory.empty()) {
    saved = options_.dump_directory + "/" + base + ".c";
    kept = write_file_atomically(saved, source.c_source);
  } else {
    std::error_code error;
    std::string folder = options_.disk_enabled ? options_.directory + "/failed"
                                               : fs::temp_directory_path(error).string();
    saved = folder + "/" + (options_.disk_enabled ? base : "kiln-failed-" + base) + ".c";
    kept = make_private_directories(folder);
    if (kept.ok()) kept = write_file_atomically(saved, source.c_source);
    if (kept.ok()) {
      std::string ir_path = saved.substr(0, saved.size() - 2) + ".ir";
      write_file_atomically(ir_path, source.ir_text);
    }
  }
  std::remove(source_path.c_str());
  std::string diagnostics = status.message();
  std::string where;
  if (kept.ok()) {
    replace_all(diagnostics, source_path, saved);  // the compiler named the file we removed
    where = "its C source is saved at " + saved;
  } else {
    where = "its C source could not be saved (" + kept.message() + ")";
  }
  return internal_error("cannot compile kernel '" + source.name + "'; " + where + "\n" +
                        diagnostics);
}

StatusOr<void*> KernelCache::open_entry(const std::string& object_path,
                                        const std::string& entry_symbol) {
  StatusOr<std::unique_ptr<SharedLibrary>> library = SharedLibrary::load(object_path);
  if (!library.ok()) return library.status();
  StatusOr<void*> symbol = library.value()->symbol(entry_symbol);
  if (!symbol.ok()) return symbol.status();  // unloaded again: nothing was handed out
  if (symbol.value() == nullptr) {
    return internal_error("kernel object " + object_path + " exports '" + entry_symbol +
                          "' as null");
  }
  keep_forever(std::move(library.value()));
  return symbol.value();
}

void KernelCache::dump(const KernelSource& source, const std::string& key) {
  if (options_.dump_directory.empty()) return;
  std::string base = options_.dump_directory + "/" + file_name_part(source.name) + "-" + key;
  Status status = make_private_directories(options_.dump_directory);
  if (status.ok()) status = write_file_atomically(base + ".ir", source.ir_text);
  if (status.ok()) status = write_file_atomically(base + ".c", source.c_source);
  if (!status.ok()) {
    KILN_LOG(kWarning, "cannot dump kernel '" + source.name + "': " + status.message());
  }
}

void KernelCache::evict_beyond_limit(const std::string& keep_key) {
  struct Entry {
    uint64_t bytes = 0;
    timespec used{0, 0};
  };
  std::map<std::string, Entry> entries;
  uint64_t total = 0;
  // Files a process killed in the middle of a compile or a write left behind
  // (the key's C source, a temporary object or file): no live compile is
  // older than twice the compile timeout, nor an hour.
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const double stale_seconds = std::max(3600.0, 2 * options_.compile_timeout_seconds);
  for (const std::string& folder_name : list_directory(options_.directory)) {
    if (folder_name.size() != 2) continue;
    std::string folder = options_.directory + "/" + folder_name;
    for (const std::string& file_name : list_directory(folder)) {
      size_t dot = file_name.rfind('.');
      if (dot == std::string::npos) continue;
      std::string stem = file_name.substr(0, dot), extension = file_name.substr(dot);
      const bool temporary = file_name.rfind(".kiln-object-", 0) == 0 || file_name.rfind(".kiln-write-", 0) == 0 ||
                             (is_key(stem) && extension == ".c");
      if (temporary) {
        struct stat info;
        const std::string path = folder + "/" + file_name;
        if (::stat(path.c_str(), &info) == 0 &&
            static_cast<double>(now.tv_sec - info.st_mtim.tv_sec) > stale_seconds) {
          std::remove(path.c_str());
          stale_files_removed_.fetch_add(1, std::memory_order_relaxed);
        }
        continue;
      }
      if (!is_key(stem) || (extension != ".so" && extension != ".meta")) continue;
      struct stat info;
      if (::stat((folder + "/" + file_name).c_str(), &info) != 0) continue;
      Entry& entry = entries[stem];
      entry.bytes += static_cast<uint64_t>(info.st_size);
      total += static_cast<uint64_t>(info.st_size);
      if (extension == ".so" || entry.used.tv_sec == 0) entry.used = info.st_mtim;
    }
  }
  if (total <= options_.size_limit_bytes) return;

  std::vector<std::pair<std::string, Entry>> by_age(entries.begin(), entries.end());
  std::sort(by_age.begin(), by_age.end(), [](const auto& a, const auto& b) {
    const timespec &x = a.second.used, &y = b.second.used;
    return x.tv_sec != y.tv_sec ? x.tv_sec < y.tv_sec : x.tv_nsec < y.tv_nsec;
  });
  for (const auto& [key, entry] : by_age) {
    if (total <= options_.size_limit_bytes) break;
    if (key == keep_key) continue;
    EntryPaths paths = entry_paths(options_.directory, key);
    std::optional<FileLock> lock = FileLock::try_acquire(paths.lock);
    if (!lock) continue;  // in use by another process: leave it
    remove_entry_files(paths);
    std::remove(paths.lock.c_str());  // waiters on it notice and lock a new file
    total -= std::min(total, entry.bytes);
    disk_evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

CompilerStats KernelCache::stats() const {
  CompilerStats stats;
  stats.kernels_compiled = kernels_compiled_.load(std::memory_order_relaxed);
  stats.memory_hits = memory_hits_.load(std::memory_order_relaxed);
  stats.disk_hits = disk_hits_.load(std::memory_order_relaxed);
  stats.compile_failures = compile_failures_.load(std::memory_order_relaxed);
  stats.disk_evictions = disk_evictions_.load(std::memory_order_relaxed);
  stats.stale_files_removed = stale_files_removed_.load(std::memory_order_relaxed);
  stats.compile_seconds =
      static_cast<double>(compile_nanoseconds_.load(std::memory_order_relaxed)) * 1e-9;
  return stats;
}

void KernelCache::reset_stats() {
  kernels_compiled_.store(0, std::memory_order_relaxed);
  memory_hits_.store(0, std::memory_order_relaxed);
  disk_hits_.store(0, std::memory_order_relaxed);
  compile_failures_.store(0, std::memory_order_relaxed);
  disk_evictions_.store(0, std::memory_order_relaxed);
  stale_files_removed_.store(0, std::memory_order_relaxed);
  compile_nanoseconds_.store(0, std::memory_order_relaxed);
}

}  // namespace kiln
