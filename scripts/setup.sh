#!/usr/bin/env bash
# Idempotent setup: system packages, the virtual environment (kept outside the
# clone and reused while its torch and requirements match), and the build.
# A second run only re-checks and rebuilds what changed.
set -euo pipefail
# Setup imports torch before Kiln is built or while the installed Kiln points at
# another clone: keep torch from autoloading it.
export TORCH_DEVICE_BACKEND_AUTOLOAD=0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KILN_VENV:-$HOME/.cache/kiln/venv}"
build_dir="${KILN_BUILD_DIR:-$root/build}"
torch_version="2.14.1"

say() { printf '[setup] %s\n' "$*"; }

# 1. System packages: a compiler cache and GoogleTest, from Debian.
missing=()
command -v ccache >/dev/null || missing+=(ccache)
[ -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake ] || \
  [ -f /usr/lib/aarch64-linux-gnu/cmake/GTest/GTestConfig.cmake ] || missing+=(libgtest-dev)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}" >/dev/null
fi

# 2. The virtual environment, reused while its stamp matches the requirements.
stamp="$venv/.kiln-requirements"
wanted="torch==$torch_version $(sha256sum "$root/requirements-dev.txt" | cut -c1-16)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  say "preparing $venv (torch==$torch_version; a few minutes the first time)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/requirements-dev.txt"
  echo "$wanted" > "$stamp"
fi
"$venv/bin/python" - <<PY
import os, torch
assert torch.__version__.split("+")[0] == "$torch_version", torch.__version__
include = os.path.join(os.path.dirname(torch.__file__), "include")
for needed in ("c10", os.path.join("torch", "csrc")):
    assert os.path.isdir(os.path.join(include, needed)), (
        f"{include} lacks {needed}: this torch wheel ships only ATen headers")
PY

# 3. Build with ccache; the cache is shared across clones (CCACHE_BASEDIR).
export CCACHE_BASEDIR="$root"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
# Debug info names the build directory; do not let it split the cache per clone.
export CCACHE_NOHASHDIR=true
export PATH="$venv/bin:$PATH"
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DKILN_PYTHON="$venv/bin/python" >/dev/null
fi
cmake --build "$build_dir"

# 4. The package, editable, so the freshly built _C is what Python imports.
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(0 if m.entry_points(group='torch.backends', name='kiln') and m.entry_points(group='torch_dynamo_backends', name='kiln') and m.entry_points(group='console_scripts', name='kiln-eval') else 1)" 2>/dev/null ||
   [ "$("$venv/bin/python" -c "import importlib.util as u; print(u.find_spec('torch_kiln').submodule_search_locations[0])" 2>/dev/null)" != "$root/python/torch_kiln" ]; then
  say "installing torch_kiln (editable) into $venv"
  KILN_BUILD_DIR="$build_dir" "$venv/bin/pip" install -q --disable-pip-version-check \
    --no-build-isolation --no-deps -e "$root"
fi
