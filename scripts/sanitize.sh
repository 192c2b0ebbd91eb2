#!/usr/bin/env bash
# Kiln under the sanitizers (docs/guides/sanitizers.md). Each build has its own
# folder under build-sanitize/ and shares ccache with the main build.
#
#   scripts/sanitize.sh gtests   AddressSanitizer + UndefinedBehaviorSanitizer:
#                                the GoogleTests (CTest). make test runs this.
#   scripts/sanitize.sh python [FILE.py ...]
#                                the same sanitizers in torch_kiln._C, and a
#                                representative pytest subset (or the files of
#                                tests/python named) run by a Python with the
#                                sanitizer runtimes preloaded
#   scripts/sanitize.sh thread   ThreadSanitizer: the GoogleTests
#   scripts/sanitize.sh all      all three (make sanitize)
#
# A report fails the run (KILN_SANITIZE builds with -fno-sanitize-recover).
# Suppressions, each naming whose report it is, are in scripts/sanitizers/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KILN_VENV:-$HOME/.cache/kiln/venv}"
folder="${KILN_SANITIZE_DIR:-$root/build-sanitize}"
suppressions="$root/scripts/sanitizers"
jobs="${KILN_SANITIZE_JOBS:-$(nproc)}"

export CCACHE_BASEDIR="$root"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_NOHASHDIR=true
export PATH="$venv/bin:$PATH"

say() { printf '[sanitize] %s\n' "$*"; }

# configure_and_build FOLDER SANITIZERS TORCH(ON|OFF) [extra cmake arguments]
configure_and_build() {
  local build="$1" sanitizers="$2" torch="$3"
  shift 3
  # The build imports torch (cmake/query_torch.py) before this _C exists: keep
  # torch from autoloading Kiln there. The tests autoload it, as users do.
  if [ ! -f "$build/build.ninja" ]; then
    TORCH_DEVICE_BACKEND_AUTOLOAD=0 cmake -S "$root" -B "$build" -G Ninja -DKILN_PYTHON="$venv/bin/python" -DKILN_SANITIZE="$sanitizers" \
      -DKILN_BUILD_TORCH="$torch" "$@" >/dev/null
  fi
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 cmake --build "$build" -j "$jobs"
}

# Every report is fatal; leaks are checked in the GoogleTests, whose process
# owns all of its memory (Python and PyTorch keep theirs until exit, by design).
asan_options="abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1"
ubsan_options="print_stacktrace=1:halt_on_error=1:suppressions=$suppressions/ubsan.supp"

run_gtests() {
  local build="$folder/address"
  say "AddressSanitizer + UndefinedBehaviorSanitizer: GoogleTests ($build)"
  configure_and_build "$build" "address,undefined" OFF
  ASAN_OPTIONS="$asan_options:detect_leaks=1" UBSAN_OPTIONS="$ubsan_options" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
}

# The pytest files run under the sanitizers: the eager path (device, memory,
# streams, pointwise and reduction kernels, the library path, adaptive eager),
# the compiled path, the kernel cache across processes, checkpoints and the
# process group.
PYTHON_SUBSET=(
  test_device.py test_memory.py test_streams.py test_stream_ordered_memory.py test_native_ops.py
  test_compiled_binary.py test_compiled_reductions.py test_library.py test_adaptive_eager.py
  test_compile_backend.py test_training.py test_kernel_cache_processes.py test_serialization.py
  test_distributed_collectives.py
)

# A torch_kiln package whose _C is the sanitized one: the sources are links to
# the clone's, so only _C differs from what the editable install imports.
make_package_overlay() {
  local package="$1/python/torch_kiln" entry
  mkdir -p "$package"
  for entry in "$root"/python/torch_kiln/*; do
    case "$(basename "$entry")" in _C.*.so | __pycache__) continue ;; esac
    ln -sfn "$entry" "$package/$(basename "$entry")"
  done
}

run_python_subset() {
  local build="$folder/address-torch"
  say "AddressSanitizer + UndefinedBehaviorSanitizer: torch_kiln._C and a pytest subset ($build)"
  make_package_overlay "$build"
  configure_and_build "$build" "address,undefined" ON -DKILN_BUILD_TESTS=OFF \
    -DKILN_PYTHON_PACKAGE_DIR="$build/python/torch_kiln"
  local runtimes
  runtimes="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
  local tests=() files=("$@")
  [ ${#files[@]} -gt 0 ] || files=("${PYTHON_SUBSET[@]}")
  for file in "${files[@]}"; do tests+=("$root/tests/python/$file"); done
  # The C compiler Kiln runs for its kernels inherits the preload: it is not
  # instrumented, so it only runs slower. The kernels themselves are not
  # instrumented either (they are the toolchain's output, not Kiln's source).
  PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" LD_PRELOAD="$runtimes" \
    ASAN_OPTIONS="$asan_options:detect_leaks=0:suppressions=$suppressions/asan.supp" \
    UBSAN_OPTIONS="$ubsan_options" KILN_CACHE_DIR="$build/kernel-cache" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -n "$jobs" "${tests[@]}"
}

run_thread_sanitizer() {
  local build="$folder/thread"
  say "ThreadSanitizer: GoogleTests ($build)"
  configure_and_build "$build" "thread" OFF
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
}

case "${1:-all}" in
  gtests) run_gtests ;;
  python) shift; run_python_subset "$@" ;;
  thread) run_thread_sanitizer ;;
  all) run_gtests; run_thread_sanitizer; run_python_subset ;;
  *) echo "usage: $0 [gtests|python|thread|all]" >&2; exit 2 ;;
esac
