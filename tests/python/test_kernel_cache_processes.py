"""The kernel cache across processes: a second run compiles nothing, a damaged
entry is rebuilt, processes started together compile each kernel once, a
compiler failure, a hanging compiler or a process killed mid-compile leaves the
cache usable, so does a full disk once there is room again, a cache folder
that cannot be made is worked around, one mounted read-only still serves its
entries, and one others may write is refused."""
import glob
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

# A few steps of a small model whose ops are all compiled (or library calls).
MODEL = """
import json, torch, torch_kiln
torch.manual_seed(0)
x = torch.rand(16, 8).to("kiln")
w = (torch.rand(8, 4) - 0.5).to("kiln")
for step in range(3):
    y = torch.mm(x, w)
    z = (y * 2.0 - 1.0).maximum(torch.zeros_like(y))
    loss = z.sum() / z.numel() + z.amax(1).mean()
print(json.dumps({"loss": loss.item(), **torch_kiln.compiler_stats()}))
"""


def run_model(cache_dir, extra_environment=None, code=MODEL):
    # Adaptive eager off: its fused kernels compile in the background, so how
    # many objects a run leaves would depend on how fast the machine is
    # (test_adaptive_eager.py covers them).
    env = dict(os.environ, KILN_CACHE_DIR=str(cache_dir), KILN_ADAPTIVE_EAGER="0")
    env.update(extra_environment or {})
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process):
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


def kernel_objects(cache_dir):
    return glob.glob(os.path.join(str(cache_dir), "kernels", "*", "*.so"))


def failing_multiply(cache_dir, extra_environment=None, then_remove=None):
    """Runs a multiply whose kernel must fail to build in a new process: its
    error message and seconds, then (after removing `then_remove`, what made
    it fail) the multiply's result again, with the compiler's statistics."""
    retry = "" if then_remove is None else f"""
    os.remove({str(then_remove)!r})
    outcome["result"] = (a * a).cpu().tolist()"""
    code = f"""
    import json, os, time, torch, torch_kiln
    a = torch.arange(6.0).to("kiln")
    start = time.monotonic()
    try:
        a * a
        raise SystemExit("the multiply should have failed")
    except RuntimeError as error:
        outcome = {{"message": str(error), "seconds": time.monotonic() - start}}{retry}
    print(json.dumps({{**outcome, **torch_kiln.compiler_stats()}}))
    """
    return finish(run_model(cache_dir, extra_environment, code))


def compiler_script(path, body):
    """A compiler at `path` that answers --version as `cc` does and runs `body` (sh) for a compile."""
    path.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --version ] && exec cc --version; done\n" + body)
    path.chmod(0o700)
    return path


def test_second_process_compiles_nothing(tmp_path):
    first = finish(run_model(tmp_path))
    assert first["kernels_compiled"] > 0
    second = finish(run_model(tmp_path))
    assert second["kernels_compiled"] == 0
    assert second["disk_hits"] == first["kernels_compiled"]
    assert second["loss"] == first["loss"]


def test_damaged_entry_is_rebuilt(tmp_path):
    first = finish(run_model(tmp_path))
    objects = kernel_objects(tmp_path)
    assert len(objects) == first["kernels_compiled"]
    with open(objects[0], "r+b") as damaged:
        damaged.truncate(100)
    second = finish(run_model(tmp_path))
    assert second["kernels_compiled"] == 1
    assert second["loss"] == first["loss"]


def test_processes_started_together_compile_each_kernel_once(tmp_path):
    reference = finish(run_model(tmp_path / "reference"))
    shared = tmp_path / "shared"
    processes = [run_model(shared) for _ in range(3)]
    results = [finish(process) for process in processes]
    assert sum(result["kernels_compiled"] for result in results) == reference["kernels_compiled"]
    assert all(result["loss"] == reference["loss"] for result in results)


def test_compiler_failure_names_the_op_and_leaves_the_cache_usable(tmp_path):
    # A compiler that fails while a flag file exists, and is `cc` otherwise.
    flag = tmp_path / "fail"
    compiler = tmp_path / "flaky-cc"
    compiler.write_text(f"#!/bin/sh\nif [ -e '{flag}' ] && [ \"$1\" != --version ]; then\n"
                        "  echo 'flaky-cc: refusing on purpose' >&2; exit 1\nfi\nexec cc \"$@\"\n")
    compiler.chmod(compiler.stat().st_mode | stat.S_IEXEC)
    flag.write_text("")
    outcome = failing_multiply(tmp_path / "cache", {"KILN_CC": str(compiler)}, then_remove=flag)
    assert "aten::mul" in outcome["message"]
    assert "refusing on purpose" in outcome["message"]
    assert ".c" in outcome["message"]  # says where the source was saved
    assert outcome["result"] == [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]
    assert outcome["compile_failures"] == 1
    assert outcome["kernels_compiled"] >= 1


def test_a_cache_folder_others_may_write_is_refused(tmp_path):
    # Another user could plant an object there that Kiln would load and run:
    # the first op that needs a kernel fails, naming the folder and the fix,
    # and nothing is compiled into it.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    process = run_model(shared)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode != 0
    assert f"refusing to use the kernel cache folder {shared}: it is writable by every user" in stderr, stderr
    assert f"chmod go-w {shared}" in stderr
    assert kernel_objects(shared) == []
    shared.chmod(0o700)
    assert finish(run_model(shared))["kernels_compiled"] > 0


def test_a_fresh_cache_is_private_to_its_user(tmp_path):
    cache = tmp_path / "new" / "cache"
    finish(run_model(cache))
    for folder in (tmp_path / "new", cache, cache / "kernels"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for path in (cache / "kernels").rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_a_hanging_compiler_is_stopped_and_the_op_fails_naming_it(tmp_path):
    # Answers --version, then hangs on every compile: KILN_COMPILE_TIMEOUT
    # stops it, and the op's error says so; nothing is cached.
    compiler = compiler_script(tmp_path / "hanging-cc", "sleep 60\n")
    outcome = failing_multiply(tmp_path / "cache", {"KILN_CC": str(compiler), "KILN_COMPILE_TIMEOUT": "1"})
    assert "aten::mul" in outcome["message"]
    assert "ran longer than 1 s and was stopped" in outcome["message"], outcome["message"]
    assert outcome["seconds"] < 30
    assert outcome["kernels_compiled"] == 0 and kernel_objects(tmp_path / "cache") == []


def test_a_process_killed_during_a_compile_leaves_the_cache_usable(tmp_path):
    # The compiler signals that it started, then hangs; the process is killed
    # there. It holds no lock any more and left no entry: the next process
    # compiles the kernel and gets the reference result.
    started = tmp_path / "started"
    compiler = compiler_script(tmp_path / "stalling-cc", f"echo $$ > '{started}'\nsleep 60\n")
    cache = tmp_path / "cache"
    reference = finish(run_model(tmp_path / "reference"))
    victim = run_model(cache, {"KILN_CC": str(compiler)})
    deadline = time.monotonic() + 120
    while not started.exists() or not started.read_text().strip():
        assert time.monotonic() < deadline and victim.poll() is None, "the compile never started"
        time.sleep(0.05)
    victim.kill()
    victim.communicate(timeout=60)
    os.kill(int(started.read_text()), signal.SIGKILL)  # the orphaned compiler
    survivor = finish(run_model(cache))
    assert survivor["loss"] == reference["loss"]
    assert survivor["kernels_compiled"] == reference["kernels_compiled"]


def test_a_compiler_that_is_not_there_is_named_in_the_error(tmp_path):
    outcome = failing_multiply(tmp_path / "cache", {"KILN_CC": "/nonexistent/cc"})
    assert "the C compiler '/nonexistent/cc' does not run" in outcome["message"], outcome["message"]
    assert "point KILN_CC at it" in outcome["message"]


def test_a_cache_folder_that_cannot_be_created_compiles_without_it(tmp_path):
    # KILN_CACHE_DIR under a file: no folder can be made there. Kiln warns
    # and compiles each kernel in a private temporary folder instead.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    reference = finish(run_model(tmp_path / "reference"))
    process = run_model(blocker / "cache")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "cannot be written" in stderr and "compiled without it" in stderr, stderr
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["loss"] == reference["loss"] and result["disk_hits"] == 0


def mount_tmpfs(mount_point, size):
    """Mounts a tmpfs of `size` at `mount_point` (made here), when this user may (root); else skips."""
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a file system here: {mounted.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB file system."""
    mount_tmpfs(tmp_path / "small-disk", "256k")
    yield tmp_path / "small-disk"
    subprocess.run(["umount", str(tmp_path / "small-disk")], check=True)


@pytest.fixture
def own_disk(tmp_path):
    """A file system of its own, which a test may remount read-only."""
    mount_tmpfs(tmp_path / "disk", "64m")
    yield tmp_path / "disk"
    subprocess.run(["umount", str(tmp_path / "disk")], check=True)


def test_a_full_disk_fails_the_op_naming_it_and_recovers_once_there_is_room(small_disk):
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (252 << 10))
    outcome = failing_multiply(small_disk / "cache", then_remove=filler)
    assert "aten::mul" in outcome["message"] and "No space left on device" in outcome["message"], outcome
    assert outcome["result"] == [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]
    assert len(kernel_objects(small_disk / "cache")) == outcome["kernels_compiled"] >= 1


def test_a_read_only_cache_loads_its_kernels_and_compiles_the_rest_without_it(own_disk):
    # A cache filled once, then mounted read-only (as a cache built into a
    # container image is): its entries load without their locks, and a kernel
    # it lacks compiles in a temporary folder, with one warning.
    cache = own_disk / "cache"
    filled = finish(run_model(cache))
    assert filled["kernels_compiled"] >= 1
    subprocess.run(["mount", "-o", "remount,ro", str(own_disk)], check=True)
    try:
        process = run_model(cache)
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        again = json.loads(stdout.strip().splitlines()[-1])
        assert again["loss"] == filled["loss"]
        assert again["kernels_compiled"] == 0 and again["disk_hits"] == filled["kernels_compiled"]
        assert "cannot be written" not in stderr, stderr

        process = run_model(cache, code=MODEL.replace("z.amax(1).mean()", "z.sin().amax(1).mean() + z.cos().sum()"))
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        more = json.loads(stdout.strip().splitlines()[-1])
        assert more["kernels_compiled"] >= 2 and more["disk_hits"] >= 1
        assert stderr.count("cannot be written") == 1 and "Read-only file system" in stderr, stderr
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(own_disk)], check=True)
