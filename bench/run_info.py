"""What every benchmark prints first: the command, the commit, the date,
versions, the kiln build it loaded, the host and its load, so a figure can be
traced to its run. The same lines go into every benchmark's --json output as
"header", where bench/render_performance.py reads them."""
import datetime
import os
import platform
import shlex
import subprocess
import sys

import torch


def load():
    """The 1/5/15-minute load averages, as a hint of background contention."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit():
    """The checkout's commit, `git rev-parse --short HEAD`, with "-dirty" when
    tracked files differ from it (the build may then hold changes no commit
    has); "unknown" outside a git checkout."""
    def git(*arguments):
        return subprocess.run(["git", "-C", REPOSITORY, *arguments], capture_output=True,
                              text=True, check=True, timeout=30).stdout.strip()
    try:
        revision = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return revision + ("-dirty" if dirty else "")


def cpu_model():
    """The processor's model name (Linux's /proc/cpuinfo), else platform's guess."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def kiln_build():
    """The extension module this run loaded and when it was built."""
    import torch_kiln._C as extension
    built = datetime.datetime.fromtimestamp(os.path.getmtime(extension.__file__)).astimezone()
    return f"{extension.__file__} (built {built.isoformat(timespec='seconds')})"


def header(argv, versions=""):
    """Header lines; `versions` adds e.g. "numpy: 2.4.6" to the torch line."""
    extra = f"   {versions}" if versions else ""
    return [
        f"command : {' '.join(shlex.quote(a) for a in [sys.executable] + argv)}",
        f"commit  : {commit()}",
        f"date    : {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"torch   : {torch.__version__}{extra}   python: {platform.python_version()}",
        f"device  : {torch.kiln.get_device_name()}",
        f"kiln    : {kiln_build()}",
        f"host    : {platform.machine()} {cpu_model()}, os.cpu_count()={os.cpu_count()}, "
        f"torch.get_num_threads()={torch.get_num_threads()}",
        f"load    : {load()} at start (other processes share these cores)",
    ]


def enter_mode(device, threads=0):
    """For a benchmark's child process, which runs one mode: sets
    torch.set_num_threads(threads) (0 keeps PyTorch's default), loads Kiln for
    device "kiln" (autoload may be off), and returns the function that waits
    for the device's queued work (nothing to wait for on the CPU)."""
    if threads:
        torch.set_num_threads(threads)
    if device == "kiln":
        import torch_kiln  # noqa: F401
        return torch.kiln.synchronize
    return lambda: None
