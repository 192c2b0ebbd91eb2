// Private folders: what keeps the kernel cache from running another user's code.
//
// Kiln dlopens the shared objects it finds in its cache folder. Anyone who can
// write there (another user of the machine, through a folder writable by its
// group or by everyone, or one they own) could put an object there that the
// next Kiln process loads and runs as its own user. So the cache creates its
// folders private to the user (0700) and writes its files 0600, and before it
// reads or writes anything there it checks that each folder and file belongs
// to the user running Kiln and that no one else may write it, refusing
// otherwise with an error that names the path and the fix. The threat model is
// in docs/design/kernel_cache.md.
//
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "kiln/base/status.h"

namespace kiln {

// Creates `path` and each missing folder above it, every one created with
// mode 0700. Folders that exist already are left as they are (check them with
// check_private).
Status make_private_directories(const std::string& path);

// OK when `path` (a folder or a file; a symbolic link is followed, and must
// itself be the user's) exists, belongs to the effective user and is not
// writable by its group or by others. Otherwise kFailedPrecondition naming
// `what` (e.g. "kernel cache folder"), the path, what is wrong and the fix;
// kFailedPrecondition also when it cannot be examined.
Status check_private(const std::string& path, std::string_view what);

}  // namespace kiln
