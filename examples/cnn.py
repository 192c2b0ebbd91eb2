"""A kiln-eval model file: a small convolutional network on 16x16 images
(convolution, batch norm, ReLU, max pooling, a linear classifier).

    kiln-eval examples/cnn.py
"""
import torch
from torch.nn import functional

from torch_kiln.models.reference import SmallConvolutionalNetwork


def build():
    torch.manual_seed(0)

    def make_batch(batch_size=16):
        return torch.randn(batch_size, 3, 16, 16), torch.randint(0, 10, (batch_size,))

    return {"model": SmallConvolutionalNetwork(), "make_batch": make_batch,
            "loss": functional.cross_entropy,
            "optimizer": lambda parameters: torch.optim.SGD(parameters, lr=0.01, momentum=0.9)}
