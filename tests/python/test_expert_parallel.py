"""Expert parallelism (examples/expert_parallel.py): a mixture-of-experts layer
with its experts split over 2 kiln ranks, tokens exchanged with
all_to_all_single in uneven splits, trains as one process training every
expert on every rank's tokens does (on the CPU)."""
import os
import subprocess
import sys

import pytest
import torch

from distributed_ranks import run_ranks

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
sys.path.insert(0, EXAMPLES)
import expert_parallel  # noqa: E402

STEPS = 3


def train_rank(rank, world, steps):
    import torch.distributed as dist
    splits = []
    losses, parameters = expert_parallel.train(rank, world, steps, torch.device("kiln"), dist.group.WORLD, splits)
    return losses, {name: value.tolist() for name, value in parameters.items()}, splits


def test_experts_split_over_two_ranks_train_as_one_process_does():
    results = run_ranks(train_rank, 2, STEPS)
    expected_losses, expected = expert_parallel.reference(STEPS, 2)
    parameters = {}
    for rank, (losses, owned, splits) in results.items():
        assert losses == pytest.approx(expected_losses, rel=1e-5), rank
        parameters.update(owned)
        # Uneven splits, as routing makes them: not every rank sends every rank the same count.
        assert any(len(set(send)) > 1 or len(set(receive)) > 1 for send, receive in splits), splits
    assert set(parameters) == set(expected)
    for name, value in expected.items():
        torch.testing.assert_close(torch.tensor(parameters[name]), value, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("devices", ["2"])
def test_the_example_runs_under_torchrun_on_a_device_mesh(devices):
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         os.path.join(EXAMPLES, "expert_parallel.py"), "--steps", "2"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "KILN_NUM_DEVICES": devices})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parameters match one process training every expert: True" in result.stdout, result.stdout
