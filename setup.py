"""Builds torch_kiln._C with CMake against the torch of the running Python.

Install with `pip install --no-build-isolation -e .` (the Makefile does), so
the build sees the installed torch==2.14.1 instead of fetching another.
"""
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, extension):
        build_dir = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
        subprocess.check_call([
            "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
            f"-DKILN_PYTHON={sys.executable}",
        ])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "kiln_python"])
        # CMake writes _C next to the package sources; copy it where setuptools
        # expects the extension when building a wheel.
        built = os.path.join(ROOT, "python", "torch_kiln", os.path.basename(self.get_ext_fullpath(extension.name)))
        target = self.get_ext_fullpath(extension.name)
        if os.path.abspath(built) != os.path.abspath(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            self.copy_file(built, target)


setup(ext_modules=[Extension("torch_kiln._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
