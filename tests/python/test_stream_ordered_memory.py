"""Device memory is reused in stream order, as on CUDA (docs/design/memory.md):
queued work lets go of the kiln tensors it uses, so a tensor the host drops
goes back to the pool at once and the next op's output takes its block, while
the work that still reads or writes it waits in the queue. Results must not
change, and the holds come back where ordering by one stream is not enough.

A device that ever handed out a second stream keeps the holds for the rest of
the process, and other tests in a pytest worker use streams: each check runs
in a fresh process (this file run as a script names the check)."""
import contextlib
import copy
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as functional
import torch_kiln


@contextlib.contextmanager
def held_stream():
    """Everything launched inside is queued behind an item that waits for the end of the block."""
    torch.kiln.synchronize()
    torch_kiln._C._test_hold_stream()
    try:
        yield
    finally:
        torch_kiln._C._test_release_stream()
    torch.kiln.synchronize()


def random(*sizes, seed=0):
    return torch.randn(*sizes, generator=torch.Generator().manual_seed(seed))


# One op of each launch path: a generated kernel, the direct BLAS product,
# a product through ATen (bfloat16), a convolution, and an FFT (the library call).
OPS = {
    "pointwise": (lambda x: x * 2 + 1, (64, 64)),
    "mm": (lambda x: x @ x, (256, 256)),
    "mm_bfloat16": (lambda x: (x.bfloat16() @ x.bfloat16()).float(), (256, 256)),
    "conv2d": (lambda x: functional.conv2d(x, x[:8, :4, :3, :3]), (8, 4, 32, 32)),
    "fft": (lambda x: torch.fft.rfft(x).abs(), (64, 256)),
}


def check_a_dropped_output_is_reused_while_its_work_is_still_queued(name):
    op, shape = OPS[name]
    x = random(*shape)
    device_x = x.to("kiln")
    with held_stream():
        first = op(device_x)
        address = first.data_ptr()
        del first
        second = op(device_x)
        reused = second.data_ptr() == address  # asserted after the release: a failing
    assert reused                              # assert prints tensors, which waits for the stream
    torch.testing.assert_close(second.cpu(), op(x), atol=0.1 if "bfloat16" in name else 1e-4, rtol=1e-2)


def check_memory_is_released_when_the_host_drops_it_not_when_the_queue_runs():
    x = torch.ones(256, 256, device="kiln")
    with held_stream():
        y = x * 2
        before = torch.kiln.memory_allocated()
        del y
        after = torch.kiln.memory_allocated()
    assert after == before - 256 * 256 * 4


def check_reuse_behind_queued_reads_keeps_every_result():
    x = random(128, 128)
    device_x = x.to("kiln")
    with held_stream():
        a = device_x * 2
        b = a + 1          # queued: reads a
        c = a @ a          # queued: reads a
        del a              # a's block is free; b and c have not run yet
        d = device_x * 3   # takes a's block, written after b and c read it
        e = device_x @ d
    torch.testing.assert_close(b.cpu(), x * 2 + 1)
    torch.testing.assert_close(c.cpu(), (x * 2) @ (x * 2), atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(d.cpu(), x * 3)
    torch.testing.assert_close(e.cpu(), x @ (x * 3), atol=1e-3, rtol=1e-4)


def check_a_training_loop_reusing_memory_matches_the_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 16 * 16, 10))
    kiln_model = copy.deepcopy(model).to("kiln")
    data = random(16, 3, 16, 16)
    labels = torch.arange(16) % 10
    losses = {}
    for device, net in (("cpu", model), ("kiln", kiln_model)):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        losses[device] = []
        for _ in range(5):  # the host runs ahead: each step's memory is freed while queued
            optimizer.zero_grad()
            loss = functional.cross_entropy(net(data.to(device)), labels.to(device))
            loss.backward()
            optimizer.step()
            losses[device].append(loss.detach())
    torch.testing.assert_close(torch.stack(losses["kiln"]).cpu(), torch.stack(losses["cpu"]), atol=1e-4, rtol=1e-4)


def in_fresh_process(check, *arguments):
    # Adaptive eager off: a pointwise op launched behind queued work would be
    # held in the stream's open region, which keeps its tensors' memory until
    # the region is submitted (test_adaptive_eager.py checks that rule).
    command = [sys.executable, os.path.abspath(__file__), check, *arguments]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, KILN_ADAPTIVE_EAGER="0"))
    assert completed.returncode == 0, completed.stderr[-3000:]


@pytest.mark.parametrize("name", list(OPS))
def test_a_dropped_output_is_reused_while_its_work_is_still_queued(name):
    in_fresh_process("check_a_dropped_output_is_reused_while_its_work_is_still_queued", name)


@pytest.mark.parametrize("check", ["check_memory_is_released_when_the_host_drops_it_not_when_the_queue_runs",
                                   "check_reuse_behind_queued_reads_keeps_every_result",
                                   "check_a_training_loop_reusing_memory_matches_the_cpu",
                                   "check_kiln_tensors_are_reused_in_stream_order_and_cpu_tensors_are_not"])
def test_in_a_process_that_uses_the_default_stream_only(check):
    in_fresh_process(check)


def run_python(code, **environment):
    env = dict(os.environ, **environment)
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                               env=env, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout.strip().splitlines()[-1]


def check_kiln_tensors_are_reused_in_stream_order_and_cpu_tensors_are_not():
    assert torch_kiln._C._reused_in_stream_order(torch.ones(4, device="kiln"))
    assert not torch_kiln._C._reused_in_stream_order(torch.ones(4))


def test_a_second_stream_brings_the_holds_back():
    # With several streams, a block freed while another stream's work uses it
    # could be reused on its own stream first: queued work holds its tensors again.
    assert run_python("""
        import torch, torch_kiln
        x = torch.ones(4, device="kiln")
        before = torch_kiln._C._reused_in_stream_order(x)
        side = torch.kiln.Stream()
        print(before, torch_kiln._C._reused_in_stream_order(x))
    """) == "True False"


def test_kiln_hold_queued_tensors_keeps_the_holds():
    assert run_python("""
        import torch, torch_kiln
        x = torch.ones(256, 256, device="kiln")
        torch_kiln._C._test_hold_stream()
        y = x * 2
        address = y.data_ptr()
        del y
        z = x * 2  # y is still held by its queued work: z cannot take its block
        torch_kiln._C._test_release_stream()
        torch.kiln.synchronize()
        print(torch_kiln._C._reused_in_stream_order(x), z.data_ptr() == address, bool((z == 2).all()))
    """, KILN_HOLD_QUEUED_TENSORS="1") == "False False True"


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
