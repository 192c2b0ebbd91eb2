// Precompiled header for the torch-facing targets: the heavy c10/ATen headers
// almost every file includes, parsed once per target instead of per file.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
