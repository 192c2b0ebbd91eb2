#!/usr/bin/env python
"""What torch.profiler's view of the kiln device costs (docs/design/profiler.md).

Three modes, each in its own process, taking turns over --rounds rounds:

- never:  no profiler was ever started in the process;
- off:    a profile with kiln's activity ran (and stopped) before the timing,
          so Kineto, its child profiler and the correlation hooks have been
          set up once and then left: the state every later step runs in;
- on:     the timing runs inside torch.profiler.profile(activities=[CPU,
          PrivateUse1]): host ops and device activities are recorded.

Two workloads:

- tiny_ops:   a loop of small ops (add, mul, relu on 64 floats), one
              synchronize at the end: launch cost, where a per-launch cost
              would show first;
- model_step: a training step of a small MLP (forward, MSE loss, backward,
              SGD step) with a synchronize.

A process warms up, then times --iterations iterations --repeats times and
reports microseconds per iteration, the best repeat; a figure is the median
over the rounds, and the lowest over the rounds is shown beside it (on a
shared machine other processes slow whole rounds, and the lowest is what the
mode costs when nothing else runs). "off" against "never" is the cost of the profiler when it is
off, which must be none measurable; "on" against "never" is its cost on.

    python bench/bench_profiler.py [--rounds 5] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys
import time

MODES = ["never", "off", "on"]
WORKLOADS = ["tiny_ops", "model_step"]


def make_workload(name):
    import torch
    torch.manual_seed(0)
    if name == "tiny_ops":
        x = torch.randn(64, device="kiln")
        y = torch.randn(64, device="kiln")

        def tiny_ops():
            out = x
            for _ in range(20):
                out = torch.relu(out * y + x)
            return out
        return tiny_ops
    if name == "model_step":
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to("kiln")
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        inputs = torch.randn(64, 256, device="kiln")
        target = torch.randn(64, 10, device="kiln")

        def model_step():
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(model(inputs), target)
            loss.backward()
            optimizer.step()
            return loss
        return model_step
    raise ValueError(name)


def worker(mode, workload, iterations, repeats):
    """Microseconds per iteration of `workload` in `mode`, in this process."""
    import torch
    import torch_kiln
    from torch.profiler import ProfilerActivity, profile
    step = make_workload(workload)
    activities = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def run():
        for _ in range(iterations):
            step()
        torch.kiln.synchronize()

    for _ in range(3):
        run()
    if mode == "off":
        with profile(activities=activities):
            run()
        assert not torch_kiln._C._device_trace_recording()
    best = float("inf")
    device_events = 0
    for _ in range(repeats):
        if mode == "on":
            prof = profile(activities=activities)
            prof.start()
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        if mode == "on":
            prof.stop()
            device_events = sum(1 for event in prof.events() if event.device_type == torch.autograd.DeviceType.PrivateUse1)
        best = min(best, elapsed / iterations * 1e6)
    return {"us": best, "device_events": device_events}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--json")
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "WORKLOAD"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.iterations, args.repeats)))
        return 0

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run_info import header
    from worker_processes import in_rounds, run_worker
    print("\n".join(header(sys.argv)), flush=True)
    workloads = args.workloads.split(",")
    results = in_rounds(MODES, workloads, args.rounds,
                        lambda mode, workload: run_worker(__file__, [mode, workload], args.iterations, args.repeats))
    samples = {workload: {mode: [result["us"] for result in by_mode[mode]] for mode in MODES}
               for workload, by_mode in results.items()}
    events = {workload: by_mode["on"][-1]["device_events"] for workload, by_mode in results.items()}
    rows = []
    print(f"{'workload':<11} {'figure':<7}" + " ".join(f"{mode:>12}" for mode in MODES) +
          "   off/never   on/never  device events (on)")
    for workload in workloads:
        medians = {mode: statistics.median(values) for mode, values in samples[workload].items()}
        lowest = {mode: min(values) for mode, values in samples[workload].items()}
        row = {"workload": workload, "us": medians, "lowest_us": lowest, "samples_us": samples[workload],
               "device_events_on": events.get(workload, 0)}
        for figure, values in (("median", medians), ("lowest", lowest)):
            off_ratio = values["off"] / values["never"]
            on_ratio = values["on"] / values["never"]
            print(f"{workload:<11} {figure:<7}" + " ".join(f"{values[mode]:>10.1f}us" for mode in MODES) +
                  f"   {off_ratio:>8.3f}x  {on_ratio:>8.3f}x  {events.get(workload, 0):>10}")
            suffix = "" if figure == "median" else "_lowest"
            row["off_over_never" + suffix] = off_ratio
            row["on_over_never" + suffix] = on_ratio
        rows.append(row)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"header": header(sys.argv), "args": vars(args),
                       "results": {"iterations": args.iterations, "rounds": args.rounds, "workloads": rows}},
                      handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
