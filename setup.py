"""Builds torch_kiln._C with CMake against the torch of the running Python.

Two ways in, both with --no-build-isolation so the build sees the installed
torch==2.14.1 (Kiln compiles against its C++ headers) instead of fetching
another:

- `pip install --no-build-isolation -e .` (scripts/setup.sh does): an editable
  install; CMake writes _C into python/torch_kiln, where Python imports it.
- `pip wheel . -w dist --no-build-isolation --no-deps`: a binary wheel
  (docs/guides/wheel.md). It reuses the CMake build folder (KILN_BUILD_DIR,
  else build/ when it is configured, else build-wheel/ without the GoogleTest
  suites), so a wheel after a build only links what changed. The wheel's copy
  of _C has its debug information stripped (272 MB -> 13 MB) and looks for
  libtorch beside it in site-packages instead of in this machine's venv.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))

# Where an installed torch_kiln/_C finds libc10, libtorch_cpu and
# libtorch_python: torch/lib in the same site-packages, as pip installs them.
# (When torch is elsewhere on sys.path, `import torch`, which torch_kiln does
# first, has loaded them already and the loader reuses them by name.)
WHEEL_RUNPATH = "$ORIGIN/../torch/lib"


def _cmake_cache_value(build_dir, name):
    """The value of `name` in build_dir's CMakeCache.txt, or None."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as cache:
            for line in cache:
                if line.startswith(name + ":"):
                    return line.split("=", 1)[1].strip()
    except FileNotFoundError:
        pass
    return None


class CMakeBuild(build_ext):
    def _build_folder(self):
        """(build folder, extra CMake options). The developer's folder when
        there is one; a wheel built from a fresh tree skips the GoogleTest
        suites, which need libgtest-dev and are no part of the package."""
        if os.environ.get("KILN_BUILD_DIR"):
            return os.environ["KILN_BUILD_DIR"], []
        default = os.path.join(ROOT, "build")
        if self._editable() or os.path.exists(os.path.join(default, "CMakeCache.txt")):
            return default, []
        return os.path.join(ROOT, "build-wheel"), ["-DKILN_BUILD_TESTS=OFF"]

    def _editable(self):
        """True for `pip install -e` (setuptools builds with inplace off, then
        copies the extension back into the package) and `build_ext --inplace`."""
        return self.inplace or getattr(self, "editable_mode", False)

    def build_extension(self, extension):
        build_dir, options = self._build_folder()
        subprocess.check_call([
            "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
            f"-DKILN_PYTHON={sys.executable}", *options,
        ])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "kiln_python"])
        # CMake writes _C into the package folder it was configured with.
        package_dir = _cmake_cache_value(build_dir, "KILN_PYTHON_PACKAGE_DIR") or os.path.join(
            ROOT, "python", "torch_kiln")
        target = self.get_ext_fullpath(extension.name)
        built = os.path.join(package_dir, os.path.basename(target))
        if os.path.abspath(built) == os.path.abspath(target):
            return
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if self._editable():
            # setuptools copies this back over `built`: keep it as CMake made it
            # (debug information, runpath into this venv), with its mtime, so
            # ninja does not relink it.
            self.copy_file(built, target, preserve_times=1)
            return
        shutil.copyfile(built, target)
        os.chmod(target, 0o755)
        self._prepare_for_wheel(target)

    def _prepare_for_wheel(self, path):
        """Strips debug information and points the runpath at the installed torch."""
        strip = shutil.which("strip")
        if strip is None:
            raise RuntimeError("building a wheel needs `strip` (binutils) to drop _C's debug information")
        subprocess.check_call([strip, "--strip-debug", path])
        script = os.path.join(ROOT, "cmake", "set_runpath.cmake")
        subprocess.check_call(["cmake", f"-DKILN_FILE={path}", f"-DKILN_RUNPATH={WHEEL_RUNPATH}", "-P", script])


setup(
    ext_modules=[Extension("torch_kiln._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' staging folders under the CMake folder's name, apart from CMake's files.
    options={"build": {"build_base": os.path.join("build", "setuptools")}},
)
