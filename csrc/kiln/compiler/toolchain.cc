#include "kiln/compiler/toolchain.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace kiln {
namespace {

// -ffp-contract=off: no fused multiply-add the CPU reference would not do.
// -fno-math-errno: math functions need not set errno, so they vectorise.
// -fno-trapping-math: no code relies on floating-point traps, so comparisons
// and selects are if-converted and vectorise (results do not change).
// -march=native: the kernels run on this machine only; the cache key carries
// the compiler identity, and the disk cache adds the CPU's features.
const std::vector<std::string> kDefaultFlags = {
    "-O3", "-std=c11", "-fPIC", "-shared", "-march=native", "-fno-math-errno",
    "-fno-trapping-math", "-ffp-contract=off"};

std::string read_file(const std::string& path) {
  std::ifstream input(path, std::ios::binary);
  std::stringstream text;
  text << input.rdbuf();
  return text.str();
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// A unique temporary path in `directory` starting with `prefix`; the file is
// created (empty) so the name is reserved.
StatusOr<std::string> make_temporary(const std::string& directory, const std::string& prefix) {
  std::string pattern = directory + "/" + prefix + "XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int descriptor = mkstemp(name.data());
  if (descriptor < 0) {
    return failed_precondition("cannot create a temporary file in " + directory + ": " +
                               std::strerror(errno));
  }
  close(descriptor);
  return std::string(name.data());
}

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

namespace {

// Waits for `child` to exit, at most `timeout_seconds`; true with its wait
// status in `status` when it exited in time. A pidfd makes the wait one
// poll(); kernels before Linux 5.3 have none, and the wait polls waitpid.
bool wait_for_child(pid_t child, double timeout_seconds, int& status) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  while (true) {
    pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) break;  // not ours to wait for: treat as gone
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      if (pidfd >= 0) ::close(pidfd);
      return false;
    }
    if (pidfd >= 0) {
      pollfd ready{pidfd, POLLIN, 0};
      ::poll(&ready, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return true;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

}  // namespace

StatusOr<int> run_process(const std::vector<std::string>& arguments, std::string& output,
                          double timeout_seconds) {
  StatusOr<std::string> log = make_temporary(P_tmpdir, "kiln-process-");
  if (!log.ok()) return log.status();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.value().c_str(),
                                   O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  // A process group of its own: a timeout kills the driver and what it ran.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t child = 0;
  int error = posix_spawnp(&child, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    std::remove(log.value().c_str());
    return failed_precondition("cannot run '" + arguments[0] + "': " + std::strerror(error));
  }
  int status = 0;
  if (!wait_for_child(child, timeout_seconds, status)) {
    ::kill(-child, SIGKILL);
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    output = read_file(log.value());
    std::remove(log.value().c_str());
    return deadline_exceeded("'" + arguments[0] + "' ran longer than " + seconds_text(timeout_seconds) +
                             " s and was stopped (KILN_COMPILE_TIMEOUT sets the limit)");
  }
  output = read_file(log.value());
  std::remove(log.value().c_str());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

namespace {

// True when `compiler` links a shared object whose loop calls a `simd`
// declared sinf against libmvec (glibc 2.22 and later on x86-64).
bool links_vector_math(const std::string& compiler, double timeout_seconds) {
  StatusOr<std::string> source = make_temporary(P_tmpdir, "kiln-vector-math-");
  if (!source.ok()) return false;
  const std::string source_path = source.value() + ".c";
  const std::string object_path = source.value() + ".so";
  {
    std::ofstream file(source_path);
    file << "float sinf(float) __attribute__((simd(\"notinbranch\"), const, nothrow));\n"
            "void kiln_probe(float* x, int n) { for (int i = 0; i < n; ++i) x[i] = sinf(x[i]); }\n";
  }
  std::vector<std::string> arguments = {compiler};
  arguments.insert(arguments.end(), kDefaultFlags.begin(), kDefaultFlags.end());
  arguments.insert(arguments.end(), {"-o", object_path, source_path, "-lmvec", "-lm"});
  std::string output;
  StatusOr<int> exit_code = run_process(arguments, output, timeout_seconds);
  for (const std::string& path : {source.value(), source_path, object_path}) std::remove(path.c_str());
  return exit_code.ok() && exit_code.value() == 0;
}

}  // namespace

StatusOr<Toolchain> Toolchain::probe(const std::string& compiler, double timeout_seconds) {
  std::string output;
  StatusOr<int> exit_code = run_process({compiler, "--version"}, output, timeout_seconds);
  if (!exit_code.ok() || exit_code.value() != 0) {
    std::string reason = exit_code.ok() ? first_line(output) : exit_code.status().message();
    // The one run-time requirement of an installed wheel: say why it is needed.
    return failed_precondition("the C compiler '" + compiler + "' does not run (" + reason +
                               "): Kiln compiles its kernels with it at run time; install one "
                               "(gcc or clang) or point KILN_CC at it");
  }
  std::vector<std::string> flags = kDefaultFlags;
  // GCC vectorises a loop whose pointers may overlap behind run-time overlap
  // checks, but gives up past 10 of them (pairs of a stored and another
  // operand): a fused kernel of 3 inputs and 3 stored outputs (an Adam step's
  // region, adaptive eager's) stayed scalar, 1.7x slower than its ops one by
  // one. (Equal pointers, an in-place op's, pass the checks.)
  if (first_line(output).find("clang") == std::string::npos) {
    flags.push_back("--param=vect-max-version-for-alias-checks=64");
  }
  const bool vector_math = links_vector_math(compiler, timeout_seconds);
  if (vector_math) flags.push_back("-DKILN_VECTOR_MATH");
  return Toolchain(compiler, first_line(output), flags, vector_math, timeout_seconds);
}

std::string Toolchain::identity() const {
  std::string identity = compiler_ + "|" + version_;
  for (const std::string& flag : flags_) identity += "|" + flag;
  return identity;
}

Status Toolchain::compile(const std::string& source_path, const std::string& output_path) const {
  StatusOr<std::string> temporary = make_temporary(directory_of(output_path), ".kiln-object-");
  if (!temporary.ok()) return temporary.status();
  std::vector<std::string> arguments = {compiler_};
  arguments.insert(arguments.end(), flags_.begin(), flags_.end());
  // libm (and libmvec) after the source: kernels call their functions.
  arguments.insert(arguments.end(), {"-o", temporary.value(), source_path});
  if (vector_math_) arguments.push_back("-lmvec");
  arguments.push_back("-lm");
  std::string diagnostics;
  StatusOr<int> exit_code = run_process(arguments, diagnostics, timeout_seconds_);
  if (!exit_code.ok() || exit_code.value() != 0) {
    std::remove(temporary.value().c_str());
    std::string reason = exit_code.ok() ? diagnostics : exit_code.status().message();
    return internal_error("compiling " + source_path + " with " + compiler_ + " failed:\n" +
                          reason);
  }
  // The linker creates the object as the umask allows (group-writable under
  // umask 002); the kernel cache refuses objects others may write.
  ::chmod(temporary.value().c_str(), 0700);
  if (std::rename(temporary.value().c_str(), output_path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(temporary.value().c_str());
    return internal_error("cannot move the compiled kernel to " + output_path + ": " + reason);
  }
  return Status();
}

}  // namespace kiln
