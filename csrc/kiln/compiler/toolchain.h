// Toolchain: the system C compiler that turns generated kernel source into a
// shared object (KILN_CC, default `cc`).
//
// Kernels are plain C with no system headers beyond what the generator emits,
// so a compile is one short subprocess (tens of milliseconds). The compiler
// runs through posix_spawn, which is safe in a multi-threaded process, with
// its diagnostics captured to a file and returned on failure.
//
// Thread-safety: a Toolchain is immutable after probe(); compile() may be
// called from several threads at once (each call uses its own temporary files).
#pragma once

#include <string>
#include <vector>

#include "kiln/base/status.h"

namespace kiln {

class Toolchain {
 public:
  // Runs `compiler --version`. kFailedPrecondition naming the compiler (and
  // KILN_CC) if it cannot be run. Also tries to link a tiny object against
  // glibc's vector math library (libmvec): when that works, kernels are built
  // with -DKILN_VECTOR_MATH and -lmvec, and the prelude declares libm's
  // functions `simd`, so loops calling sin, log, tanh, ... vectorise.
  // Every run of the compiler (these and compile()) that takes longer than
  // `timeout_seconds` is killed, with its children, and fails with
  // kDeadlineExceeded naming the compiler and KILN_COMPILE_TIMEOUT.
  static StatusOr<Toolchain> probe(const std::string& compiler, double timeout_seconds = 300);

  const std::string& compiler() const { return compiler_; }
  // The first line `--version` printed, e.g. "cc (Debian 12.2.0-14) 12.2.0".
  const std::string& version() const { return version_; }
  const std::vector<std::string>& flags() const { return flags_; }
  // True when kernels link libmvec (see probe()).
  bool vector_math() const { return vector_math_; }
  // Compiler, version and flags in one string: part of every kernel cache key,
  // so a different compiler or flag set never reuses another's objects.
  std::string identity() const;

  // Compiles the C file `source_path` into the shared object `output_path`.
  // The object is written under a temporary name in the same directory and
  // renamed into place, so no reader sees a partial file. On failure returns
  // kInternal with the compiler's diagnostics and the source path, and leaves
  // no file at `output_path`.
  Status compile(const std::string& source_path, const std::string& output_path) const;

 private:
  Toolchain(std::string compiler, std::string version, std::vector<std::string> flags, bool vector_math,
            double timeout_seconds)
      : compiler_(std::move(compiler)),
        version_(std::move(version)),
        flags_(std::move(flags)),
        vector_math_(vector_math),
        timeout_seconds_(timeout_seconds) {}

  std::string compiler_;
  std::string version_;
  std::vector<std::string> flags_;
  bool vector_math_ = false;
  double timeout_seconds_ = 300;
};

// Runs `arguments` (arguments[0] is looked up on PATH, in a process group of
// its own) and waits for it, at most `timeout_seconds`. Returns its exit
// code, with stdout and stderr together in `output`; a failure to start is a
// kFailedPrecondition Status; a run past the timeout is killed with its whole
// process group (a compiler driver's cc1, as and ld) and is a
// kDeadlineExceeded Status.
StatusOr<int> run_process(const std::vector<std::string>& arguments, std::string& output,
                          double timeout_seconds = 300);

}  // namespace kiln
