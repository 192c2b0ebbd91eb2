"""The on-disk cache of lowered graphs: KILN_CACHE_DIR/programs.

A compiled graph is keyed by a hash of everything its lowering depends on:
the FX graph's code, the dtype, sizes, strides and device of every input,
the fallback option, the torch version and the source of Kiln's compiled
path (every module under torch_kiln/compile, and torch_kiln/fake_convolution.py);
and by the user's source line behind each node, which the lowered description
keeps for its error messages (an entry made from a copy of the code elsewhere
would name that copy's files). An entry holds the lowered description that
torch_kiln._C._Program builds a program from, so a process that meets a graph
an earlier one compiled skips the lowering; the program's kernels come from
the kernel cache, so it compiles nothing (docs/design/compiled_path.md).

Entries are unpickled, so the cache keeps the kernel cache's folder rules
(docs/design/kernel_cache.md): its folders are created private to the user,
and an entry, or a folder it is in, that belongs to another user or that
others may write is refused with an error naming it, as a planted pickle
would run code in the process that loads it.

The guarantees are the kernel cache's: an entry is written to a temporary file
and renamed into place, so a reader never sees half of one; it carries a
SHA-256 of its payload, and an entry that fails the check (or does not load)
is ignored and rewritten. Two processes compiling one graph at once write the
same bytes, and the last rename wins. Graphs with lifted tensor constants are
not cached (their data would have to be stored too).
"""
import functools
import hashlib
import os
import pickle
import tempfile

import torch

from ... import _C
from .graph_lowering import source_line

_FORMAT = b"kiln-program-cache-1\n"


# What a lowered graph depends on besides its FX graph: every module of the
# compiled path (torch_kiln/compile and its stages) and the layouts traced
# convolutions take (torch_kiln/fake_convolution.py).
_COMPILE_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRACING_MODULES = (os.path.join(os.path.dirname(_COMPILE_PACKAGE), "fake_convolution.py"),)


def _lowering_sources():
    """(name relative to torch_kiln, path) of each source the digest covers, in a fixed order."""
    root = os.path.dirname(_COMPILE_PACKAGE)
    paths = list(_TRACING_MODULES)
    for folder, subfolders, names in os.walk(_COMPILE_PACKAGE):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        paths.extend(os.path.join(folder, name) for name in names if name.endswith(".py"))
    return sorted((os.path.relpath(path, root), path) for path in paths)


@functools.lru_cache(maxsize=1)
def _lowering_source_digest():
    digest = hashlib.sha256()
    for name, path in _lowering_sources():
        with open(path, "rb") as file:
            digest.update(name.encode() + b"\0" + file.read())
    return digest.hexdigest()


def _directory():
    if _C._disk_cache_disabled():
        return None
    return os.path.join(_C._cache_directory(), "programs")


def graph_key(gm, fallback, kind="forward"):
    """The cache key of `gm`, or None when it cannot be cached. `kind`
    (inference, forward, backward) is part of it: the lowering of an
    inference graph differs (passes/small_products.py)."""
    digest = hashlib.sha256()
    digest.update(_FORMAT + torch.__version__.encode() + _lowering_source_digest().encode())
    digest.update(f"fallback={fallback}\nkind={kind}\n".encode())
    digest.update(gm.code.encode())
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            return None
        if node.op != "placeholder":
            digest.update(source_line(node).encode() + b"\n")
            continue
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            digest.update(repr((str(value.dtype), tuple(value.shape), value.stride(), value.storage_offset(),
                                str(value.device))).encode())
        else:
            digest.update(repr(type(value).__name__).encode())
    return digest.hexdigest()


def _check_folders(directory, folder):
    """Raises RuntimeError unless the cache root, `directory` and `folder` are the user's alone."""
    for path in (os.path.dirname(directory), directory, folder):
        _C._check_private(path, "program cache folder")


def load(key):
    """The LoweredGraph stored under `key`, or None."""
    directory = _directory()
    if key is None or directory is None:
        return None
    folder = os.path.join(directory, key[:2])
    path = os.path.join(folder, key + ".program")
    if not os.path.exists(path):
        return None
    _check_folders(directory, folder)
    _C._check_private(path, "program cache entry")
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return None
    header_length = len(_FORMAT) + 64
    checksum, payload = data[len(_FORMAT):header_length], data[header_length:]
    if not data.startswith(_FORMAT) or hashlib.sha256(payload).hexdigest().encode() != checksum:
        return None  # damaged: the caller compiles and store() rewrites it
    try:
        return pickle.loads(payload)
    except Exception:
        return None


def store(key, lowered):
    directory = _directory()
    if key is None or directory is None or lowered.constant_inputs:
        return
    folder = os.path.join(directory, key[:2])
    _C._make_private_directories(folder)
    _check_folders(directory, folder)
    payload = pickle.dumps(lowered, protocol=pickle.HIGHEST_PROTOCOL)
    data = _FORMAT + hashlib.sha256(payload).hexdigest().encode() + payload
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".program-")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, os.path.join(folder, key + ".program"))
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
