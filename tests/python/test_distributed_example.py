"""The README's torchrun example runs: DDP on 2 kiln ranks."""
import os
import subprocess
import sys

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ddp_mlp.py")


@pytest.mark.parametrize("devices", ["1", "2"])  # every rank on kiln:0, or rank r on kiln:r
def test_torchrun_trains_the_ddp_example_on_two_ranks(devices):
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         EXAMPLE, "--steps", "3"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "KILN_NUM_DEVICES": devices})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines if line.startswith("step")] == [
        ["step", "0"], ["step", "1"], ["step", "2"]], result.stdout
    assert "parameters identical on all 2 ranks: True" in result.stdout, result.stdout
