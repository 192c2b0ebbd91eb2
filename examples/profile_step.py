"""Profiles a training step on kiln: a Chrome trace with the host's ops and the
device's kernels, library calls and copies on a kiln stream track, a table of
device time per op, and a memory snapshot for PyTorch's memory visualizer.

    python examples/profile_step.py [--out DIRECTORY]

Open DIRECTORY/trace.json in https://ui.perfetto.dev (or chrome://tracing) and
DIRECTORY/memory_snapshot.pickle in https://pytorch.org/memory_viz.
See docs/design/profiler.md.
"""
import argparse
import os

import torch
from torch.profiler import ProfilerActivity, profile, record_function

import torch_kiln  # noqa: F401  (autoloaded by import torch; explicit for clarity)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="profile_step_output")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                                torch.nn.Linear(512, 10)).to("kiln")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(128, 256, device="kiln")
    labels = torch.randint(0, 10, (128,), device="kiln")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss

    step()  # compiles the kernels outside the profile
    torch.kiln.synchronize()

    torch.kiln.memory._record_memory_history(max_entries=100_000)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        for _ in range(args.steps):
            with record_function("train_step"):
                loss = step()
        print(f"loss {loss.item():.4f}")  # .item() waits for the device
    torch.kiln.memory._dump_snapshot(os.path.join(args.out, "memory_snapshot.pickle"))
    torch.kiln.memory._record_memory_history(None)

    prof.export_chrome_trace(os.path.join(args.out, "trace.json"))
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=12))
    print(f"wrote {args.out}/trace.json and {args.out}/memory_snapshot.pickle")


if __name__ == "__main__":
    main()
