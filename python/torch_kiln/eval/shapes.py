"""The shape sweep: how many programs torch.compile(backend="kiln") builds
over the sizes a user names, without and with torch_kiln.bucketing.

Kiln compiles static shapes (dynamic=False): each new input shape is a Dynamo
recompile and a new program. The sweep runs the compiled model's forward on a
batch of each size, counting recompiles and programs from
torch_kiln.compile_stats(); then the same with the varying input padded to a
few buckets (bucketing.Bucketed), so the two counts can be compared.
"""
import copy

import torch

from .. import bucketing
from ..compile import compile_stats
from .runner import describe_error, split_batch, to_device


def _varying_dimension(first, second, what):
    """(index, dim) of the one tensor dimension that differs between two
    flat tuples of tensors, or a ValueError naming `what`."""
    for index, (a, b) in enumerate(zip(first, second)):
        if isinstance(a, torch.Tensor) and a.dim() == getattr(b, "ndim", -1):
            for dim, (size_a, size_b) in enumerate(zip(a.shape, b.shape)):
                if size_a != size_b:
                    return index, dim
    raise ValueError(f"the sizes of the sweep change no dimension of the {what}")


def _outputs_tuple(outputs):
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def _count(model, batches, progress):
    """[(value, recompiled)] and (recompiles, programs) for forward passes of
    the compiled `model` over `batches` ([(value, inputs)])."""
    per_value = []
    start = compile_stats()
    for value, inputs in batches:
        before = compile_stats()["recompiles"]
        with torch.no_grad():
            outputs = model(*inputs)
        torch.utils._pytree.tree_map_only(torch.Tensor, lambda tensor: tensor.cpu(), outputs)
        per_value.append((value, compile_stats()["recompiles"] > before))
        progress(1)
    end = compile_stats()
    return per_value, end["recompiles"] - start["recompiles"], end["graphs"] - start["graphs"]


def sweep(workload, keyword, values, buckets=None, seed=0, progress=lambda steps: None):
    """The report's "shapes" section (docs/reference/evaluation_report_schema.md)."""
    result = {"argument": keyword, "values": list(values), "recompiles": None, "programs": None,
              "buckets": [], "suggested_buckets": [],
              "bucketed_recompiles": None, "bucketed_programs": None, "per_value": [],
              "error": None}
    try:
        batches = []
        for value in values:
            torch.manual_seed(seed)
            inputs, _ = split_batch(workload.make_batch(**{keyword: value}),
                                    workload.loss is not None)
            batches.append((value, inputs))
        distinct = [batch for batch in batches if batch[0] != batches[0][0]]
        argument, dim = _varying_dimension(batches[0][1], distinct[0][1], "inputs") \
            if distinct else (0, 0)
        with torch.no_grad():
            reference = copy.deepcopy(workload.model).eval()
            first_out = _outputs_tuple(reference(*batches[0][1]))
            output_dim = _varying_dimension(first_out, _outputs_tuple(
                reference(*distinct[0][1])), "outputs")[1] if distinct else None
        sizes = [inputs[argument].shape[dim] for _, inputs in batches]
        result["suggested_buckets"] = bucketing.suggest_buckets(sizes)
        buckets = sorted(set(buckets or result["suggested_buckets"]))
        result["buckets"] = buckets
        device_batches = [(value, to_device(inputs, "kiln")) for value, inputs in batches]
        model = copy.deepcopy(workload.model).to("kiln").eval()
        limit = len(values) + 8  # Dynamo would stop compiling a frame after 8 shapes
        with torch._dynamo.config.patch(recompile_limit=limit, accumulated_recompile_limit=limit):
            torch._dynamo.reset()
            compiled = torch.compile(model, backend="kiln", dynamic=False)
            plain, result["recompiles"], result["programs"] = _count(
                compiled, device_batches, progress)
            torch._dynamo.reset()
            bucketed = bucketing.Bucketed(torch.compile(model, backend="kiln", dynamic=False),
                                          buckets, dim=dim, argument=argument,
                                          output_dim=output_dim)
            padded, result["bucketed_recompiles"], result["bucketed_programs"] = _count(
                bucketed, device_batches, progress)
        result["per_value"] = [
            {"value": value, "recompiled": recompiled,
             "bucket": bucketing.bucket_for(inputs[argument].shape[dim], buckets),
             "bucketed_recompiled": bucketed_recompiled}
            for (value, recompiled), (_, bucketed_recompiled), (_, inputs)
            in zip(plain, padded, batches)]
    except Exception as error:  # noqa: BLE001: the report says what did run
        result["error"] = describe_error(error)
    finally:
        torch._dynamo.reset()
    return result
