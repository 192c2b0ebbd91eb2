#include "kiln/base/thread_name.h"

#include <pthread.h>

namespace kiln {

void set_current_thread_name(const std::string& name) {
  constexpr size_t kLinuxLimit = 15;
  pthread_setname_np(pthread_self(), name.substr(0, kLinuxLimit).c_str());
}

}  // namespace kiln
