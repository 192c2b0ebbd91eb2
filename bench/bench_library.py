#!/usr/bin/env python
"""Library-path ops (matrix products, convolutions, FFT, linear algebra) on kiln against the CPU's
own kernel, each mode in its own process, at several thread counts.

Every case is one op called over and over on the same inputs: a product
(torch.mm, F.linear, torch.bmm, F.grouped_mm) in float32 and bfloat16, or a convolution of
ResNet-18 or ResNet-50 forward (F.conv2d) and backward
(aten.convolution_backward, the op autograd calls), an FFT (torch.fft.rfft,
fft2) or a batched factorization or solve (torch.linalg). A measurement is the
seconds per call of `calls` calls, each a new result, then a synchronize on
kiln; a case's figure is the best of its measurements, which lowers the
weight of another process taking a core for a while.

Each (mode, thread count) runs in a fresh process with
torch.set_num_threads(n) set first; the processes alternate cpu, kiln, cpu,
kiln for --rounds rounds, and each case keeps its best time of the rounds.
ratio = cpu time / kiln time (target: at least 0.95 for every case at every
thread count, issue 32).

Both modes run with glibc's mmap and trim thresholds fixed (MALLOC_TUNABLES
below, unless GLIBC_TUNABLES is set already). With glibc's default, dynamic
thresholds a large CPU tensor is mapped fresh and page-faulted on every call
or reused warm depending on which allocations came before it in the process:
the CPU's 7x7 ResNet-18 convolution (a 12.8 MB result) took 13.5 ms in a
process of its own and 4.6 ms after an FFT had run, on the same machine. Fixed
thresholds keep large blocks in the heap in both modes, so a case's figure no
longer depends on the cases before it; the CPU baseline is its faster, warm one.

    python bench/bench_library.py [--threads 1,2] [--cases mm,linear,bmm,grouped,conv,fft,linalg]
        [--dtypes float32,bfloat16] [--rounds 2] [--quick] [--json out.json]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# glibc keeps blocks up to 64 MiB in its heap and returns free heap memory to
# the system only above 128 MiB: the same for both modes (see above).
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=134217728"

# Matrix products (m, k, n): square from 64 to 4096, tall-skinny and wide,
# and the projections of a 12-head transformer of width 768 over 4x128
# tokens (qkv, attention output, MLP up and down).
SQUARE = [64, 256, 512, 1024, 2048, 4096]
SKINNY = [(64, 256, 512), (512, 1024, 256), (512, 256, 768), (4096, 256, 2048), (8192, 64, 256)]
PROJECTIONS = [(512, 768, 2304), (512, 768, 768), (512, 768, 3072), (512, 3072, 768)]
# Batched products (batches, m, k, n): attention scores and values of 4x12
# heads over 128 tokens and 4x8 heads over 512 tokens.
BATCHED = [(48, 128, 64, 128), (48, 128, 128, 64), (32, 512, 64, 512), (32, 512, 512, 64)]
# Convolutions of ResNet-18 and ResNet-50 at 224x224 (batch, in, out,
# kernel, stride, input size): one of each distinct layer shape.
CONVOLUTIONS = {
    "resnet18": [(4, 3, 64, 7, 2, 224), (4, 64, 64, 3, 1, 56), (4, 64, 128, 3, 2, 56),
                 (4, 64, 128, 1, 2, 56), (4, 128, 128, 3, 1, 28), (4, 256, 256, 3, 1, 14),
                 (4, 512, 512, 3, 1, 7)],
    "resnet50": [(4, 64, 64, 1, 1, 56), (4, 64, 256, 1, 1, 56), (4, 256, 64, 1, 1, 56),
                 (4, 256, 128, 1, 1, 56), (4, 128, 128, 3, 2, 56), (4, 128, 512, 1, 1, 28),
                 (4, 1024, 256, 1, 1, 14), (4, 512, 512, 3, 2, 14), (4, 2048, 512, 1, 1, 7)],
}
# Grouped products of mixture-of-experts layers (rows, k, n, experts): the MoE
# suite's expert projections (128 routed rows over 4 or 8 experts; gate and up
# fused, then down) and a larger layer. Rows split unevenly, one group empty.
GROUPED = [(128, 128, 512, 4), (128, 256, 128, 4), (128, 128, 512, 8), (1024, 512, 1024, 8)]
# FFTs (kind, sizes): a batch of real signals, and a batch of complex images.
FFTS = [("rfft", (256, 4096)), ("fft2", (16, 256, 256))]
# Batched linear algebra (op, batch, n): factorizations and a solve over a
# batch of n x n matrices (a solve with 16 right-hand sides).
LINALG = [("inv", 64, 128), ("cholesky", 64, 128), ("qr", 32, 256), ("solve", 64, 128)]
QUICK_SQUARE = [64, 256]


def cases(kinds, dtypes, quick):
    """(name, kind, dtype, shape) for every case asked for."""
    found = []
    for dtype in dtypes:
        if "mm" in kinds:
            for size in (QUICK_SQUARE if quick else SQUARE):
                found.append((f"mm {size}x{size}x{size} {dtype}", "mm", dtype, (size, size, size)))
            for m, k, n in ([] if quick else SKINNY):
                found.append((f"mm {m}x{k}x{n} {dtype}", "mm", dtype, (m, k, n)))
        if "linear" in kinds:
            for m, k, n in (PROJECTIONS[1:2] if quick else PROJECTIONS):
                found.append((f"linear {m}x{k}->{n} {dtype}", "linear", dtype, (m, k, n)))
        if "bmm" in kinds:
            for shape in (BATCHED[:1] if quick else BATCHED):
                found.append((f"bmm {'x'.join(map(str, shape))} {dtype}", "bmm", dtype, shape))
        if "grouped" in kinds:
            for rows, k, n, experts in (GROUPED[:1] if quick else GROUPED):
                found.append((f"grouped_mm {rows}x{k}x{n} {experts} groups {dtype}", "grouped", dtype,
                              (rows, k, n, experts)))
    if "fft" in kinds:
        for kind, sizes in (FFTS[:1] if quick else FFTS):
            found.append((f"{kind} {'x'.join(map(str, sizes))}", kind, "float32", sizes))
    if "linalg" in kinds:
        for op, batch, n in (LINALG[:1] if quick else LINALG):
            found.append((f"linalg.{op} {batch}x{n}x{n}", f"linalg_{op}", "float32", (batch, n)))
    if "conv" in kinds:
        for model, layers in CONVOLUTIONS.items():
            for shape in (layers[1:2] if quick else layers):
                batch, channels, out, kernel, stride, size = shape
                label = f"{model} {channels}->{out} k{kernel} s{stride} @{size}"
                found.append((f"conv forward {label}", "conv_forward", "float32", shape))
                found.append((f"conv backward {label}", "conv_backward", "float32", shape))
    return found


# ------------------------------------------------------------------ one mode

def make_call(kind, dtype, shape, device):
    """A function that runs the case's op once on `device`, returning its result."""
    import torch
    import torch.nn.functional as functional
    generator = torch.Generator().manual_seed(0)
    element = getattr(torch, dtype)

    def random(*sizes):
        return torch.randn(*sizes, generator=generator).to(element).to(device)

    if kind == "mm":
        m, k, n = shape
        a, b = random(m, k), random(k, n)
        return lambda: torch.mm(a, b)
    if kind == "linear":
        m, k, n = shape
        x, weight, bias = random(m, k), random(n, k), random(n)
        return lambda: functional.linear(x, weight, bias)
    if kind == "bmm":
        batches, m, k, n = shape
        a, b = random(batches, m, k), random(batches, k, n)
        return lambda: torch.bmm(a, b)
    if kind == "grouped":
        rows, k, n, experts = shape
        x, weight = random(rows, k), random(experts, k, n)
        cuts = sorted(torch.randint(0, rows + 1, (experts - 2,), generator=generator).tolist())
        ends = [cuts[0]] + cuts + [rows]  # the first group is empty, the others uneven
        offsets = torch.tensor(ends, dtype=torch.int32).to(device)
        return lambda: functional.grouped_mm(x, weight, offs=offsets)
    if kind == "rfft":
        signals = random(*shape)
        return lambda: torch.fft.rfft(signals)
    if kind == "fft2":
        images = random(*shape).to(torch.complex64)
        return lambda: torch.fft.fft2(images)
    if kind.startswith("linalg_"):
        batch, n = shape
        matrices = random(batch, n, n)
        matrices = matrices @ matrices.transpose(1, 2) + n * torch.eye(n, device=device)  # positive definite
        right = random(batch, n, 16)
        return {"linalg_inv": lambda: torch.linalg.inv_ex(matrices).inverse,
                "linalg_cholesky": lambda: torch.linalg.cholesky_ex(matrices).L,
                "linalg_qr": lambda: torch.linalg.qr(matrices).R,
                "linalg_solve": lambda: torch.linalg.solve_ex(matrices, right).result}[kind]
    batch, channels, out, kernel, stride, size = shape
    images, weight = random(batch, channels, size, size), random(out, channels, kernel, kernel)
    padding = kernel // 2
    if kind == "conv_forward":
        return lambda: functional.conv2d(images, weight, stride=stride, padding=padding)
    grad_output = torch.ones_like(functional.conv2d(images, weight, stride=stride, padding=padding))
    return lambda: torch.ops.aten.convolution_backward(
        grad_output, images, weight, [0], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1,
        [True, True, False])


def flops(kind, shape):
    """The case's floating-point operations, as usually counted (an FFT of
    n points: 5 n log2 n, complex; 2.5 n log2 n real; a factorization of an
    n x n matrix: inverse 2n^3, Cholesky n^3/3, QR 4n^3/3, solve 2n^3/3 + 2n^2 k)."""
    if kind in ("rfft", "fft2"):
        points = shape[-1] if kind == "rfft" else shape[-1] * shape[-2]
        signals = math.prod(shape) // points
        return (2.5 if kind == "rfft" else 5) * signals * points * math.log2(points)
    if kind.startswith("linalg_"):
        batch, n = shape
        per_matrix = {"linalg_inv": 2 * n**3, "linalg_cholesky": n**3 / 3, "linalg_qr": 4 * n**3 / 3,
                      "linalg_solve": 2 * n**3 / 3 + 2 * n * n * 16}[kind]
        return batch * per_matrix
    if kind in ("mm", "linear"):
        m, k, n = shape
        return 2 * m * k * n
    if kind == "bmm":
        batches, m, k, n = shape
        return 2 * batches * m * k * n
    if kind == "grouped":
        rows, k, n, _ = shape
        return 2 * rows * k * n
    batch, channels, out, kernel, stride, size = shape
    side = (size + 2 * (kernel // 2) - kernel) // stride + 1
    forward = 2 * batch * out * side * side * channels * kernel * kernel
    return forward if kind == "conv_forward" else 2 * forward


def measure(call, synchronize, target_seconds, measurements):
    """Best seconds per call over `measurements` runs of about target_seconds each."""
    call()
    synchronize()
    start = time.perf_counter()
    call()
    synchronize()
    single = max(time.perf_counter() - start, 1e-7)
    calls = max(1, min(1000, int(target_seconds / single)))
    best = math.inf
    for _ in range(measurements):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        synchronize()
        best = min(best, (time.perf_counter() - start) / calls)
    return best, calls


def run_mode(device, threads, selected, target_seconds, measurements):
    """Runs in the child process: every case on one device; prints JSON."""
    import torch
    from run_info import enter_mode
    synchronize = enter_mode(device, threads)
    figures = {}
    for name, kind, dtype, shape in selected:
        call = make_call(kind, dtype, shape, device)
        seconds, calls = measure(call, synchronize, target_seconds, measurements)
        figures[name] = {"seconds": seconds, "calls": calls}
        del call
    fallbacks = []
    if device == "kiln":
        import torch_kiln
        fallbacks = sorted(torch_kiln.get_fallback_ops())
    print(json.dumps({"figures": figures, "fallback_ops": fallbacks, "threads": torch.get_num_threads()}))


# ------------------------------------------------------------------- parent

def child(device, threads, args):
    command = [sys.executable, os.path.abspath(__file__), "--child", device, "--threads", str(threads),
               "--cases", args.cases, "--dtypes", args.dtypes, "--seconds", str(args.seconds),
               "--measurements", str(args.measurements)] + (["--quick"] if args.quick else [])
    env = dict(os.environ, KILN_FALLBACK="silent")
    env.setdefault("GLIBC_TUNABLES", MALLOC_TUNABLES)
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if completed.returncode != 0:
        raise RuntimeError(f"{device} with {threads} threads failed:\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def thread_counts(text):
    counts = []
    for part in text.split(","):
        count = os.cpu_count() if part == "all" else int(part)
        if count not in counts:
            counts.append(count)
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,all", help="thread counts; 'all' is os.cpu_count()")
    parser.add_argument("--cases", default="mm,linear,bmm,grouped,conv,fft,linalg")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="of the products")
    parser.add_argument("--rounds", type=int, default=2, help="cpu, kiln process pairs per thread count")
    parser.add_argument("--seconds", type=float, default=0.15, help="target length of one measurement")
    parser.add_argument("--measurements", type=int, default=3, help="per case and process")
    parser.add_argument("--quick", action="store_true", help="a few small cases (for tests)")
    parser.add_argument("--json", help="write the figures here as JSON")
    parser.add_argument("--child", choices=["cpu", "kiln"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    selected = cases(args.cases.split(","), args.dtypes.split(","), args.quick)
    if args.child:
        run_mode(args.child, int(args.threads), selected, args.seconds, args.measurements)
        return

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_kiln  # noqa: F401 (run_info names the kiln build)
    from run_info import header
    lines = header(sys.argv)
    print("\n".join(lines))
    results = {}
    for threads in thread_counts(args.threads):
        best = {"cpu": {}, "kiln": {}}
        fallbacks = set()
        for _ in range(args.rounds):
            for device in ("cpu", "kiln"):
                output = child(device, threads, args)
                fallbacks.update(output["fallback_ops"])
                for name, figure in output["figures"].items():
                    previous = best[device].get(name)
                    if previous is None or figure["seconds"] < previous:
                        best[device][name] = figure["seconds"]
        print(f"\n{threads} thread{'s' if threads > 1 else ''}: seconds per call, best of "
              f"{args.rounds} processes per mode; ratio = cpu / kiln (target >= 0.95)")
        print(f"{'case':<52}{'cpu ms':>10}{'kiln ms':>10}{'ratio':>8}{'cpu GFLOP/s':>13}")
        rows = {}
        for name, kind, dtype, shape in selected:
            cpu, kiln = best["cpu"][name], best["kiln"][name]
            rows[name] = {"kind": kind, "dtype": dtype, "shape": list(shape), "cpu_s": cpu, "kiln_s": kiln,
                          "ratio": cpu / kiln, "flops": flops(kind, shape)}
            print(f"{name:<52}{cpu * 1e3:>10.3f}{kiln * 1e3:>10.3f}{cpu / kiln:>8.2f}"
                  f"{flops(kind, shape) / cpu / 1e9:>13.1f}")
        ratios = [row["ratio"] for row in rows.values()]
        geometric = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"geometric mean {geometric:.2f}x, lowest {min(ratios):.2f}x"
              + (f"; kiln fell back on {sorted(fallbacks)}" if fallbacks else ""))
        results[str(threads)] = {"cases": rows, "geometric_mean": geometric, "lowest": min(ratios),
                                 "fallback_ops": sorted(fallbacks)}
    if args.json:
        with open(args.json, "w") as output:
            json.dump({"header": lines, "args": vars(args), "results": results}, output, indent=2)


if __name__ == "__main__":
    main()
