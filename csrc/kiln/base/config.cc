#include "kiln/base/config.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <string_view>

namespace kiln {
namespace {

constexpr int kMaxDevices = 64;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

const char* read_env(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && value[0] != '\0') ? value : nullptr;
}

uint64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{8} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

// $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln (HOME from the password
// database when unset), else a folder in /tmp.
std::string default_cache_dir() {
  const char* xdg = read_env("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/kiln";
  const char* home = read_env("HOME");
  if (home == nullptr) {
    if (const passwd* entry = getpwuid(getuid())) home = entry->pw_dir;
  }
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/kiln";
  return "/tmp/kiln-cache-" + std::to_string(getuid());
}

}  // namespace

StatusOr<uint64_t> parse_byte_size(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == 0) return invalid_argument("expected a byte size such as 4GiB, got '" + text + "'");
  uint64_t number = 0;
  for (size_t i = 0; i < end; ++i) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (number > (UINT64_MAX - digit) / 10) {
      return invalid_argument("byte size '" + text + "' does not fit in 64 bits");
    }
    number = number * 10 + digit;
  }
  std::string suffix = lower(text.substr(end));
  int shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") shift = 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") shift = 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") shift = 30;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib") shift = 40;
  else return invalid_argument("unknown size suffix '" + suffix + "' in '" + text + "'");
  if (shift > 0 && number > (UINT64_MAX >> shift)) {
    return invalid_argument("byte size '" + text + "' does not fit in 64 bits");
  }
  return number << shift;
}

StatusOr<FallbackMode> parse_fallback_mode(const std::string& text) {
  std::string value = lower(text);
  if (value == "warn") return FallbackMode::kWarn;
  if (value == "silent") return FallbackMode::kSilent;
  if (value == "error") return FallbackMode::kError;
  return invalid_argument("fallback mode must be warn, silent or error, got '" + text + "'");
}

StatusOr<Float64Policy> parse_float64_policy(const std::string& text) {
  std::string value = lower(text);
  if (value == "native") return Float64Policy::kNative;
  if (value == "float32") return Float64Policy::kFloat32;
  return invalid_argument("float64 policy must be native or float32, got '" + text + "'");
}

const char* fallback_mode_name(FallbackMode mode) {
  switch (mode) {
    case FallbackMode::kWarn: return "warn";
    case FallbackMode::kSilent: return "silent";
    case FallbackMode::kError: return "error";
  }
  return "warn";
}

const char* float64_policy_name(Float64Policy policy) {
  return policy == Float64Policy::kFloat32 ? "float32" : "native";
}

Config::Config() {
  auto note = [this](const char* name, const Status& status) {
    problems_ += std::string(name) + ": " + status.message() + " (using the default)\n";
  };
  if (const char* value = read_env("KILN_NUM_DEVICES")) {
    char* end = nullptr;
    long count = std::strtol(value, &end, 10);
    if (*end != '\0' || count < 0 || count > kMaxDevices) {
      note("KILN_NUM_DEVICES", invalid_argument("expected 0.." + std::to_string(kMaxDevices) +
                                                ", got '" + value + "'"));
    } else {
      num_devices_ = static_cast<int>(count);
    }
  }
  int share = num_devices_ > 0 ? num_devices_ : 1;
  device_memory_bytes_ = physical_memory_bytes() / 2 / static_cast<uint64_t>(share);
  if (const char* value = read_env("KILN_DEVICE_MEMORY")) {
    StatusOr<uint64_t> bytes = parse_byte_size(value);
    if (bytes.ok()) device_memory_bytes_ = bytes.value();
    else note("KILN_DEVICE_MEMORY", bytes.status());
  }
  if (const char* value = read_env("KILN_LAUNCH_BLOCKING")) {
    launch_blocking_ = std::string_view(value) != "0";
  }
  if (const char* value = read_env("KILN_HOLD_QUEUED_TENSORS")) {
    hold_queued_tensors_ = std::string_view(value) != "0";
  }
  if (const char* value = read_env("KILN_FALLBACK")) {
    StatusOr<FallbackMode> mode = parse_fallback_mode(value);
    if (mode.ok()) fallback_mode_ = static_cast<int>(mode.value());
    else note("KILN_FALLBACK", mode.status());
  }
  if (const char* value = read_env("KILN_FLOAT64")) {
    StatusOr<Float64Policy> policy = parse_float64_policy(value);
    if (policy.ok()) float64_policy_ = static_cast<int>(policy.value());
    else note("KILN_FLOAT64", policy.status());
  }
  if (const char* value = read_env("KILN_CC")) c_compiler_ = value;
  if (const char* value = read_env("KILN_COMPILE_TIMEOUT")) {
    char* end = nullptr;
    double seconds = std::strtod(value, &end);
    if (*end != '\0' || !(seconds > 0)) {
      note("KILN_COMPILE_TIMEOUT", invalid_argument(std::string("expected a positive number of seconds, got '") +
                                                        value + "'"));
    } else {
      compile_timeout_seconds_ = seconds;
    }
  }
  cache_dir_ = default_cache_dir();
  if (const char* value = read_env("KILN_CACHE_DIR")) cache_dir_ = value;
  if (const char* value = read_env("KILN_CACHE_SIZE")) {
    StatusOr<uint64_t> bytes = parse_byte_size(value);
    if (bytes.ok()) cache_size_bytes_ = bytes.value();
    else note("KILN_CACHE_SIZE", bytes.status());
  }
  if (const char* value = read_env("KILN_DISABLE_DISK_CACHE")) {
    disk_cache_disabled_ = std::string_view(value) != "0";
  }
  if (const char* value = read_env("KILN_DUMP_DIR")) dump_dir_ = value;
  if (const char* value = read_env("KILN_DISTRIBUTED_SHARED_MEMORY")) {
    distributed_shared_memory_ = std::string_view(value) != "0";
  }
  if (const char* value = read_env("KILN_ADAPTIVE_EAGER")) {
    std::string mode = lower(value);
    if (mode == "on" || mode == "1") adaptive_eager_mode_ = AdaptiveEagerMode::kOn;
    else if (mode == "off" || mode == "0") adaptive_eager_mode_ = AdaptiveEagerMode::kOff;
    else if (mode == "always") adaptive_eager_mode_ = AdaptiveEagerMode::kAlways;
    else note("KILN_ADAPTIVE_EAGER", invalid_argument("expected on, off or always"));
  }
  if (const char* value = read_env("KILN_LOG_LEVEL")) {
    std::string level = lower(value);
    if (level == "error") log_level_ = LogLevel::kError;
    else if (level == "warning") log_level_ = LogLevel::kWarning;
    else if (level == "info") log_level_ = LogLevel::kInfo;
    else if (level == "debug") log_level_ = LogLevel::kDebug;
    else note("KILN_LOG_LEVEL", invalid_argument("expected error, warning, info or debug"));
  }
}

FallbackMode Config::fallback_mode() const {
  return static_cast<FallbackMode>(fallback_mode_.load());
}

void Config::set_fallback_mode(FallbackMode mode) {
  fallback_mode_.store(static_cast<int>(mode));
}

Float64Policy Config::float64_policy() const {
  return static_cast<Float64Policy>(float64_policy_.load());
}

void Config::set_float64_policy(Float64Policy policy) {
  float64_policy_.store(static_cast<int>(policy));
}

Config& mutable_config() {
  static Config* instance = new Config();  // never destroyed: used by exit-time code
  return *instance;
}

const Config& config() { return mutable_config(); }

}  // namespace kiln
