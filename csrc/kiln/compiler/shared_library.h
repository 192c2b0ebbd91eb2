// SharedLibrary: a compiled kernel object loaded into the process (dlopen).
//
// Owns the handle: the object is unloaded (dlclose) when the SharedLibrary is
// destroyed, so function pointers taken from it must not outlive it.
// Thread-safety: symbol() may be called from several threads.
#pragma once

#include <memory>
#include <string>

#include "kiln/base/status.h"

namespace kiln {

class SharedLibrary {
 public:
  // Loads `path` with local symbols, resolving everything now (RTLD_NOW), so
  // an unresolved reference fails here rather than in the middle of a launch.
  static StatusOr<std::unique_ptr<SharedLibrary>> load(const std::string& path);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  const std::string& path() const { return path_; }
  // The address of the exported function or object `name`.
  StatusOr<void*> symbol(const std::string& name) const;

 private:
  SharedLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}

  std::string path_;
  void* handle_;
};

}  // namespace kiln
