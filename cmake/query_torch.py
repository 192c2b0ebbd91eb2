"""Writes the installed torch's build paths as CMake set() commands."""
import os
import sys
import sysconfig

# Loading torch must not load Kiln: the extension being configured may not
# exist yet, or the installed one may point at another clone.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
import torch  # noqa: E402
import torch.utils.cpp_extension as extension  # noqa: E402


def cmake_list(values):
    return ";".join(str(value) for value in values)


settings = {
    "KILN_TORCH_VERSION": torch.__version__,
    "KILN_TORCH_INCLUDE_DIRS": cmake_list(extension.include_paths()),
    "KILN_TORCH_LIBRARY_DIRS": cmake_list(extension.library_paths()),
    "KILN_TORCH_CXX11_ABI": int(torch.compiled_with_cxx11_abi()),
    "KILN_PYTHON_INCLUDE_DIR": sysconfig.get_paths()["include"],
    "KILN_PYTHON_EXTENSION_SUFFIX": sysconfig.get_config_var("EXT_SUFFIX"),
}
with open(sys.argv[1], "w") as output:
    for name, value in settings.items():
        output.write(f'set({name} "{value}")\n')
