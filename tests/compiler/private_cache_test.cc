// The kernel cache loads only what the user alone could have written:
// folders created private, and folders or files that another user owns or
// may write refused with an error naming them (private_folder.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "kiln/compiler/kernel_cache.h"
#include "kiln/compiler/private_folder.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// A user id that is not ours, for chown (only root may give files away).
constexpr uid_t kOtherUser = 65534;

KernelSource source_adding(int n) {
  KernelSource source;
  source.name = "private_add_" + std::to_string(n);
  source.ir_text = "kernel " + source.name + "\n";
  source.c_source = "int kiln_private_entry(int x) { return x + " + std::to_string(n) + "; }\n";
  source.entry_symbol = "kiln_private_entry";
  return source;
}

mode_t mode_of(const std::string& path) {
  struct stat info;
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

class PrivateCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln-private-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    base_ = pattern;
    root_ = base_ + "/cache";  // KILN_CACHE_DIR; created by the cache
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(base_, error);
  }

  KernelCache::Options options() const {
    KernelCache::Options options;
    options.directory = root_ + "/kernels";
    options.compiler = "cc";
    return options;
  }

  StatusOr<void*> load(KernelCache& cache, int n) {
    return cache.load("private|" + std::to_string(n), [n]() -> StatusOr<KernelSource> {
      return source_adding(n);
    });
  }

  // Builds kernel `n` into the cache in a child process, so that this
  // process has not mapped the object (dlopen would hand back that copy).
  void build_in_child(int n) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      KernelCache cache(options());
      std::_Exit(load(cache, n).ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }

  // The only file under the kernels folder ending in `suffix`.
  std::string entry_file(const std::string& suffix) const {
    std::set<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(root_ + "/kernels")) {
      const std::string path = entry.path().string();
      if (path.size() > suffix.size() && path.ends_with(suffix) && path.find("/.") == std::string::npos) {
        found.insert(path);
      }
    }
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? std::string() : *found.begin();
  }

  // A fresh cache's load of kernel `n` is refused, naming `path` and `why`.
  void expect_refused(int n, const std::string& path, const std::string& why) {
    KernelCache cache(options());
    StatusOr<void*> loaded = load(cache, n);
    ASSERT_FALSE(loaded.ok()) << "loaded despite " << why;
    const std::string& message = loaded.status().message();
    EXPECT_EQ(loaded.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(message.find("refusing to use"), std::string::npos) << message;
    EXPECT_NE(message.find(path + ":"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << message;
    EXPECT_NE(message.find("private_add_" + std::to_string(n)), std::string::npos) << message;
    EXPECT_EQ(cache.stats().kernels_compiled, 0u);
  }

  std::string base_, root_;
};

TEST_F(PrivateCacheTest, CreatesItsFoldersAndFilesPrivate) {
  KernelCache cache(options());
  StatusOr<void*> loaded = load(cache, 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::string object = entry_file(".so");
  EXPECT_EQ(mode_of(root_), 0700u);
  EXPECT_EQ(mode_of(root_ + "/kernels"), 0700u);
  EXPECT_EQ(mode_of(fs::path(object).parent_path().string()), 0700u);
  EXPECT_EQ(mode_of(object) & 077, 0u);
  EXPECT_EQ(mode_of(entry_file(".meta")) & 077, 0u);
  EXPECT_EQ(mode_of(entry_file(".lock")) & 077, 0u);
}

TEST_F(PrivateCacheTest, ObjectsArePrivateWhateverTheUmask) {
  const mode_t old_mask = ::umask(0);  // the linker then creates objects 0777
  KernelCache cache(options());
  StatusOr<void*> loaded = load(cache, 2);
  ::umask(old_mask);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(mode_of(entry_file(".so")) & 022, 0u);
  EXPECT_EQ(mode_of(entry_file(".meta")) & 022, 0u);
}

// Each folder on the way to an entry, made writable by others.
class WritableFolderTest : public PrivateCacheTest, public testing::WithParamInterface<const char*> {};

TEST_P(WritableFolderTest, IsRefused) {
  build_in_child(3);
  const std::string which = GetParam();
  const std::string folder = which == std::string("root")      ? root_
                             : which == std::string("kernels") ? root_ + "/kernels"
                                                               : fs::path(entry_file(".so")).parent_path().string();
  ASSERT_EQ(::chmod(folder.c_str(), 0777), 0);
  expect_refused(3, folder, "writable by every user (mode 0777)");
  ASSERT_EQ(::chmod(folder.c_str(), 0770), 0);
  expect_refused(3, folder, "writable by its group (mode 0770)");
  ASSERT_EQ(::chmod(folder.c_str(), 0755), 0);  // readable by others is fine
  KernelCache cache(options());
  StatusOr<void*> loaded = load(cache, 3);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(cache.stats().disk_hits, 1u);
}

INSTANTIATE_TEST_SUITE_P(Folders, WritableFolderTest, testing::Values("root", "kernels", "entry"));

TEST_F(PrivateCacheTest, AnObjectOrMetadataOthersMayWriteIsRefused) {
  build_in_child(4);
  for (const std::string suffix : {".so", ".meta"}) {
    const std::string path = entry_file(suffix);
    ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
    expect_refused(4, path, "writable by every user");
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  }
  KernelCache cache(options());
  ASSERT_TRUE(load(cache, 4).ok());
  EXPECT_EQ(cache.stats().disk_hits, 1u);
}

TEST_F(PrivateCacheTest, FoldersAndFilesOfAnotherUserAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a file to another user";
  build_in_child(5);
  const std::string object = entry_file(".so");
  for (const std::string& path : {root_ + "/kernels", object}) {
    ASSERT_EQ(::chown(path.c_str(), kOtherUser, static_cast<gid_t>(-1)), 0);
    expect_refused(5, path, "belongs to user id 65534, not to you");
    ASSERT_EQ(::chown(path.c_str(), ::geteuid(), static_cast<gid_t>(-1)), 0);
  }
}

TEST_F(PrivateCacheTest, ALinkOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a link to another user";
  // The cache folder is a link the other user made, to a folder of ours.
  const std::string ours = base_ + "/ours";
  ASSERT_EQ(::mkdir(ours.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(ours.c_str(), root_.c_str()), 0);
  ASSERT_EQ(::lchown(root_.c_str(), kOtherUser, static_cast<gid_t>(-1)), 0);
  expect_refused(6, root_, "a symbolic link that belongs to user id 65534");
}

TEST(PrivateFolder, MakesMissingFoldersPrivateAndLeavesOthersAlone) {
  char pattern[] = "/tmp/kiln-private-folder-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string base = pattern;
  ASSERT_EQ(::chmod(base.c_str(), 0755), 0);
  ASSERT_TRUE(make_private_directories(base + "/a/b/c").ok());
  EXPECT_EQ(mode_of(base), 0755u);
  for (const std::string& folder : {base + "/a", base + "/a/b", base + "/a/b/c"}) {
    EXPECT_EQ(mode_of(folder), 0700u) << folder;
  }
  EXPECT_TRUE(make_private_directories(base + "/a/b/c").ok());  // existing: nothing to do
  EXPECT_TRUE(check_private(base + "/a/b/c", "folder").ok());
  Status missing = check_private(base + "/nothing", "kernel cache folder");
  EXPECT_EQ(missing.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.message().find("cannot examine the kernel cache folder " + base + "/nothing"),
            std::string::npos)
      << missing.message();
  std::error_code error;
  fs::remove_all(base, error);
}

}  // namespace
}  // namespace kiln
