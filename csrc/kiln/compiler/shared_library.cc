#include "kiln/compiler/shared_library.h"

#include <dlfcn.h>

namespace kiln {

StatusOr<std::unique_ptr<SharedLibrary>> SharedLibrary::load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return internal_error("cannot load the kernel object " + path + ": " +
                          (reason != nullptr ? reason : "unknown error"));
  }
  return std::unique_ptr<SharedLibrary>(new SharedLibrary(path, handle));
}

SharedLibrary::~SharedLibrary() { dlclose(handle_); }

StatusOr<void*> SharedLibrary::symbol(const std::string& name) const {
  dlerror();  // clear a stale error: a symbol's value may legitimately be null
  void* address = dlsym(handle_, name.c_str());
  if (const char* reason = dlerror()) {
    return internal_error("kernel object " + path_ + " has no symbol '" + name + "': " + reason);
  }
  return address;
}

}  // namespace kiln
