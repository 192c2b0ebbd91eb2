"""Streams and events of the kiln device, through torch.kiln and torch.accelerator."""
import os

import pytest
import torch

from conftest import run_python


def test_streams_come_from_a_pool_and_are_not_the_default():
    default = torch.kiln.default_stream()
    assert default.stream_id == 0
    assert torch.kiln.current_stream() == default
    created = torch.kiln.Stream()
    assert isinstance(created, torch.Stream) and created.stream_id != 0
    assert created.device == torch.device("kiln:0")


def test_stream_context_switches_and_restores():
    side = torch.kiln.Stream()
    with torch.kiln.stream(side):
        assert torch.kiln.current_stream() == side
        assert torch.accelerator.current_stream() == side
    assert torch.kiln.current_stream() == torch.kiln.default_stream()


def test_two_streams_ordered_by_events():
    producer, consumer = torch.kiln.Stream(), torch.kiln.Stream()
    source = torch.zeros(1 << 20, device="kiln")
    torch.kiln.synchronize()
    with torch.kiln.stream(producer):
        for _ in range(10):
            source.add_(1)
        ready = torch.kiln.Event()
        ready.record(producer)
    with torch.kiln.stream(consumer):
        consumer.wait_event(ready)
        result = torch.empty_like(source)
        result.copy_(source)
    consumer.synchronize()
    assert torch.equal(result.cpu(), torch.full((1 << 20,), 10.0))


def test_wait_stream():
    first, second = torch.kiln.Stream(), torch.kiln.Stream()
    data = torch.zeros(1000, device="kiln")
    with torch.kiln.stream(first):
        data.fill_(3)
    second.wait_stream(first)
    with torch.kiln.stream(second):
        copied = data.clone()
    torch.kiln.synchronize()
    assert torch.equal(copied.cpu(), torch.full((1000,), 3.0))


def test_event_elapsed_time_is_positive():
    start = torch.kiln.Event(enable_timing=True)
    end = torch.kiln.Event(enable_timing=True)
    data = torch.ones(1 << 22, device="kiln")
    start.record()
    for _ in range(5):
        data.fill_(2.0)
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) > 0


def test_elapsed_time_needs_timing():
    start, end = torch.kiln.Event(), torch.kiln.Event()
    start.record()
    end.record()
    end.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        start.elapsed_time(end)


def test_stream_query_and_synchronize():
    stream = torch.kiln.Stream()
    with torch.kiln.stream(stream):
        torch.ones(1 << 20, device="kiln").fill_(1)
    stream.synchronize()
    assert stream.query()


def test_launch_blocking_runs_work_before_returning():
    result = run_python("""
        import torch, torch_kiln
        assert torch_kiln._C._launch_blocking()
        x = torch.zeros(1 << 20, device="kiln")
        x.fill_(4)
        assert torch.kiln.current_stream().query()   # nothing left queued
        print(x.sum().item())
    """, KILN_LAUNCH_BLOCKING=1)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(float(4 << 20))


@pytest.mark.skipif(os.environ.get("KILN_LAUNCH_BLOCKING") == "1",
                    reason="blocking launches report at the op itself")
def test_a_queued_failure_surfaces_at_the_next_sync_and_the_stream_recovers():
    import torch_kiln

    x = torch.arange(4.0, device="kiln")
    torch_kiln._C._test_enqueue_failure("boom")
    with pytest.raises(RuntimeError, match=r"kiln::test_failure failed on kiln:0 stream 0: boom"):
        torch.kiln.synchronize()
    torch.kiln.synchronize()                      # reported once, then cleared
    torch_kiln._C._test_enqueue_failure("again")
    with pytest.raises(RuntimeError, match="again"):
        x.cpu()                                    # a copy to the host is a sync point
    x.add_(1)
    assert torch.equal(x.cpu(), torch.arange(4.0) + 1)


def test_threads_on_their_own_streams_get_correct_results():
    import threading

    errors = []

    def work(seed):
        try:
            with torch.kiln.stream(torch.kiln.Stream()):
                generator = torch.Generator().manual_seed(seed)
                for _ in range(50):
                    a = torch.randn(64, 64, generator=generator)
                    device = a.to("kiln")
                    product = (device @ device).add_(1)
                    torch.testing.assert_close(product.cpu(), a @ a + 1)
                    device.fill_(2.0)
                    assert torch.equal(device.cpu(), torch.full((64, 64), 2.0))
        except Exception as error:  # reported below, with the thread's seed
            errors.append((seed, repr(error)))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert not errors, errors


def test_a_loop_far_ahead_of_the_device_waits_for_room_and_loses_nothing():
    # Thousands of small launches behind slow work fill the stream's bounded
    # queue (Stream::kMaxQueued), so the loop waits for the worker. Each
    # result's Python object is dropped while its work is still queued, and
    # the worker needs the GIL to release it: the waiting thread must not hold
    # it (a deadlock would time the subprocess out).
    code = """
        import torch
        import torch_kiln
        big = torch.randn(1024, 1024, device="kiln")
        for _ in range(4):
            big = big @ big / 32
        values = torch.zeros(256, device="kiln")
        for _ in range(4000):
            values = values + 1
        print(sorted(set(values.cpu().tolist())))
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[4000.0]"


def test_exit_with_work_still_queued_is_clean():
    # The last references to tensors with Python objects may sit in queued
    # work; the stream is drained at exit, before Python finalizes, so the
    # worker never needs the GIL of a dying interpreter (which aborted).
    code = """
        import torch
        import torch_kiln
        from torch_kiln.models import MODELS, Training
        training = Training(MODELS["mlp"], "kiln")
        for _ in range(3):
            training.step()
        x = torch.randn(512, 512, device="kiln")
        y = x @ x
        del x
    """
    for _ in range(4):
        result = run_python(code)
        assert result.returncode == 0, result.stderr[-2000:]
