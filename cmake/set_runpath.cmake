# Sets the runpath of the shared object KILN_FILE to KILN_RUNPATH, in place
# (setup.py runs it on the wheel's copy of torch_kiln._C: cmake -P).
# CMake edits the ELF dynamic section itself, so no patchelf is needed; the
# new runpath must not be longer than the one the linker wrote, which holds
# for "$ORIGIN/../torch/lib" against an absolute site-packages path.
cmake_minimum_required(VERSION 3.22)
if(NOT KILN_FILE OR NOT DEFINED KILN_RUNPATH)
  message(FATAL_ERROR "usage: cmake -DKILN_FILE=<shared object> -DKILN_RUNPATH=<runpath> -P set_runpath.cmake")
endif()
file(RPATH_SET FILE "${KILN_FILE}" NEW_RPATH "${KILN_RUNPATH}")
