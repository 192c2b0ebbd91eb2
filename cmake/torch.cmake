# Locates the installed torch through the Python interpreter KILN_PYTHON and
# defines the interface target kiln_torch (headers, libraries, definitions).
#
# find_package(Torch) is not used: the PyPI wheel is a CUDA build whose CMake
# config insists on a CUDA toolkit, which Kiln does not need. The paths come
# from torch.utils.cpp_extension instead, as a C++ extension would get them.
set(KILN_PYTHON "python3" CACHE STRING "Python interpreter with torch installed")

set(KILN_TORCH_QUERY_FILE "${CMAKE_BINARY_DIR}/torch_paths.cmake")
execute_process(
  COMMAND "${KILN_PYTHON}" "${CMAKE_SOURCE_DIR}/cmake/query_torch.py" "${KILN_TORCH_QUERY_FILE}"
  RESULT_VARIABLE KILN_TORCH_QUERY_RESULT
  ERROR_VARIABLE KILN_TORCH_QUERY_ERROR)
if(NOT KILN_TORCH_QUERY_RESULT EQUAL 0)
  message(FATAL_ERROR "Could not import torch with ${KILN_PYTHON}:\n${KILN_TORCH_QUERY_ERROR}")
endif()
include("${KILN_TORCH_QUERY_FILE}")
message(STATUS "Kiln builds against torch ${KILN_TORCH_VERSION} (${KILN_PYTHON})")

foreach(required c10/core/Allocator.h torch/csrc/Device.h)
  list(GET KILN_TORCH_INCLUDE_DIRS 0 first_include)
  if(NOT EXISTS "${first_include}/${required}")
    message(FATAL_ERROR "torch at ${first_include} lacks ${required}: the CPU-only +cpu wheels "
                        "ship only ATen/ headers (pytorch issue 179414); install torch==2.14.1 from PyPI")
  endif()
endforeach()

add_library(kiln_torch INTERFACE)
target_include_directories(kiln_torch SYSTEM INTERFACE ${KILN_TORCH_INCLUDE_DIRS}
                                                       "${KILN_PYTHON_INCLUDE_DIR}")
target_compile_definitions(kiln_torch INTERFACE
  _GLIBCXX_USE_CXX11_ABI=${KILN_TORCH_CXX11_ABI}
  TORCH_ASSERT_ONLY_METHOD_OPERATORS)
target_link_directories(kiln_torch INTERFACE ${KILN_TORCH_LIBRARY_DIRS})
target_link_libraries(kiln_torch INTERFACE c10 torch_cpu torch torch_python)
