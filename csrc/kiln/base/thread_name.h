// Names for Kiln's own threads, so that they can be told apart in top -H,
// gdb, perf and /proc/<pid>/task/*/comm.
#pragma once

#include <string>

namespace kiln {

// Names the calling thread (Linux keeps 15 characters). Threads the named
// thread starts, such as an OpenMP team, inherit the name.
void set_current_thread_name(const std::string& name);

}  // namespace kiln
