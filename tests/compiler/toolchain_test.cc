#include "kiln/compiler/toolchain.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "kiln/compiler/shared_library.h"

namespace kiln {
namespace {

// A fresh directory per test, removed afterwards.
class ToolchainTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln-toolchain-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
    StatusOr<Toolchain> probed = Toolchain::probe("cc");
    ASSERT_TRUE(probed.ok()) << probed.status().message();
    toolchain_ = std::make_unique<Toolchain>(probed.value());
  }
  void TearDown() override {
    std::string command = "rm -rf '" + directory_ + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  std::string write_source(const std::string& name, const std::string& text) {
    std::string path = directory_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  bool exists(const std::string& path) {
    struct stat info;
    return stat(path.c_str(), &info) == 0;
  }

  std::string directory_;
  std::unique_ptr<Toolchain> toolchain_;
};

TEST_F(ToolchainTest, ProbeReportsCompilerVersionAndIdentity) {
  EXPECT_EQ(toolchain_->compiler(), "cc");
  EXPECT_FALSE(toolchain_->version().empty());
  std::string identity = toolchain_->identity();
  EXPECT_NE(identity.find(toolchain_->version()), std::string::npos);
  EXPECT_NE(identity.find("-O3"), std::string::npos);
}

TEST_F(ToolchainTest, MissingCompilerIsAClearError) {
  StatusOr<Toolchain> probed = Toolchain::probe("/nonexistent/kiln-cc");
  ASSERT_FALSE(probed.ok());
  EXPECT_EQ(probed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(probed.status().message().find("/nonexistent/kiln-cc"), std::string::npos);
  EXPECT_NE(probed.status().message().find("KILN_CC"), std::string::npos);
}

TEST_F(ToolchainTest, CompilesLoadsAndCallsAKernel) {
  std::string source = write_source("add.c",
                                    "void kiln_add(const float* a, const float* b, float* out, "
                                    "long n) { for (long i = 0; i < n; ++i) out[i] = a[i] + b[i]; }\n");
  std::string object = directory_ + "/add.so";
  Status status = toolchain_->compile(source, object);
  ASSERT_TRUE(status.ok()) << status.message();
  StatusOr<std::unique_ptr<SharedLibrary>> library = SharedLibrary::load(object);
  ASSERT_TRUE(library.ok()) << library.status().message();
  StatusOr<void*> symbol = library.value()->symbol("kiln_add");
  ASSERT_TRUE(symbol.ok()) << symbol.status().message();
  auto add = reinterpret_cast<void (*)(const float*, const float*, float*, long)>(symbol.value());
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  add(a.data(), b.data(), out.data(), 3);
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33}));
  EXPECT_FALSE(library.value()->symbol("kiln_missing").ok());
}

TEST_F(ToolchainTest, CompileErrorNamesTheSourceAndLeavesNoObject) {
  std::string source = write_source("broken.c", "void kiln_broken( { }\n");
  std::string object = directory_ + "/broken.so";
  Status status = toolchain_->compile(source, object);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find(source), std::string::npos);
  EXPECT_NE(status.message().find("error"), std::string::npos);  // the compiler's diagnostics
  EXPECT_FALSE(exists(object));
  // No temporary object is left behind either.
  std::string leftovers = "ls -A '" + directory_ + "' | grep -q kiln-object";
  EXPECT_NE(std::system(leftovers.c_str()), 0);
}

TEST_F(ToolchainTest, ConcurrentCompilesOfOneKernelAllSucceed) {
  std::string source = write_source("one.c", "int kiln_one(void) { return 1; }\n");
  std::string object = directory_ + "/one.so";
  std::vector<std::thread> threads;
  std::vector<int> results(4, -1);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[i] = toolchain_->compile(source, object).ok() ? 1 : 0; });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(results, (std::vector<int>{1, 1, 1, 1}));
  StatusOr<std::unique_ptr<SharedLibrary>> library = SharedLibrary::load(object);
  ASSERT_TRUE(library.ok());
  auto one = reinterpret_cast<int (*)()>(library.value()->symbol("kiln_one").value());
  EXPECT_EQ(one(), 1);
}

TEST_F(ToolchainTest, LoadingAMissingObjectIsAnError) {
  StatusOr<std::unique_ptr<SharedLibrary>> library = SharedLibrary::load(directory_ + "/none.so");
  ASSERT_FALSE(library.ok());
  EXPECT_NE(library.status().message().find("none.so"), std::string::npos);
}

TEST(RunProcess, ReturnsExitCodeAndOutput) {
  std::string output;
  StatusOr<int> code = run_process({"sh", "-c", "echo hello; echo oops >&2; exit 3"}, output);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(code.value(), 3);
  EXPECT_NE(output.find("hello"), std::string::npos);
  EXPECT_NE(output.find("oops"), std::string::npos);
}

// True while process `pid` runs (a zombie, killed but not yet reaped, does not count).
bool running(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST(RunProcess, AProcessPastItsTimeoutIsStoppedWithWhatItStarted) {
  char pattern[] = "/tmp/kiln-run-process-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string pid_file = std::string(pattern) + "/child";
  std::string output;
  auto start = std::chrono::steady_clock::now();
  // A driver that starts a child and waits, as `cc` waits for cc1.
  StatusOr<int> code = run_process({"sh", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"}, output, 0.5);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(code.status().message().find("'sh' ran longer than 0.5 s and was stopped"), std::string::npos)
      << code.status().message();
  EXPECT_NE(code.status().message().find("KILN_COMPILE_TIMEOUT"), std::string::npos);
  EXPECT_LT(seconds, 10.0);
  std::ifstream pid_input(pid_file);
  pid_t child = 0;
  ASSERT_TRUE(pid_input >> child);
  for (int wait = 0; wait < 100 && running(child); ++wait) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(running(child)) << "the driver's child outlived the timeout";
  std::string remove = "rm -rf '" + std::string(pattern) + "'";
  ASSERT_EQ(std::system(remove.c_str()), 0);
}

TEST_F(ToolchainTest, AHangingCompilerFailsTheCompileAndLeavesNoObject) {
  // Answers --version at once, then hangs on every compile.
  std::string compiler = write_source("hanging-cc", "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --version ] && exec cc --version; done\nsleep 60\n");
  ASSERT_EQ(::chmod(compiler.c_str(), 0700), 0);
  StatusOr<Toolchain> probed = Toolchain::probe(compiler, 0.5);
  ASSERT_TRUE(probed.ok()) << probed.status().message();
  EXPECT_FALSE(probed.value().vector_math());  // its probe compile timed out too
  std::string source = write_source("slow.c", "int kiln_slow(void) { return 1; }\n");
  std::string object = directory_ + "/slow.so";
  Status status = probed.value().compile(source, object);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("ran longer than 0.5 s"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(source), std::string::npos);
  EXPECT_FALSE(exists(object));
  std::string leftovers = "ls -A '" + directory_ + "' | grep -q kiln-object";
  EXPECT_NE(std::system(leftovers.c_str()), 0);
}

}  // namespace
}  // namespace kiln
