"""A kiln-eval model file for the tests: one custom op with only a CPU kernel
(it falls back), and one whose kiln kernel is deliberately wrong (the
numerics check must name it)."""
import torch
from torch import nn


@torch.library.custom_op("kiln_eval_test::cpu_only_square", mutates_args=(), device_types="cpu")
def cpu_only_square(x: torch.Tensor) -> torch.Tensor:
    return x * x


@cpu_only_square.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("kiln_eval_test::scale_twice", mutates_args=())
def scale_twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale_twice.register_kernel("kiln")
def _(x):
    return x * 2.5  # deliberately wrong


@scale_twice.register_fake
def _(x):
    return torch.empty_like(x)


cpu_only_square.register_autograd(
    lambda ctx, grad: grad * 2 * ctx.saved,
    setup_context=lambda ctx, inputs, output: setattr(ctx, "saved", inputs[0]))
scale_twice.register_autograd(lambda ctx, grad: grad * 2,
                              setup_context=lambda ctx, inputs, output: None)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        hidden = cpu_only_square(self.linear(x))
        return scale_twice(hidden)


def build():
    torch.manual_seed(0)
    return Model(), lambda: torch.randn(4, 8)


class CpuOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        return cpu_only_square(self.linear(x))


def build_cpu_only():
    torch.manual_seed(0)
    return CpuOnly(), lambda: torch.randn(4, 8)


def build_failing_on_kiln():
    """A model whose op raises on kiln only."""
    return FailingOnKiln(), lambda: torch.randn(4, 8)


def build_failing_on_cpu():
    return nn.Linear(8, 4), lambda: torch.randn(4, 5)  # 5 features: the CPU refuses it


@torch.library.custom_op("kiln_eval_test::refused_on_kiln", mutates_args=())
def refused_on_kiln(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@refused_on_kiln.register_kernel("kiln")
def _(x):
    raise RuntimeError("refused_on_kiln has no kiln kernel")


refused_on_kiln.register_autograd(lambda ctx, grad: grad,
                                  setup_context=lambda ctx, inputs, output: None)


class FailingOnKiln(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        return refused_on_kiln(self.linear(x))
