"""Library calls choose their host threads per call (library_threads.h): a
small call runs on the calling thread alone, with its OpenMP and MKL thread
counts set to 1 for that call only; a large call uses PyTorch's OpenMP team.
Either way the calling thread's settings are as before afterwards, and the
results match the CPU."""
import ctypes
import os

import pytest
import torch
import torch.nn.functional as functional

import torch_kiln


def openmp_max_threads():
    """omp_get_max_threads() of the OpenMP runtime PyTorch loaded, for this thread."""
    library = os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp.so.1")
    if not os.path.exists(library):
        pytest.skip("this PyTorch build does not ship libgomp")
    return ctypes.CDLL(library).omp_get_max_threads()


# (first, second) matmul shapes: one small call (inline on an idle stream,
# one thread) and one large (queued, the OpenMP team).
MATMULS = {"small": ((8, 16), (16, 8)), "large": ((256, 256), (256, 256))}


@pytest.mark.parametrize("size", sorted(MATMULS))
def test_matmul_leaves_the_callers_thread_settings(size):
    generator = torch.Generator().manual_seed(0)
    a_shape, b_shape = MATMULS[size]
    a, b = torch.randn(a_shape, generator=generator), torch.randn(b_shape, generator=generator)
    bias = torch.randn(b_shape[1], generator=generator)
    torch.kiln.synchronize()
    before, global_before = openmp_max_threads(), torch.get_num_threads()
    results = [torch.mm(a.to("kiln"), b.to("kiln")),
               torch.addmm(bias.to("kiln"), a.to("kiln"), b.to("kiln"))]
    torch.kiln.synchronize()
    assert (openmp_max_threads(), torch.get_num_threads()) == (before, global_before)
    torch.testing.assert_close(results[0].cpu(), torch.mm(a, b))
    torch.testing.assert_close(results[1].cpu(), torch.addmm(bias, a, b))


@pytest.mark.parametrize("batch", [1, 32])  # 0.2 and 7 MFLOP: small, then large
def test_convolution_leaves_the_callers_thread_settings(batch):
    generator = torch.Generator().manual_seed(1)
    images = torch.randn(batch, 8, 12, 12, generator=generator, requires_grad=True)
    weight = torch.randn(16, 8, 3, 3, generator=generator, requires_grad=True)
    device_images = images.detach().to("kiln").requires_grad_()
    device_weight = weight.detach().to("kiln").requires_grad_()
    torch.kiln.synchronize()
    before = openmp_max_threads()
    result = functional.conv2d(device_images, device_weight, padding=1)
    result.sum().backward()
    torch.kiln.synchronize()
    assert openmp_max_threads() == before
    expected = functional.conv2d(images, weight, padding=1)
    expected.sum().backward()
    torch.testing.assert_close(result.detach().cpu(), expected.detach())
    torch.testing.assert_close(device_images.grad.cpu(), images.grad)
    torch.testing.assert_close(device_weight.grad.cpu(), weight.grad)



THREAD_COUNT_SCRIPT = r"""
import os
import torch
import torch_kiln

def threads():
    # A thread's name is inherited by the threads it starts: an OpenMP team
    # started by Kiln's stream worker or the autograd engine's kiln thread
    # carries their names.
    names = [open(f"/proc/self/task/{task}/comm").read().strip()
             for task in os.listdir("/proc/self/task")]
    return sum(name.startswith(("kiln-stream", "kiln-pool", "pt_autograd")) for name in names)

def large_work(device):
    images = torch.randn(32, 16, 32, 32, device=device, requires_grad=True)
    convolution = torch.nn.Conv2d(16, 32, 3, padding=1).to(device)
    outputs = convolution(images)
    outputs = torch.nn.functional.batch_norm(outputs, None, None, training=True)
    outputs.square().sum().backward()
    (torch.randn(256, 256, device=device) @ torch.randn(256, 256, device=device)).sum().item()
    # Through ATen's own kernels (with TensorIterator copies inside): bfloat16
    # products, a batched QR, an FFT.
    (torch.randn(256, 256, device=device).bfloat16() @ torch.randn(256, 256, device=device).bfloat16()).sum().item()
    torch.linalg.qr(torch.randn(16, 128, 128, device=device)).R.sum().item()
    torch.fft.rfft(torch.randn(64, 4096, device=device)).abs().sum().item()
    # A copy that converts to complex runs ATen's CPU copy on the stream worker.
    torch.randn(16, 256, 256, device=device).to(torch.complex64).abs().sum().item()

# Set explicitly, as users and the benchmarks do: PyTorch then applies the
# count to each new thread at its first parallel loop, which must not undo
# the one thread a call on Kiln's threads is given.
torch.set_num_threads(torch.get_num_threads())
# Start the stream worker, the pool and the autograd engine's kiln thread.
large_work("cpu")
small = torch.randn(4, device="kiln", requires_grad=True)
(small * 2).sum().backward()
(torch.randn(1 << 20, device="kiln") * 2).sum().item()  # too large to run inline
torch.kiln.synchronize()
before = threads()
for _ in range(3):
    large_work("kiln")
torch.kiln.synchronize()
print(before, threads())
"""


@pytest.mark.parametrize("autograd_thread", ["caller", "device"])
def test_large_library_calls_start_no_second_openmp_team(autograd_thread):
    """Only the initial thread may use an OpenMP team (library_threads.h): a
    team started on Kiln's stream worker or the autograd engine's kiln thread
    would make libgomp cut every thread's spin-wait process-wide, which made
    the user's CPU ops 3-8x slower. A second team shows as new threads.
    PyTorch starts its autograd device thread with either KILN_AUTOGRAD_THREAD
    (with "caller" it stays idle)."""
    import subprocess
    import sys
    if torch.get_num_threads() < 2:
        pytest.skip("one OpenMP thread: no team to start")
    completed = subprocess.run([sys.executable, "-c", THREAD_COUNT_SCRIPT], capture_output=True,
                               text=True, timeout=300,
                               env=dict(os.environ, KILN_AUTOGRAD_THREAD=autograd_thread))
    assert completed.returncode == 0, completed.stderr
    before, after = map(int, completed.stdout.split())
    pool = os.cpu_count() - 1
    assert before == 2 + pool, "expected a stream worker, an autograd thread and the pool"
    assert after == before, f"{after - before} threads started by kiln's large library calls"


# The script leaves through os._exit: with KILN_AUTOGRAD_THREAD=device, PyTorch's
# autograd device thread may still be releasing the Python hook while the
# interpreter finalizes; it then cannot take the GIL, Python ends the thread
# with pthread_exit, and the forced unwind through a noexcept frame aborts the
# process (about 1 in 15 runs on a loaded 2-core machine, with or without
# Kiln's changes; CUDA's device threads share the race). docs/reference/configuration.md.
BACKWARD_THREAD_SCRIPT = r"""
import os
import sys
import threading
import torch
import torch_kiln
seen = []
x = torch.randn(8, device="kiln", requires_grad=True)
x.register_hook(lambda grad: seen.append(threading.get_ident()))
(x * 3).sum().backward()
print(seen == [threading.get_ident()], torch.allclose(x.grad.cpu(), torch.full((8,), 3.0)))
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.parametrize("autograd_thread,on_caller", [("caller", True), ("device", False)])
def test_backward_of_kiln_tensors_runs_where_kiln_autograd_thread_says(autograd_thread, on_caller):
    import subprocess
    import sys
    completed = subprocess.run([sys.executable, "-c", BACKWARD_THREAD_SCRIPT], capture_output=True, text=True,
                               timeout=300, env=dict(os.environ, KILN_AUTOGRAD_THREAD=autograd_thread))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == [str(on_caller), "True"]


def test_an_unknown_kiln_autograd_thread_warns_and_uses_the_caller():
    import subprocess
    import sys
    completed = subprocess.run([sys.executable, "-c", BACKWARD_THREAD_SCRIPT], capture_output=True, text=True,
                               timeout=300, env=dict(os.environ, KILN_AUTOGRAD_THREAD="gpu"))
    assert completed.returncode == 0, completed.stderr
    assert "KILN_AUTOGRAD_THREAD='gpu' is not one of caller, device" in completed.stderr
    assert completed.stdout.split() == ["True", "True"]
