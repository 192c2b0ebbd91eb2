"""What kiln-eval evaluates: a model, a batch maker and an optional loss,
given in memory or by a build file (``path/model.py:build``)."""
import dataclasses
import importlib.util
import inspect
import os
import sys
from typing import Callable, Optional

import torch


class EvaluationInputError(ValueError):
    """The model file, its build function or what it returned is not usable."""


@dataclasses.dataclass
class Workload:
    """One evaluation's subject.

    model       an nn.Module on the CPU (kiln-eval copies it for each mode)
    make_batch  make_batch(**sizes) -> inputs, or (inputs, target) when a loss
                is given; inputs is a tensor or a tuple of positional tensors.
                Called on the CPU under a fixed seed; keyword sizes are those
                of a shape sweep (e.g. make_batch(sequence_length=24)).
    loss        loss(outputs, target) -> scalar tensor; with it each step runs
                backward and an optimizer step
    optimizer   optimizer(parameters) -> torch.optim.Optimizer
                (default: SGD with lr=0.01)
    sweep       {keyword: [sizes]}: the default shape sweep
    name        shown in the reports
    """
    model: torch.nn.Module
    make_batch: Callable
    loss: Optional[Callable] = None
    optimizer: Optional[Callable] = None
    sweep: Optional[dict] = None
    name: Optional[str] = None
    source: str = "<in memory>"

    def __post_init__(self):
        if not isinstance(self.model, torch.nn.Module):
            raise EvaluationInputError(
                f"the model must be a torch.nn.Module, got {type(self.model).__name__}")
        if not callable(self.make_batch):
            raise EvaluationInputError(
                "make_batch must be a callable that returns the model's inputs (and the "
                f"target, with a loss), got {type(self.make_batch).__name__}")
        for field in ("loss", "optimizer"):
            value = getattr(self, field)
            if value is not None and not callable(value):
                raise EvaluationInputError(
                    f"{field} must be callable, got {type(value).__name__}")
        if self.sweep is not None:
            self.sweep = parse_sweep(self.sweep)
        self.name = self.name or type(self.model).__name__


def parse_sweep(sweep):
    """{keyword: [int sizes]} from a dict, or from "keyword=8,16,24" text."""
    if isinstance(sweep, str):
        keyword, separator, sizes = sweep.partition("=")
        if not separator or not keyword.strip():
            raise EvaluationInputError(
                f"a shape sweep is KEYWORD=SIZE,SIZE,... (e.g. sequence_length=8,16), got {sweep!r}")
        try:
            values = [int(size) for size in sizes.split(",") if size.strip()]
        except ValueError:
            raise EvaluationInputError(f"shape sweep {sweep!r}: sizes must be integers") from None
        sweep = {keyword.strip(): values}
    if not isinstance(sweep, dict) or len(sweep) != 1:
        raise EvaluationInputError(
            f"a shape sweep names one keyword of the batch maker, got {sweep!r}")
    (keyword, values), = sweep.items()
    values = [int(value) for value in values]
    if not values or min(values) < 1:
        raise EvaluationInputError(f"shape sweep {keyword}: give one or more sizes >= 1")
    return {keyword: values}


def as_workload(built, name=None, source="<in memory>"):
    """A Workload from what a build function returned: a Workload, a dict with
    the Workload's field names, or a tuple (model, make_batch[, loss])."""
    if isinstance(built, Workload):
        built.source = source if built.source == "<in memory>" else built.source
        return built
    if isinstance(built, dict):
        unknown = set(built) - {field.name for field in dataclasses.fields(Workload)}
        if unknown:
            raise EvaluationInputError(f"{source}: unknown keys {sorted(unknown)} in what "
                                       "build() returned")
        fields = dict(built)
    elif isinstance(built, (tuple, list)) and len(built) in (2, 3):
        fields = dict(zip(("model", "make_batch", "loss"), built))
    else:
        raise EvaluationInputError(
            f"{source}: build() must return (model, make_batch), (model, make_batch, loss), "
            f"a dict or a torch_kiln.eval.Workload, got {type(built).__name__}")
    if "model" not in fields or "make_batch" not in fields:
        raise EvaluationInputError(f"{source}: build() gave no model or no make_batch")
    fields.setdefault("name", name)
    fields.setdefault("source", source)
    return Workload(**fields)


def _import_file(module_name, path):
    spec = importlib.util.spec_from_file_location(module_name, os.path.abspath(path))
    if spec is None:
        raise EvaluationInputError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # pickling and dataclasses look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise EvaluationInputError(f"importing {path} failed: {type(error).__name__}: "
                                   f"{error}") from error
    return module


def load_target(target):
    """The Workload of "path/file.py[:function]" (function defaults to build)."""
    path, function_name = target, "build"
    if ":" in target and not os.path.exists(target):
        path, function_name = target.rsplit(":", 1)
        function_name = function_name or "build"
    if not os.path.isfile(path):
        raise EvaluationInputError(f"no such model file: {path!r} (give path/file.py:build)")
    module_name = "kiln_eval_" + os.path.splitext(os.path.basename(path))[0]
    module = sys.modules.get(module_name)
    # A file loaded before in this process is reused: executing it again
    # would register its custom ops twice.
    if module is None or getattr(module, "__file__", None) != os.path.abspath(path):
        module = _import_file(module_name, path)
    function = getattr(module, function_name, None)
    if not callable(function):
        defined = sorted(name for name, value in vars(module).items()
                         if inspect.isfunction(value) and value.__module__ == module_name)
        raise EvaluationInputError(f"{path} defines no function {function_name!r}"
                                   f" (its functions: {', '.join(defined) or 'none'})")
    try:
        built = function()
    except Exception as error:
        raise EvaluationInputError(f"{path}:{function_name}() raised {type(error).__name__}: "
                                   f"{error}") from error
    name = os.path.splitext(os.path.basename(path))[0]
    return as_workload(built, name=name, source=f"{path}:{function_name}")
