#include "kiln/base/logging.h"

#include <cstdio>
#include <mutex>

namespace kiln {

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(config().log_level());
}

void log_message(LogLevel level, const std::string& message) {
  static std::mutex mutex;
  static const char* const kNames[] = {"error", "warning", "info", "debug"};
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[kiln %s] %s\n", kNames[static_cast<int>(level)], message.c_str());
}

}  // namespace kiln
