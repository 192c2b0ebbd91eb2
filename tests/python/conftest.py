"""Shared helpers for the kiln pytest suites.

Tests that need a different configuration (KILN_* variables are read once per
process) run a small script in a fresh interpreter through run_python()."""
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import torch_kiln  # noqa: F401  (autoloaded by import torch; explicit for clarity)


def run_python(code, **environment):
    """Runs `code` in a new Python with extra environment variables; returns
    the CompletedProcess (stdout, stderr as text)."""
    env = dict(os.environ)
    env.update({key: str(value) for key, value in environment.items()})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(autouse=True)
def quiet_fallback_warnings():
    """Fallback warnings are asserted where they matter; elsewhere they are noise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*ran on the CPU.*")
        yield


@pytest.fixture(autouse=True)
def seeded_random_inputs():
    """Each test draws the same inputs whatever ran before it."""
    torch.manual_seed(0)
    yield


@pytest.fixture
def fresh_compile_state():
    """torch.compile tests: Dynamo's caches and Kiln's compile statistics
    start empty, and no compiled code outlives the test."""
    torch._dynamo.reset()
    torch_kiln.reset_compile_stats()
    yield
    torch._dynamo.reset()
