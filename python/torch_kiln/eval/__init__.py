"""kiln-eval: runs a model on the CPU, on kiln eagerly and compiled, and
reports what fell back to the CPU, whether the numbers match, what compiling
costs against the steady state, how input shapes drive recompilation, and the
peak device memory (docs/guides/evaluation.md).

    torch_kiln.evaluate(model, make_batch, loss=None, ...) -> report dict
    kiln-eval path/model.py:build                      (the command line)
"""
from .evaluate import evaluate
from .workload import EvaluationInputError, Workload, load_target

__all__ = ["EvaluationInputError", "Workload", "evaluate", "load_target"]
