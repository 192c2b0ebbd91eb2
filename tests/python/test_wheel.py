"""The binary wheel (issue 36, part 3): `pip wheel .` builds it, pip installs it
into a fresh virtual environment with no C++ build, and the installed package
works from a folder outside the clone.

Slow (a wheel build, a venv, pip and fresh kernel compiles: about 40 s on two
busy cores), so it runs only with KILN_TEST_WHEEL=1:

    KILN_TEST_WHEEL=1 python -m pytest -q tests/python/test_wheel.py

The throwaway venv gets torch without downloading it again: each distribution
the wheel requires (read from its METADATA), with everything those require in
turn, is symlinked from the running venv's site-packages. Nothing else is
visible there (no --system-site-packages, no .pth onto the whole venv, which
would hide a dependency the wheel forgot to declare: transformers, numpy and
pytest are all beside torch in the dev venv), and pip installs with
--no-index, so a requirement the venv cannot satisfy fails the install."""
import glob
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("KILN_TEST_WHEEL") != "1",
                                reason="slow: builds and installs the wheel; set KILN_TEST_WHEEL=1")

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _requirements(requirements, extras=()):
    """(name, extras) of each requirement that applies here: markers evaluated
    with no extra and with each of `extras` (torch needs cuda-toolkit[cublas,...])."""
    from packaging.requirements import Requirement
    applying = []
    for text in requirements or []:
        requirement = Requirement(text)
        if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra})
                                             for extra in ("", *extras)):
            applying.append((requirement.name, tuple(requirement.extras)))
    return applying


def _closure(requirements):
    """The installed distributions `requirements` need, themselves included."""
    seen, pending = {}, list(requirements)
    while pending:
        name, extras = pending.pop()
        key = (re.sub(r"[-_.]+", "-", name).lower(), extras)
        if key in seen:
            continue
        distribution = importlib.metadata.distribution(name)
        seen[key] = distribution
        pending.extend(_requirements(distribution.requires, extras))
    return list(seen.values())


def _link_distributions(distributions, site_packages):
    """Symlinks each distribution's top-level files and folders into `site_packages`."""
    source = sysconfig.get_paths()["purelib"]
    for distribution in distributions:
        tops = {path.parts[0] for path in distribution.files or [] if path.parts[0] != ".."}
        for top in sorted(tops):
            target = os.path.join(site_packages, top)
            if not os.path.lexists(target) and os.path.exists(os.path.join(source, top)):
                os.symlink(os.path.join(source, top), target)


def _wheel_requirements(wheel):
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def _run(arguments, **keywords):
    completed = subprocess.run(arguments, capture_output=True, text=True, timeout=600, **keywords)
    assert completed.returncode == 0, f"{arguments} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return completed


def _clean_environment(**extra):
    """The environment of a user's shell: nothing pointing at this clone."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "VIRTUAL_ENV", "TORCH_DEVICE_BACKEND_AUTOLOAD")
                   and not key.startswith("PYTEST")}
    environment.update(PYTHONNOUSERSITE="1", **extra)
    return environment


SMOKE = textwrap.dedent("""
    import importlib.metadata, json, os, sys
    import torch
    import torch_kiln
    result = {"torch_kiln": torch_kiln.__file__, "prefix": sys.prefix}
    x = torch.ones(2, device="kiln") + 1
    result["add"] = x.cpu().tolist()
    result["accelerator"] = str(torch.accelerator.current_accelerator())
    compiled = torch.compile(lambda a, b: torch.relu(a * b + 1), backend="kiln")
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    result["compiled_matches"] = torch.allclose(compiled(a.to("kiln"), b.to("kiln")).cpu(), torch.relu(a * b + 1))
    result["compile_graphs"] = torch_kiln.compile_stats()["graphs"]
    result["entry_points"] = sorted(
        group + ":" + point.value for group in ("torch.backends", "torch_dynamo_backends", "console_scripts")
        for point in importlib.metadata.entry_points(group=group) if point.name in ("kiln", "kiln-eval"))
    result["fallback_ops"] = torch_kiln.get_fallback_ops()
    print(json.dumps(result))
""")


def test_wheel_builds_installs_into_a_fresh_venv_and_works(tmp_path):
    # 1. Build the wheel the way the README says (no build isolation, no dependencies).
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", REPOSITORY, "-w", str(dist), "--no-build-isolation",
          "--no-deps", "--disable-pip-version-check", "-q"], cwd=REPOSITORY)
    wheels = glob.glob(str(dist / "torch_kiln-*.whl"))
    assert len(wheels) == 1, os.listdir(dist)
    wheel = wheels[0]
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert os.path.basename(wheel).endswith(f"-{tag}-{tag}-linux_x86_64.whl"), wheel
    requirements = _wheel_requirements(wheel)
    assert "torch==2.14.1" in requirements, requirements
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    packaged = {name for name in names if name.startswith("torch_kiln/")}
    sources = {os.path.relpath(path, os.path.join(REPOSITORY, "python")).replace(os.sep, "/")
               for path in glob.glob(os.path.join(REPOSITORY, "python", "torch_kiln", "**", "*.py"), recursive=True)}
    assert sources <= packaged, sorted(sources - packaged)
    assert any(re.fullmatch(r"torch_kiln/_C\..*\.so", name) for name in names), names

    # 2. A fresh venv holding only what the wheel declares (and what that needs).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    site_packages = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
                         ).stdout.strip()
    _link_distributions(_closure(_requirements(requirements)), site_packages)
    # No CMake, no compiler flags, no network: the wheel carries the built _C.
    _run([python, "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "-q", wheel],
         env=_clean_environment(PATH=f"{venv / 'bin'}:/usr/bin:/bin"))

    # 3. The installed _C finds libtorch through its runpath, in this venv's torch.
    extension = glob.glob(os.path.join(site_packages, "torch_kiln", "_C*.so"))[0]
    dependencies = _run(["ldd", extension]).stdout
    assert "not found" not in dependencies, dependencies
    libtorch = next(line for line in dependencies.splitlines() if "libtorch_cpu.so" in line)
    assert os.path.join(site_packages, "torch_kiln", "..", "torch", "lib") in libtorch, libtorch
    assert "debug_info" not in _run(["readelf", "-S", extension]).stdout  # stripped: 13 MB, not 272

    # 4. From a folder outside the clone, with a kernel cache of its own.
    outside = tmp_path / "user"
    outside.mkdir()
    environment = _clean_environment(KILN_CACHE_DIR=str(tmp_path / "cache"))
    completed = _run([python, "-c", SMOKE], cwd=outside, env=environment)
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["torch_kiln"].startswith(site_packages), result
    assert result["add"] == [2.0, 2.0]
    assert result["accelerator"] == "kiln"
    assert result["compiled_matches"] is True and result["compile_graphs"] >= 1, result
    assert result["entry_points"] == ["console_scripts:torch_kiln.eval.cli:main",
                                      "torch.backends:torch_kiln:_autoload",
                                      "torch_dynamo_backends:torch_kiln.compile:kiln"], result
    assert result["fallback_ops"] == {}, result

    # 5. kiln-eval, the console script, evaluates a model file.
    shutil.copy(os.path.join(REPOSITORY, "examples", "mlp.py"), outside / "mlp.py")
    completed = _run([str(venv / "bin" / "kiln-eval"), "mlp.py", "--steps", "2", "--output", "reports"],
                     cwd=outside, env=environment)
    assert (outside / "reports" / "report.json").exists(), completed.stdout

    # 6. Without a C compiler, the first kernel says what is missing and how to fix it.
    completed = subprocess.run([python, "-c", "import torch; print(torch.ones(2, device='kiln') * 3)"],
                               cwd=outside, capture_output=True, text=True, timeout=120,
                               env=_clean_environment(KILN_CACHE_DIR=str(tmp_path / "empty-cache"),
                                                      KILN_CC="/nonexistent/cc"))
    assert completed.returncode != 0
    assert "the C compiler '/nonexistent/cc' does not run" in completed.stderr, completed.stderr[-2000:]
    assert "KILN_CC" in completed.stderr and "compiles its kernels" in completed.stderr, completed.stderr[-2000:]
