"""Inference graphs fold eval-mode batch norm into the convolution before it,
move a ReLU after the max pool reading it, and add a convolution's bias after
the pool or ReLU reading it (torch_kiln/compile/passes/inference_folding.py). Results match eager; the patterns that must not be
rewritten are left alone."""
import pytest
import torch
from torch import nn
from torch.nn import functional

import torch_kiln
from torch_kiln.compile.passes import inference_folding


def with_statistics(module, seed):
    """`module` in eval mode with batch norm statistics and affine parameters
    far from their defaults, as a trained model has them."""
    generator = torch.Generator().manual_seed(seed)
    for child in module.modules():
        if isinstance(child, nn.BatchNorm2d):
            child.running_mean.copy_(torch.rand(child.num_features, generator=generator) - 0.5)
            child.running_var.copy_(torch.rand(child.num_features, generator=generator) * 2 + 0.25)
            if child.affine:
                child.weight.data.copy_(torch.rand(child.num_features, generator=generator) + 0.5)
                child.bias.data.copy_(torch.rand(child.num_features, generator=generator) - 0.5)
    return module.eval()


class Block(nn.Module):
    def __init__(self, bias=True, affine=True, pool_indices=False, channels=3, groups=1):
        super().__init__()
        self.convolution = nn.Conv2d(channels, 8, 3, padding=1, bias=bias, groups=groups)
        self.norm = nn.BatchNorm2d(8, affine=affine)
        self.pool_indices = pool_indices

    def forward(self, images):
        rectified = torch.relu(self.norm(self.convolution(images)))
        return functional.max_pool2d(rectified, 2, return_indices=self.pool_indices)


class ReluReadTwice(Block):
    def forward(self, images):
        rectified = torch.relu(self.norm(self.convolution(images)))
        return functional.max_pool2d(rectified, 2), rectified.amax()


class ConvolutionReadTwice(Block):
    def forward(self, images):
        features = self.convolution(images)
        return functional.max_pool2d(torch.relu(self.norm(features)), 2), features.mean()


def run(module, images, monkeypatch, grad_enabled=False):
    """(compiled result, eager result, [(folded, moved)] per Dynamo graph)."""
    counts = []
    fold = inference_folding.fold_for_inference

    def counting_fold(gm):
        counts.append(fold(gm))
        return counts[-1]

    monkeypatch.setattr("torch_kiln.compile.backend.fold_for_inference", counting_fold)
    module = module.to("kiln")
    with torch.set_grad_enabled(grad_enabled):
        result = torch.compile(module, backend="kiln")(images.to("kiln"))
        expected = module(images.to("kiln"))
    return result, expected, counts


def assert_matches(result, expected):
    if isinstance(result, tuple):
        for one, other in zip(result, expected):
            assert_matches(one, other)
        return
    torch.testing.assert_close(result.cpu(), expected.cpu(), rtol=1e-5, atol=1e-5)


def images(seed=0):
    return torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("bias,affine", [(True, True), (False, True), (True, False), (False, False)])
def test_batch_norm_folds_and_relu_moves_with_eagers_result(fresh_compile_state, monkeypatch, bias, affine):
    block = with_statistics(Block(bias=bias, affine=affine), seed=1)
    result, expected, counts = run(block, images(), monkeypatch)
    assert counts == [(1, 1, 1)]
    assert_matches(result, expected)
    # Four kernels: the folded weight (its scale computed at the weight's
    # shape, and laid out channels-last, in one), the folded bias, the input
    # laid out channels-last, and the pool's scan with the ReLU.
    assert torch_kiln.compile_stats()["kernels"] == 4


def test_grouped_and_double_precision_convolutions_fold(fresh_compile_state, monkeypatch):
    depthwise = with_statistics(Block(channels=4, groups=4), seed=9)
    result, expected, counts = run(depthwise, torch.randn(2, 4, 6, 6, generator=torch.Generator().manual_seed(6)),
                                   monkeypatch)
    assert counts == [(1, 1, 1)]
    assert_matches(result, expected)
    torch._dynamo.reset()
    block = with_statistics(Block(), seed=10).double()
    result, expected, counts = run(block, images(6).double(), monkeypatch)
    assert counts == [(1, 1, 1)]
    assert result.dtype == torch.float64
    assert_matches(result, expected)


def test_the_cnn_folds_both_blocks(fresh_compile_state, monkeypatch):
    from torch_kiln.models import MODELS
    network = with_statistics(MODELS["cnn"].make_model(), seed=2)
    batch = MODELS["cnn"].make_batch(torch.Generator().manual_seed(3))[0]
    result, expected, counts = run(network, batch, monkeypatch)
    assert counts == [(2, 2, 2)]
    assert_matches(result, expected)


def test_nothing_is_rewritten_where_the_pattern_does_not_hold(fresh_compile_state, monkeypatch):
    # The convolution's result is read twice: no fold and its bias stays (the
    # ReLU still moves). Pool indices: no move (the fold still happens, and the
    # bias goes before the ReLU).
    result, expected, counts = run(with_statistics(ConvolutionReadTwice(), seed=4), images(1), monkeypatch)
    assert counts == [(0, 1, 0)]
    assert_matches(result, expected)
    torch._dynamo.reset()
    result, expected, counts = run(with_statistics(Block(pool_indices=True), seed=5), images(2), monkeypatch)
    assert counts == [(1, 0, 1)]
    assert_matches(result[0], expected[0])
    assert torch.equal(result[1].cpu(), expected[1].cpu())
    torch._dynamo.reset()
    # The ReLU's result is read by more than the pool: it stays before it.
    result, expected, counts = run(with_statistics(ReluReadTwice(), seed=8), images(5), monkeypatch)
    assert counts == [(1, 0, 1)]
    assert_matches(result, expected)


def test_training_mode_batch_norm_and_training_graphs_are_untouched(fresh_compile_state, monkeypatch):
    # train(): batch norm normalises with the batch's statistics, and updates
    # the running ones; under no_grad too. Nothing may fold.
    block = with_statistics(Block(), seed=6).train()
    result, expected, counts = run(block, images(3), monkeypatch)
    assert counts == [(0, 1, 0)]
    assert_matches(result, expected)
    torch._dynamo.reset()
    # A graph compiled with grad enabled is a training graph: the pass is not run.
    block = with_statistics(Block(), seed=7)
    result, expected, counts = run(block, images(4), monkeypatch, grad_enabled=True)
    assert counts == []
    assert_matches(result, expected)


class ConvolutionThen(nn.Module):
    def __init__(self, after):
        super().__init__()
        self.convolution = nn.Conv2d(3, 8, 3, padding=1, stride=2)
        self.after = after

    def forward(self, images):
        return self.after(self.convolution(images))


@pytest.mark.parametrize("after, moved", [
    (torch.relu, 1),
    (lambda features: functional.max_pool2d(features, 3, stride=2, padding=1), 1),  # padded windows
    (lambda features: functional.max_pool2d(features, 2, ceil_mode=True), 1),  # partial windows
    (torch.sigmoid, 0),
    (lambda features: functional.avg_pool2d(features, 2), 0),
])
def test_a_convolutions_bias_moves_after_a_pool_or_relu(fresh_compile_state, monkeypatch, after, moved):
    module = ConvolutionThen(after).eval()
    result, expected, counts = run(module, images(7), monkeypatch)
    assert counts == [(0, 0, moved)]
    assert_matches(result, expected)
