#include "kiln/base/config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "kiln/base/logging.h"

namespace kiln {
namespace {

uint64_t bytes_of(const std::string& text) {
  StatusOr<uint64_t> parsed = parse_byte_size(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().message();
  return parsed.ok() ? parsed.value() : 0;
}

TEST(ParseByteSize, PlainByteCount) {
  EXPECT_EQ(bytes_of("1048576"), uint64_t{1048576});
  EXPECT_EQ(bytes_of("0"), uint64_t{0});
  EXPECT_EQ(bytes_of("7"), uint64_t{7});
  EXPECT_EQ(bytes_of("512b"), uint64_t{512});
}

TEST(ParseByteSize, BinarySuffixes) {
  EXPECT_EQ(bytes_of("4GiB"), uint64_t{4} << 30);
  EXPECT_EQ(bytes_of("512M"), uint64_t{512} << 20);
  EXPECT_EQ(bytes_of("512MB"), uint64_t{512} << 20);
  EXPECT_EQ(bytes_of("3k"), uint64_t{3} << 10);
  EXPECT_EQ(bytes_of("3KiB"), uint64_t{3} << 10);
  EXPECT_EQ(bytes_of("2g"), uint64_t{2} << 30);
  EXPECT_EQ(bytes_of("1T"), uint64_t{1} << 40);
  EXPECT_EQ(bytes_of("1tib"), uint64_t{1} << 40);
}

TEST(ParseByteSize, RejectsBadSuffix) {
  for (const char* text : {"4GX", "12 MiB", "4.5G", "10PB", "1Gi", "5 "}) {
    StatusOr<uint64_t> parsed = parse_byte_size(text);
    EXPECT_FALSE(parsed.ok()) << text;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_NE(parsed.status().message().find(text), std::string::npos)
          << "the message should quote the input: " << parsed.status().message();
    }
  }
}

TEST(ParseByteSize, RejectsEmptyAndNonNumeric) {
  for (const char* text : {"", "GiB", "-1", "-4G", " 4G", "abc"}) {
    StatusOr<uint64_t> parsed = parse_byte_size(text);
    EXPECT_FALSE(parsed.ok()) << "'" << text << "'";
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseByteSize, RejectsValuesThatOverflow) {
  // 2^64 itself, and a suffix that shifts significant bits out of 64 bits.
  for (const char* text : {"18446744073709551616", "99999999999999999999999", "16777216T",
                           "17179869184G"}) {
    StatusOr<uint64_t> parsed = parse_byte_size(text);
    EXPECT_FALSE(parsed.ok()) << text << " parsed as " << (parsed.ok() ? parsed.value() : 0);
  }
  // The largest values that still fit are accepted.
  EXPECT_EQ(bytes_of("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(bytes_of("16777215T"), uint64_t{16777215} << 40);
}

TEST(ParseFallbackMode, AcceptsTheThreeModesInAnyCase) {
  struct Case {
    const char* text;
    FallbackMode mode;
  };
  for (Case c : {Case{"warn", FallbackMode::kWarn}, Case{"silent", FallbackMode::kSilent},
                 Case{"error", FallbackMode::kError}, Case{"ERROR", FallbackMode::kError},
                 Case{"Warn", FallbackMode::kWarn}}) {
    StatusOr<FallbackMode> parsed = parse_fallback_mode(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.value(), c.mode) << c.text;
  }
}

TEST(ParseFallbackMode, RejectsOtherValues) {
  for (const char* text : {"", "warning", "strict", "1", " warn"}) {
    StatusOr<FallbackMode> parsed = parse_fallback_mode(text);
    EXPECT_FALSE(parsed.ok()) << "'" << text << "'";
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(parsed.status().message().find("warn, silent or error"), std::string::npos);
    }
  }
}

TEST(ParseFallbackMode, NamesRoundTrip) {
  for (FallbackMode mode : {FallbackMode::kWarn, FallbackMode::kSilent, FallbackMode::kError}) {
    StatusOr<FallbackMode> parsed = parse_fallback_mode(fallback_mode_name(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), mode);
  }
  EXPECT_STREQ(fallback_mode_name(FallbackMode::kSilent), "silent");
}

TEST(ParseFloat64Policy, AcceptsNativeAndFloat32) {
  StatusOr<Float64Policy> native = parse_float64_policy("native");
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native.value(), Float64Policy::kNative);
  StatusOr<Float64Policy> float32 = parse_float64_policy("FLOAT32");
  ASSERT_TRUE(float32.ok());
  EXPECT_EQ(float32.value(), Float64Policy::kFloat32);
  for (Float64Policy policy : {Float64Policy::kNative, Float64Policy::kFloat32}) {
    StatusOr<Float64Policy> parsed = parse_float64_policy(float64_policy_name(policy));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), policy);
  }
}

TEST(ParseFloat64Policy, RejectsOtherValues) {
  for (const char* text : {"", "float64", "double", "fp32", "native "}) {
    StatusOr<Float64Policy> parsed = parse_float64_policy(text);
    EXPECT_FALSE(parsed.ok()) << "'" << text << "'";
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(Config, SettersOverrideAndAreVisibleThroughConfig) {
  Config& settings = mutable_config();
  FallbackMode saved_mode = settings.fallback_mode();
  Float64Policy saved_policy = settings.float64_policy();
  settings.set_fallback_mode(FallbackMode::kError);
  settings.set_float64_policy(Float64Policy::kFloat32);
  EXPECT_EQ(config().fallback_mode(), FallbackMode::kError);
  EXPECT_EQ(config().float64_policy(), Float64Policy::kFloat32);
  settings.set_fallback_mode(FallbackMode::kSilent);
  EXPECT_EQ(config().fallback_mode(), FallbackMode::kSilent);
  settings.set_fallback_mode(saved_mode);
  settings.set_float64_policy(saved_policy);
  EXPECT_EQ(&config(), &mutable_config());
}

TEST(Logging, ErrorsAreAlwaysEnabledAndLevelsAreOrdered) {
  EXPECT_TRUE(log_enabled(LogLevel::kError));
  // Enabling a level enables every more severe level.
  if (log_enabled(LogLevel::kDebug)) {
      EXPECT_TRUE(log_enabled(LogLevel::kInfo));
    }
  if (log_enabled(LogLevel::kInfo)) {
      EXPECT_TRUE(log_enabled(LogLevel::kWarning));
    }
  EXPECT_EQ(log_enabled(LogLevel::kDebug), config().log_level() == LogLevel::kDebug);
}

// The environment is read once per process, so each case runs in a child
// process that re-executes this binary ("threadsafe" death-test style) and sets
// the variables before its first call to config().
class ConfigFromEnvironment : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(ConfigFromEnvironment, ReadsEveryVariable) {
  EXPECT_EXIT(
      {
        setenv("KILN_NUM_DEVICES", "3", 1);
        setenv("KILN_DEVICE_MEMORY", "512MiB", 1);
        setenv("KILN_LAUNCH_BLOCKING", "1", 1);
        setenv("KILN_FALLBACK", "error", 1);
        setenv("KILN_FLOAT64", "float32", 1);
        setenv("KILN_LOG_LEVEL", "debug", 1);
        const Config& settings = config();
        bool good = settings.num_devices() == 3 &&
                    settings.device_memory_bytes() == (uint64_t{512} << 20) &&
                    settings.launch_blocking() &&
                    settings.fallback_mode() == FallbackMode::kError &&
                    settings.float64_policy() == Float64Policy::kFloat32 &&
                    settings.log_level() == LogLevel::kDebug && settings.problems().empty() &&
                    log_enabled(LogLevel::kDebug);
        if (!good) std::fprintf(stderr, "unexpected config: %s\n", settings.problems().c_str());
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ConfigFromEnvironment, DefaultsWhenUnset) {
  EXPECT_EXIT(
      {
        for (const char* name : {"KILN_NUM_DEVICES", "KILN_DEVICE_MEMORY", "KILN_LAUNCH_BLOCKING",
                                 "KILN_FALLBACK", "KILN_FLOAT64", "KILN_LOG_LEVEL"}) {
          unsetenv(name);
        }
        const Config& settings = config();
        bool good = settings.num_devices() == 1 && settings.device_memory_bytes() > 0 &&
                    !settings.launch_blocking() &&
                    settings.fallback_mode() == FallbackMode::kWarn &&
                    settings.float64_policy() == Float64Policy::kNative &&
                    settings.log_level() == LogLevel::kWarning && settings.problems().empty() &&
                    !log_enabled(LogLevel::kInfo);
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ConfigFromEnvironment, BadValuesFallBackToDefaultsAndAreReported) {
  EXPECT_EXIT(
      {
        setenv("KILN_NUM_DEVICES", "65", 1);
        setenv("KILN_DEVICE_MEMORY", "lots", 1);
        setenv("KILN_LAUNCH_BLOCKING", "0", 1);
        setenv("KILN_FALLBACK", "maybe", 1);
        setenv("KILN_FLOAT64", "half", 1);
        setenv("KILN_LOG_LEVEL", "loud", 1);
        const Config& settings = config();
        const std::string& problems = settings.problems();
        bool good = settings.num_devices() == 1 && settings.device_memory_bytes() > 0 &&
                    !settings.launch_blocking() &&
                    settings.fallback_mode() == FallbackMode::kWarn &&
                    settings.float64_policy() == Float64Policy::kNative &&
                    settings.log_level() == LogLevel::kWarning;
        for (const char* name : {"KILN_NUM_DEVICES", "KILN_DEVICE_MEMORY", "KILN_FALLBACK",
                                 "KILN_FLOAT64", "KILN_LOG_LEVEL"}) {
          if (problems.find(name) == std::string::npos) good = false;
        }
        if (!good) std::fprintf(stderr, "problems: %s\n", problems.c_str());
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ConfigFromEnvironment, ReadsTheKernelCacheVariables) {
  EXPECT_EXIT(
      {
        setenv("KILN_CACHE_DIR", "/tmp/kiln-config-test-cache", 1);
        setenv("KILN_CACHE_SIZE", "64MiB", 1);
        setenv("KILN_DISABLE_DISK_CACHE", "1", 1);
        setenv("KILN_DUMP_DIR", "/tmp/kiln-config-test-dump", 1);
        const Config& settings = config();
        bool good = settings.cache_dir() == "/tmp/kiln-config-test-cache" &&
                    settings.cache_size_bytes() == (uint64_t{64} << 20) &&
                    settings.disk_cache_disabled() &&
                    settings.dump_dir() == "/tmp/kiln-config-test-dump" &&
                    settings.problems().empty();
        if (!good) std::fprintf(stderr, "unexpected config: %s\n", settings.problems().c_str());
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ConfigFromEnvironment, KernelCacheDefaultsFollowXdgAndHome) {
  EXPECT_EXIT(
      {
        for (const char* name : {"KILN_CACHE_DIR", "KILN_CACHE_SIZE", "KILN_DISABLE_DISK_CACHE",
                                 "KILN_DUMP_DIR"}) {
          unsetenv(name);
        }
        setenv("XDG_CACHE_HOME", "/tmp/kiln-xdg", 1);
        const Config& settings = config();
        bool good = settings.cache_dir() == "/tmp/kiln-xdg/kiln" &&
                    settings.cache_size_bytes() == (uint64_t{1} << 30) &&
                    !settings.disk_cache_disabled() && settings.dump_dir().empty() &&
                    settings.problems().empty();
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        unsetenv("KILN_CACHE_DIR");
        unsetenv("XDG_CACHE_HOME");
        setenv("HOME", "/tmp/kiln-home", 1);
        std::_Exit(config().cache_dir() == "/tmp/kiln-home/.cache/kiln" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ConfigFromEnvironment, BadCacheSizeIsReported) {
  EXPECT_EXIT(
      {
        setenv("KILN_CACHE_SIZE", "huge", 1);
        setenv("KILN_DISABLE_DISK_CACHE", "0", 1);
        const Config& settings = config();
        bool good = settings.cache_size_bytes() == (uint64_t{1} << 30) &&
                    !settings.disk_cache_disabled() &&
                    settings.problems().find("KILN_CACHE_SIZE") != std::string::npos;
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ConfigFromEnvironment, ZeroDevicesIsAllowed) {
  EXPECT_EXIT(
      {
        setenv("KILN_NUM_DEVICES", "0", 1);
        unsetenv("KILN_DEVICE_MEMORY");
        const Config& settings = config();
        std::_Exit(settings.num_devices() == 0 && settings.problems().empty() &&
                           settings.device_memory_bytes() > 0
                       ? 0
                       : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kiln
