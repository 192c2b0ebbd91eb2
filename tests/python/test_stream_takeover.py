"""A thread waiting for the device runs the work the stream's worker has not
started (runtime/stream.h). That work must behave as on the worker: same
results, and none of the waiting thread's own dispatch state."""
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import torch_kiln  # noqa: F401


class RecordOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def queue_of_convolutions(count=8):
    """Large enough to be queued on the worker, long enough that a wait
    right after them finds most of them not started."""
    torch.manual_seed(0)
    x = torch.randn(16, 16, 16, 16)
    weight = torch.randn(16, 16, 3, 3) * 0.1
    device_x, device_weight = x.to("kiln"), weight.to("kiln")
    torch.kiln.synchronize()
    return x, weight, device_x, device_weight, count


def test_work_taken_over_by_a_waiting_thread_computes_what_the_cpu_does():
    x, weight, device_x, device_weight, count = queue_of_convolutions()
    for _ in range(count):
        x = F.conv2d(x, weight, padding=1).tanh()
        device_x = F.conv2d(device_x, device_weight, padding=1).tanh()
    torch.testing.assert_close(device_x.cpu(), x, rtol=1e-4, atol=1e-5)  # .cpu() waits
    assert torch.kiln.current_stream().query()


def test_a_dispatch_mode_of_the_waiting_thread_sees_only_its_own_ops():
    # The work copies its CPU results into device memory with ATen calls; run
    # in the waiting thread they must not reach the thread's Python mode.
    _, _, device_x, device_weight, count = queue_of_convolutions()
    with RecordOps() as recorder:
        for _ in range(count):
            device_x = F.conv2d(device_x, device_weight, padding=1)
        torch.kiln.synchronize()
        small = torch.ones(4, device="kiln") @ torch.ones(4, device="kiln")  # runs inline
        small.item()
    assert sorted(set(recorder.ops)) == ["aten._local_scalar_dense.default", "aten.convolution.default",
                                         "aten.dot.default", "aten.ones.default"], recorder.ops
    assert recorder.ops.count("aten.convolution.default") == count

