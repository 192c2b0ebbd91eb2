"""A kiln-eval model file: a multilayer perceptron classifying 32 features.

    kiln-eval examples/mlp.py --sweep batch_size=16,32,48,64,96
"""
import torch
from torch.nn import functional

from torch_kiln.models.reference import MultilayerPerceptron


def build():
    torch.manual_seed(0)

    def make_batch(batch_size=64):
        return torch.randn(batch_size, 32), torch.randint(0, 10, (batch_size,))

    return {"model": MultilayerPerceptron(), "make_batch": make_batch,
            "loss": functional.cross_entropy,
            "optimizer": lambda parameters: torch.optim.Adam(parameters, lr=1e-3)}
