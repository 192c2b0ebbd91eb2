"""Trains a small MLP on synthetic data on the accelerator (kiln) and on the
CPU, and prints both losses side by side with the fallback report.

The training code is device-agnostic: it takes the device torch.accelerator
picks, as any PyTorch program written for CUDA-like devices does.

    python examples/train_mlp.py [--steps 20] [--optimizer adam|sgd]
"""
import argparse
import warnings

import torch
from torch import nn


def make_data(samples=256, features=32, classes=10, seed=0):
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(samples, features, generator=generator)
    targets = torch.randint(0, classes, (samples,), generator=generator)
    return inputs, targets


def make_model(features=32, hidden=64, classes=10, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, classes))


def train(device, steps=20, optimizer_name="sgd", batch=64, seed=0):
    """Trains on `device`; returns (losses, model) with losses as Python floats."""
    device = torch.device(device)
    inputs, targets = make_data(seed=seed)
    model = make_model(seed=seed).to(device)
    loss_function = nn.CrossEntropyLoss()
    if optimizer_name == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(steps):
        start = (step * batch) % inputs.shape[0]
        x = inputs[start:start + batch].to(device)
        y = targets[start:start + batch].to(device)
        optimizer.zero_grad()
        loss = loss_function(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    args = parser.parse_args()

    import torch_kiln

    accelerator = torch.accelerator.current_accelerator()
    print(f"accelerator: {accelerator} ({torch.kiln.get_device_name()})")
    torch_kiln.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the report below lists every fallback
        device_losses, _ = train(accelerator, args.steps, args.optimizer)
    cpu_losses, _ = train("cpu", args.steps, args.optimizer)

    print(f"\n{'step':>4}  {'kiln loss':>12}  {'cpu loss':>12}  {'rel. diff':>9}")
    worst = 0.0
    for step, (on_device, on_cpu) in enumerate(zip(device_losses, cpu_losses)):
        difference = abs(on_device - on_cpu) / max(abs(on_cpu), 1e-12)
        worst = max(worst, difference)
        print(f"{step:>4}  {on_device:>12.6f}  {on_cpu:>12.6f}  {difference:>9.2e}")
    print(f"largest relative difference: {worst:.2e}")

    executed = torch_kiln.get_executed_ops()
    fallback = torch_kiln.get_fallback_ops()
    print(f"\nops on kiln: {len(executed)} distinct, {len(fallback)} of them fell back to the CPU")
    by_path = {}
    for name, paths in executed.items():
        for path, count in paths.items():
            by_path[path] = by_path.get(path, 0) + count
    print("calls by path: " + ", ".join(f"{path} {count}" for path, count in sorted(by_path.items())))
    print("\nfallback report (op: calls)")
    for name, count in sorted(fallback.items(), key=lambda item: -item[1]):
        print(f"  {name:<40} {count}")
    print(f"\nmemory: {torch.kiln.max_memory_allocated() / 1024:.1f} KiB peak allocated, "
          f"{torch.kiln.memory_reserved() / 1024 ** 2:.1f} MiB reserved")


if __name__ == "__main__":
    main()
