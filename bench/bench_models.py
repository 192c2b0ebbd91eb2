#!/usr/bin/env python
"""Training steps of models no one here wrote (torchvision's ResNet-18 and
ResNet-50, Hugging Face's GPT-2, BERT and Llama, random weights) on kiln eager
against PyTorch's CPU eager, each mode in its own process.

A step is forward, loss, backward and AdamW's update, ending with the device
idle. Each (model, mode) runs in a fresh process: --warmup steps, then
--steps timed steps, of which the median is kept; processes alternate cpu,
kiln, cpu, kiln for --rounds rounds and each mode keeps its best median.
ratio = cpu step time / kiln step time (target: at least 1.0, issue 32).
The models' losses before training (eval mode: no dropout; same seed, same
data) are shown for both modes: kiln's must match the CPU's.

    python bench/bench_models.py [--models resnet18,resnet50,gpt2,bert,llama]
        [--steps 10] [--rounds 2] [--threads N] [--json out.json]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

MODELS = ["resnet18", "resnet50", "gpt2", "bert", "llama"]
DESCRIPTIONS = {
    "resnet18": "torchvision resnet18, batch 8, 3x64x64, 10 classes",
    "resnet50": "torchvision resnet50, batch 8, 3x64x64, 10 classes",
    "gpt2": "transformers GPT-2, 4 layers, width 256, 4 heads, 4x128 tokens",
    "bert": "transformers BERT (masked LM), 4 layers, width 256, 4 heads, 4x128 tokens",
    "llama": "transformers Llama, 4 layers, width 256, 4 heads, 4x128 tokens",
}


def build(name):
    """(model, batch, loss function of (model, batch)) on the CPU, seeded."""
    import torch
    torch.manual_seed(0)
    if name.startswith("resnet"):
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=10)
        images = torch.randn(8, 3, 64, 64)
        labels = torch.randint(0, 10, (8,))
        return model, (images, labels), lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1])
    import transformers
    transformers.logging.set_verbosity_error()
    common = dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    if name == "gpt2":
        config = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=128)
        model = transformers.GPT2LMHeadModel(config)
    elif name == "bert":
        config = transformers.BertConfig(max_position_embeddings=128, **common)
        model = transformers.BertForMaskedLM(config)
    elif name == "llama":
        config = transformers.LlamaConfig(num_key_value_heads=4, max_position_embeddings=128, **common)
        model = transformers.LlamaForCausalLM(config)
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    tokens = torch.randint(0, config.vocab_size, (4, 128))
    return model, (tokens,), lambda m, b: m(input_ids=b[0], labels=b[0]).loss


def run_mode(name, device, threads, warmup, steps):
    """In the child process: one model on one device; prints JSON."""
    import torch
    from run_info import enter_mode
    synchronize = enter_mode(device, threads)
    model, batch, loss_of = build(name)
    model = model.to(device).train()
    batch = tuple(tensor.to(device) for tensor in batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model, batch)
        loss.backward()
        optimizer.step()
        return loss

    # The loss before training, without dropout: the same weights and data
    # on both devices, so kiln's must match the CPU's.
    model.eval()
    with torch.no_grad():
        first_loss = loss_of(model, batch).item()
    model.train()
    for _ in range(warmup):
        step()
    synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        synchronize()
        times.append(time.perf_counter() - start)
    fallbacks = []
    if device == "kiln":
        import torch_kiln
        fallbacks = sorted(torch_kiln.get_fallback_ops())
    print(json.dumps({"median_s": statistics.median(times), "first_loss": first_loss, "fallback_ops": fallbacks,
                      "threads": torch.get_num_threads()}))


def child(name, device, args):
    command = [sys.executable, os.path.abspath(__file__), "--child", device, "--models", name,
               "--warmup", str(args.warmup), "--steps", str(args.steps), "--threads", str(args.threads)]
    env = dict(os.environ, KILN_FALLBACK="silent")
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if completed.returncode != 0:
        raise RuntimeError(f"{name} on {device} failed:\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2, help="cpu, kiln process pairs per model")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    parser.add_argument("--json", help="write the figures here as JSON")
    parser.add_argument("--child", choices=["cpu", "kiln"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_mode(args.models, args.child, args.threads, args.warmup, args.steps)
        return

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_kiln  # noqa: F401 (run_info names the kiln build)
    import torchvision
    import transformers
    from run_info import header
    lines = header(sys.argv, f"torchvision: {torchvision.__version__}   transformers: {transformers.__version__}")
    print("\n".join(lines))
    print(f"\ntraining step (ms, median of {args.steps} after {args.warmup} warm-up steps, best of "
          f"{args.rounds} processes per mode); ratio = cpu / kiln (target >= 1.0)")
    print(f"{'model':<10}{'cpu':>10}{'kiln':>10}{'ratio':>8}{'loss cpu':>10}{'kiln':>10}  fallback ops")
    results = {}
    for name in args.models.split(","):
        best = {}
        outputs = {}
        for _ in range(args.rounds):
            for device in ("cpu", "kiln"):
                output = child(name, device, args)
                outputs[device] = output
                best[device] = min(best.get(device, math.inf), output["median_s"])
        ratio = best["cpu"] / best["kiln"]
        results[name] = {"model": DESCRIPTIONS[name], "cpu_step_s": best["cpu"], "kiln_step_s": best["kiln"],
                         "ratio": ratio, "cpu_first_loss": outputs["cpu"]["first_loss"],
                         "kiln_first_loss": outputs["kiln"]["first_loss"],
                         "fallback_ops": outputs["kiln"]["fallback_ops"]}
        print(f"{name:<10}{best['cpu'] * 1e3:>10.1f}{best['kiln'] * 1e3:>10.1f}{ratio:>8.2f}"
              f"{outputs['cpu']['first_loss']:>10.4f}{outputs['kiln']['first_loss']:>10.4f}  "
              f"{', '.join(outputs['kiln']['fallback_ops']) or '-'}")
    ratios = [entry["ratio"] for entry in results.values()]
    geometric = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geometric mean {geometric:.2f}x, lowest {min(ratios):.2f}x")
    if args.json:
        with open(args.json, "w") as output:
            json.dump({"header": lines, "args": vars(args),
                       "results": {"models": results, "geometric_mean": geometric}}, output, indent=2)


if __name__ == "__main__":
    main()
