"""Running a workload in one mode: CPU eager (the reference), kiln eager or
kiln compiled. Each mode trains its own copy of the model from the same
initial weights on the same batches, times every step, and keeps what the
first step produced (outputs, loss, gradients) for the numerics check."""
import collections
import copy
import dataclasses
import statistics
import time
import traceback

import torch
from torch.utils._pytree import tree_map_only

from .. import _C
from .. import compile as kiln_compile
from ..compile.lowering.graph_lowering import UnsupportedOperatorError
from ..kernel_cache import compiler_stats
from .numerics import flatten_outputs
from .op_audit import is_user_file

MODES = ("cpu_eager", "kiln_eager", "kiln_compiled")
ROUNDS = 3               # the timed steps are split into rounds in which the modes take turns
SETTLE_SECONDS = 0.05
DEVICES = {"cpu_eager": "cpu", "kiln_eager": "kiln", "kiln_compiled": "kiln"}


def split_batch(batch, has_loss):
    """(positional inputs as a tuple, target or None) from what make_batch returned."""
    if has_loss:
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise TypeError("with a loss, make_batch() must return (inputs, target), got "
                            f"{type(batch).__name__}")
        inputs, target = batch
    else:
        inputs, target = batch, None
    return (tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)), target


def to_device(value, device):
    return tree_map_only(torch.Tensor, lambda tensor: tensor.to(device), value)


def default_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.01)


def describe_optimizer(optimizer):
    defaults = optimizer.defaults
    shown = ", ".join(f"{key}={defaults[key]}" for key in ("lr", "momentum", "weight_decay")
                      if key in defaults and defaults[key] not in (0, 0.0, None))
    return f"{type(optimizer).__name__}({shown})"


def surrogate_loss(outputs):
    """Without a loss, backward runs from the sum of the floating outputs."""
    floating = [tensor for _, tensor in flatten_outputs(outputs)
                if tensor.is_floating_point() and tensor.requires_grad]
    return sum(tensor.float().sum() for tensor in floating) if floating else None


@dataclasses.dataclass
class FirstStep:
    """What the first step produced, on the CPU, for the numerics check."""
    outputs: object = None
    loss: torch.Tensor = None
    gradients: dict = dataclasses.field(default_factory=dict)


class Trainer:
    """A copy of the model on one device, with its optimizer, running steps."""

    def __init__(self, workload, device, compiled=False, compile_options=None):
        self.workload = workload
        self.device = device
        self.model = copy.deepcopy(workload.model).to(device)
        self.callable = self.model
        if compiled:
            self.callable = torch.compile(self.model, backend="kiln", dynamic=False,
                                          options=compile_options)
        make_optimizer = workload.optimizer or default_optimizer
        self.optimizer = make_optimizer(list(self.model.parameters())) \
            if workload.loss is not None else None

    def step(self, batch, capture=False):
        """One step on a device batch; returns (loss as float or None, FirstStep or None)."""
        inputs, target = batch
        for parameter in self.model.parameters():
            parameter.grad = None
        outputs = self.callable(*inputs)
        if self.workload.loss is not None:
            loss = self.workload.loss(outputs, target)
        else:
            loss = surrogate_loss(outputs)
        if loss is not None:
            loss.backward()
        captured = None
        if capture:
            captured = FirstStep(
                outputs=tree_map_only(torch.Tensor, lambda tensor: tensor.detach().cpu(), outputs),
                loss=None if loss is None else loss.detach().cpu(),
                gradients={name: parameter.grad.detach().cpu()
                           for name, parameter in self.model.named_parameters()
                           if parameter.grad is not None})
        if self.optimizer is not None:
            self.optimizer.step()
        if loss is not None:
            value = loss.item()  # waits for the device: the step's work is done
        else:
            tree_map_only(torch.Tensor, lambda tensor: tensor.cpu(), outputs)
            value = None
        return (value if self.workload.loss is not None else None), captured


def _counters():
    kernels = compiler_stats()
    graphs = kiln_compile.compile_stats()
    return {"kernels_compiled": kernels["kernels_compiled"],
            "kernel_cache_hits": kernels["disk_hits"],
            "kernel_compile_seconds": kernels["compile_seconds"],
            "graphs_compiled": graphs["graphs"], "graph_cache_hits": graphs["cache_hits"],
            "recompiles": graphs["recompiles"],
            # Graph compile seconds include the kernel compiles of each
            # program's first run; count those once.
            "graph_compile_seconds": graphs["compile_seconds"] - graphs["kernel_compile_seconds"]}


def empty_mode_report(status="skipped", error=None):
    return {"status": status, "error": error, "notes": [], "steps_run": 0,
            "first_step_seconds": None, "step_seconds": [], "median_step_seconds": None,
            "min_step_seconds": None, "max_step_seconds": None, "speedup_vs_cpu": None,
            "kernels_compiled": 0, "kernel_cache_hits": 0, "graphs_compiled": 0,
            "graph_cache_hits": 0, "recompiles": 0, "compile_seconds": 0.0,
            "peak_memory_bytes": None, "losses": []}


def describe_error(error):
    """The exception as one paragraph: type, message and the innermost user frame."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if is_user_file(frame.filename)]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" \
        if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def _unsupported_operator(error):
    while error is not None:
        if isinstance(error, UnsupportedOperatorError):
            return True
        error = error.__cause__ or error.__context__
    return False


def _executed_counts():
    return {(op, path): count for op, paths in _C._executed_ops().items()
            for path, count in paths.items()}


class ModeRun:
    """One mode's copy of the model and its measurements. start() runs the
    first step and the warmup steps; timed_steps() a round of steady-state
    steps, so that evaluate() can let the modes take turns (background load
    on a shared machine then hits all of them alike); finish() gives the
    report."""

    def __init__(self, mode, workload):
        self.mode = mode
        self.device = DEVICES[mode]
        self.workload = workload
        self.report = empty_mode_report("ok")
        self.first = None            # FirstStep of the first step
        self.trainer = None
        self.counters = collections.Counter()
        self.executed = collections.Counter()  # {(op, path): calls}, kiln eager only

    @property
    def running(self):
        return self.report["status"] == "ok"

    def _step(self, batch, capture=False):
        """(seconds, loss, FirstStep or None) of one step, with its counters."""
        before = _counters()
        ops_before = _executed_counts() if self.mode == "kiln_eager" else None
        start = time.perf_counter()
        loss, captured = self.trainer.step(batch, capture)
        seconds = time.perf_counter() - start
        self.counters.update({name: value - before[name] for name, value in _counters().items()})
        if ops_before is not None:
            self.executed.update({key: count - ops_before.get(key, 0)
                                  for key, count in _executed_counts().items()})
        if loss is not None:
            self.report["losses"].append(loss)
        self.report["steps_run"] += 1
        return seconds, loss, captured

    def _fail(self, error):
        self.report["status"] = "failed"
        self.report["error"] = describe_error(error)

    def start(self, batches, progress):
        """The first step (timed: it compiles) and the warmup steps, on the
        CPU `batches`. The mode's peak device memory is measured here, above
        what other modes held before it began."""
        compiled = self.mode == "kiln_compiled"
        if compiled:
            torch._dynamo.reset()
        if self.device == "kiln":
            torch.kiln.synchronize()
            baseline = torch.kiln.memory_allocated()
            torch.kiln.reset_peak_memory_stats()
        try:
            self.trainer = Trainer(self.workload, self.device, compiled)
            device_batches = [to_device(batch, self.device) for batch in batches]
            try:
                seconds, _, self.first = self._step(device_batches[0], capture=True)
            except Exception as error:
                if not (compiled and _unsupported_operator(error)):
                    raise
                # An op Kiln cannot lower inside the graph: say so, and run it
                # eagerly inside the compiled program instead.
                self.report["notes"].append(
                    "the strict compile failed; the graphs were split around the op with "
                    f"options={{'fallback': 'eager'}}: {describe_error(error)}")
                torch._dynamo.reset()
                self.trainer = Trainer(self.workload, self.device, True, {"fallback": "eager"})
                seconds, _, self.first = self._step(device_batches[0], capture=True)
            self.report["first_step_seconds"] = seconds
            progress(1)
            for batch in device_batches[1:]:
                self._step(batch)
                progress(1)
        except Exception as error:  # noqa: BLE001: a failing mode is reported, others still run
            self._fail(error)
        if self.device == "kiln":
            torch.kiln.synchronize()
            self.report["peak_memory_bytes"] = int(torch.kiln.max_memory_allocated() - baseline)

    def timed_steps(self, batches, progress):
        """A round of timed steps on the CPU `batches`. The OpenMP workers of
        the mode that ran before spin for a while after their last op: let
        them stop, and bring the cores back to speed with one untimed step
        (not counted in steps_run or losses) before the clock starts."""
        try:
            device_batches = [to_device(batch, self.device) for batch in batches]
            time.sleep(SETTLE_SECONDS)
            self.trainer.step(device_batches[0])
            for batch in device_batches:
                seconds, _, _ = self._step(batch)
                self.report["step_seconds"].append(seconds)
                progress(1)
        except Exception as error:  # noqa: BLE001
            self._fail(error)

    def finish(self):
        """The mode's report (docs/reference/evaluation_report_schema.md)."""
        report, counters = self.report, self.counters
        for name in ("kernels_compiled", "kernel_cache_hits", "graphs_compiled",
                     "graph_cache_hits", "recompiles"):
            report[name] = int(counters[name])
        report["compile_seconds"] = counters["kernel_compile_seconds"] + \
            counters["graph_compile_seconds"]
        times = report["step_seconds"]
        if times:
            report.update(median_step_seconds=statistics.median(times),
                          min_step_seconds=min(times), max_step_seconds=max(times))
        return report

    def executed_ops(self):
        """{op: {path: calls}} of this mode's steps (the form of get_executed_ops())."""
        table = collections.defaultdict(dict)
        for (op, path), count in self.executed.items():
            if count:
                table[op][path] = count
        return dict(table)
