// Logging to stderr, filtered by KILN_LOG_LEVEL. Thread-safe.
//
// Warnings that a PyTorch user should see (fallbacks, dtype policies) are raised
// as Python warnings by the torch-facing layer instead; this log is for the
// runtime's own diagnostics.
#pragma once

#include <string>

#include "kiln/base/config.h"

namespace kiln {

bool log_enabled(LogLevel level);
void log_message(LogLevel level, const std::string& message);

}  // namespace kiln

#define KILN_LOG(level, message)                                       \
  do {                                                                 \
    if (::kiln::log_enabled(::kiln::LogLevel::level))                  \
      ::kiln::log_message(::kiln::LogLevel::level, (message));         \
  } while (false)
