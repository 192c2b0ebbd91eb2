#include "kiln/compiler/private_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace kiln {
namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Why `info` (of a file or folder) is not private to `user`; empty if it is.
std::string why_not_private(const struct stat& info, uid_t user) {
  if (info.st_uid != user) {
    return "it belongs to user id " + std::to_string(info.st_uid) + ", not to you (user id " +
           std::to_string(user) + ")";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return std::string("it is writable by ") +
           ((info.st_mode & S_IWOTH) != 0 ? "every user" : "its group") + " (mode " +
           octal_mode(info.st_mode) + ")";
  }
  return "";
}

}  // namespace

Status make_private_directories(const std::string& path) {
  namespace fs = std::filesystem;
  // The missing folders, deepest last, created top down.
  std::vector<fs::path> missing;
  std::error_code error;
  for (fs::path folder = fs::path(path); !folder.empty(); folder = folder.parent_path()) {
    if (fs::exists(folder, error)) break;
    missing.push_back(folder);
    if (folder == folder.parent_path()) break;
  }
  for (auto folder = missing.rbegin(); folder != missing.rend(); ++folder) {
    if (::mkdir(folder->c_str(), 0700) != 0 && errno != EEXIST) {
      return failed_precondition("cannot create the folder " + folder->string() + ": " +
                                 std::strerror(errno));
    }
  }
  return Status();
}

Status check_private(const std::string& path, std::string_view what) {
  const uid_t user = ::geteuid();
  struct stat link_info, info;
  if (::lstat(path.c_str(), &link_info) != 0 || ::stat(path.c_str(), &info) != 0) {
    return failed_precondition("cannot examine the " + std::string(what) + " " + path + ": " +
                               std::strerror(errno));
  }
  std::string problem;
  // A link's own mode means nothing, but whoever owns it chose where it leads.
  if (S_ISLNK(link_info.st_mode) && link_info.st_uid != user) {
    problem = "it is a symbolic link that belongs to user id " + std::to_string(link_info.st_uid) +
              ", not to you (user id " + std::to_string(user) + ")";
  } else {
    problem = why_not_private(info, user);
  }
  if (problem.empty()) return Status();
  const bool folder = S_ISDIR(info.st_mode);
  std::string fix = info.st_uid == user
                        ? "run `chmod go-w " + path + "`"
                        : (folder ? "remove it or " : "remove the file or its folder, or ") +
                              std::string("point KILN_CACHE_DIR at a folder of your own");
  return failed_precondition(
      "refusing to use the " + std::string(what) + " " + path + ": " + problem +
      ", so another user could place code there that Kiln would load and run. To fix it, " + fix +
      " (or set KILN_DISABLE_DISK_CACHE=1 to compile without a disk cache)");
}

}  // namespace kiln
