"""Shape bucketing (torch_kiln.bucketing): bucket choice, padding on cpu and
kiln, the Bucketed wrapper against the unwrapped model, and the point of it
all: a bounded number of Dynamo compiles for inputs of many lengths."""
import itertools
import random

import pytest
import torch
import torch.nn.functional as F

from torch_kiln.bucketing import Bucketed, bucket_for, pad_to_bucket, padding_mask
from torch_kiln.bucketing import suggest_buckets

DEVICES = ["cpu", "kiln"]


def padding_waste(sizes, buckets):
    return sum(bucket_for(size, buckets) - size for size in sizes)


# suggest_buckets ------------------------------------------------------------

def test_suggest_buckets_covers_the_largest_size_with_at_most_count():
    generator = random.Random(0)
    sizes = [generator.randint(1, 500) for _ in range(300)]
    for count, multiple in [(1, 1), (4, 1), (4, 64), (8, 8)]:
        buckets = suggest_buckets(sizes, count=count, multiple=multiple)
        assert 1 <= len(buckets) <= count
        assert buckets == sorted(set(buckets))
        assert all(bucket % multiple == 0 for bucket in buckets)
        assert buckets[-1] == -(-max(sizes) // multiple) * multiple
        assert all(bucket_for(size, buckets) >= size for size in sizes)


def test_suggest_buckets_returns_the_distinct_sizes_when_few():
    assert suggest_buckets([5, 3, 5, 9], count=4) == [3, 5, 9]
    assert suggest_buckets([5, 3, 5, 9], count=4, multiple=4) == [4, 8, 12]
    assert suggest_buckets([7], count=3) == [7]


def test_suggest_buckets_has_the_least_padding_of_all_choices():
    generator = random.Random(1)
    for _ in range(150):
        sizes = [generator.randint(1, 40) for _ in range(generator.randint(1, 25))]
        count, multiple = generator.randint(1, 5), generator.choice([1, 4, 8])
        buckets = suggest_buckets(sizes, count=count, multiple=multiple)
        candidates = sorted({-(-size // multiple) * multiple for size in sizes})
        least = min(padding_waste(sizes, list(chosen) + [candidates[-1]])
                    for extra in range(count)
                    for chosen in itertools.combinations(candidates[:-1], extra))
        assert padding_waste(sizes, buckets) == least, (sizes, count, multiple, buckets)


def test_suggest_buckets_weighs_frequent_sizes():
    # 100 inputs of length 10 and one of 100: a bucket at 10 saves 90 each.
    assert suggest_buckets([10] * 100 + [100, 55], count=2) == [10, 100]


def test_suggest_buckets_is_fast_on_many_distinct_sizes():
    generator = random.Random(2)
    sizes = [generator.randint(1, 20000) for _ in range(40000)]
    buckets = suggest_buckets(sizes, count=8)  # O(count * n log n): well under a second
    assert len(buckets) == 8 and buckets[-1] == max(sizes)


def test_suggest_buckets_rejects_bad_input():
    with pytest.raises(ValueError, match="sizes must not be empty"):
        suggest_buckets([])
    with pytest.raises(ValueError, match="a size must be >= 1, got 0"):
        suggest_buckets([3, 0])
    with pytest.raises(ValueError, match="count must be >= 1"):
        suggest_buckets([3], count=0)
    with pytest.raises(ValueError, match="multiple must be >= 1"):
        suggest_buckets([3], multiple=0)
    with pytest.raises(TypeError, match="a size must be an integer, got float"):
        suggest_buckets([2.5])


# bucket_for and padding_mask ----------------------------------------------------

def test_bucket_for_picks_the_smallest_bucket_that_holds_the_size():
    assert bucket_for(1, [16, 32, 64]) == 16
    assert bucket_for(16, [16, 32, 64]) == 16
    assert bucket_for(17, [64, 16, 32]) == 32
    assert bucket_for(0, [8]) == 8


def test_bucket_for_names_the_size_and_the_largest_bucket():
    with pytest.raises(ValueError, match=r"size 65 does not fit: the largest bucket is 64"):
        bucket_for(65, [16, 32, 64])
    with pytest.raises(ValueError, match="buckets must not be empty"):
        bucket_for(3, [])
    with pytest.raises(ValueError, match="a bucket must be >= 1, got 0"):
        bucket_for(3, [0, 4])
    with pytest.raises(ValueError, match="size must be >= 0, got -1"):
        bucket_for(-1, [4])


@pytest.mark.parametrize("device", DEVICES)
def test_padding_mask_is_true_at_real_positions(device):
    mask = padding_mask(3, 5, device=device)
    assert mask.dtype == torch.bool and mask.device.type == device
    assert mask.cpu().tolist() == [True, True, True, False, False]
    assert padding_mask(0, 2).tolist() == [False, False]
    with pytest.raises(ValueError, match="length 6 is larger than the bucket 5"):
        padding_mask(6, 5)


# pad_to_bucket ----------------------------------------------------------------

PAD_VALUES = {torch.float32: -2.5, torch.float16: 1.5, torch.int64: 7, torch.bool: True}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(PAD_VALUES))
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_pad_to_bucket_pads_the_end_of_dim(device, dtype, dim):
    original = (torch.randn(3, 5, 6) * 10).to(dtype)
    value = PAD_VALUES[dtype]
    padded = pad_to_bucket(original.to(device), dim, [4, 8, 16], value=value)
    assert padded.device.type == device and padded.dtype == dtype
    expected_shape = list(original.shape)
    expected_shape[dim] = bucket_for(original.size(dim), [4, 8, 16])
    assert list(padded.shape) == expected_shape
    padded = padded.cpu()
    size = original.size(dim)
    assert torch.equal(padded.narrow(dim, 0, size), original)
    tail = padded.narrow(dim, size, padded.size(dim) - size)
    assert torch.equal(tail, torch.full_like(tail, value))


@pytest.mark.parametrize("device", DEVICES)
def test_pad_to_bucket_returns_the_input_when_it_is_a_bucket(device):
    tensor = torch.randn(2, 8, device=device)
    assert pad_to_bucket(tensor, 1, [4, 8]) is tensor


def test_pad_to_bucket_errors():
    with pytest.raises(ValueError, match="size 9 does not fit: the largest bucket is 8"):
        pad_to_bucket(torch.zeros(2, 9), 1, [4, 8])
    with pytest.raises(IndexError):
        pad_to_bucket(torch.zeros(2, 3), 2, [4])


# Bucketed -------------------------------------------------------------------

class CausalModel(torch.nn.Module):
    """A causal convolution then causal self-attention: position t sees only
    positions <= t, so padding at the end cannot change the real positions."""

    def __init__(self, features=8, heads=2, kernel=3):
        super().__init__()
        self.kernel, self.heads = kernel, heads
        self.convolution = torch.nn.Conv1d(features, features, kernel)
        self.project = torch.nn.Linear(features, 3 * features)
        self.output = torch.nn.Linear(features, features)

    def forward(self, inputs):  # (batch, sequence, features)
        past = F.pad(inputs.transpose(1, 2), (self.kernel - 1, 0))
        hidden = self.convolution(past).transpose(1, 2) + inputs
        query, key, value = self.project(hidden).unflatten(-1, (3, self.heads, -1)) \
            .permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(query, key, value, is_causal=True)
        return self.output(attended.transpose(1, 2).flatten(2)), {"hidden": hidden}


class MaskedModel(torch.nn.Module):
    """Bidirectional attention over ids; keys where attention_mask is False are
    ignored. The mean over features is a second, per-position output."""

    def __init__(self, vocabulary=20, features=8):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocabulary, features)
        self.project = torch.nn.Linear(features, 3 * features)

    def forward(self, ids, attention_mask=None):  # ids (batch, sequence)
        query, key, value = self.project(self.embedding(ids)).chunk(3, dim=-1)
        mask = None if attention_mask is None else attention_mask[:, None, :].bool()
        attended = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        return attended, attended.mean(-1)


@pytest.mark.parametrize("device", DEVICES)
def test_bucketed_causal_model_matches_the_unpadded_model(device):
    model = CausalModel().to(device)
    bucketed = Bucketed(model, [4, 16, 32], dim=1, output_dim=1)
    for length in [1, 3, 4, 11, 32]:
        inputs = torch.randn(2, length, 8, device=device)
        output, extra = bucketed(inputs)
        expected, expected_extra = model(inputs)
        assert output.shape == expected.shape and extra["hidden"].shape == inputs.shape
        torch.testing.assert_close(output.cpu(), expected.cpu(), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(extra["hidden"].cpu(), expected_extra["hidden"].cpu(),
                                   atol=1e-5, rtol=1e-5)
    padded, _ = Bucketed(model, [16], output_dim=None)(torch.randn(2, 5, 8, device=device))
    assert padded.shape == (2, 16, 8)


@pytest.mark.parametrize("device", DEVICES)
def test_bucketed_gradients_match_the_unpadded_model(device):
    model = CausalModel().to(device)
    inputs = torch.randn(2, 5, 8, device=device, requires_grad=True)
    model(inputs)[0].square().sum().backward()
    expected = [inputs.grad.cpu()] + [p.grad.cpu() for p in model.parameters()]
    inputs.grad = None
    model.zero_grad()
    Bucketed(model, [8])(inputs)[0].square().sum().backward()
    found = [inputs.grad.cpu()] + [p.grad.cpu() for p in model.parameters()]
    for gradient, expected_gradient in zip(found, expected):
        torch.testing.assert_close(gradient, expected_gradient, atol=1e-5, rtol=1e-5)

@pytest.mark.parametrize("device", DEVICES)
def test_bucketed_passes_a_mask_to_a_masked_model(device):
    model = MaskedModel().to(device)
    ids = torch.randint(0, 20, (3, 6), device=device)
    expected, expected_mean = model(ids)
    bucketed = Bucketed(model, [8, 16], argument="ids", mask_keyword="attention_mask")
    output, mean = bucketed(ids=ids)
    torch.testing.assert_close(output.cpu(), expected.cpu(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mean.cpu(), expected_mean.cpu(), atol=1e-5, rtol=1e-5)

    # The caller's own mask is padded with False, its real part kept.
    caller_mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 0, 1, 0, 1, 0], [1] * 6],
                               device=device)
    expected, _ = model(ids, attention_mask=caller_mask)
    output, _ = Bucketed(model, [8], mask_keyword="attention_mask")(
        ids, attention_mask=caller_mask)
    torch.testing.assert_close(output.cpu(), expected.cpu(), atol=1e-5, rtol=1e-5)

    # Without the mask the padding leaks into the real positions.
    unmasked, _ = Bucketed(model, [8])(ids)
    assert not torch.allclose(unmasked.cpu(), model(ids)[0].cpu(), atol=1e-3)


def test_bucketed_errors():
    model = MaskedModel()
    with pytest.raises(ValueError, match="size 9 does not fit: the largest bucket is 8"):
        Bucketed(model, [8])(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(TypeError, match="no input 1 to pad"):
        Bucketed(model, [8], argument=1)(torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask must be a tensor with size 3"):
        Bucketed(model, [8], mask_keyword="attention_mask")(
            torch.zeros(1, 3, dtype=torch.long), attention_mask=torch.ones(1, 4))
    with pytest.raises(ValueError, match="buckets must not be empty"):
        Bucketed(model, [])


# Compiles: the reason bucketing exists ---------------------------------------

def count_compiles(model, wrap, lengths, device):
    """Runs wrap(torch.compile(model)) on inputs of each length; returns how
    often Dynamo called the backend, after checking every output against the
    eager model."""
    compiles = 0

    def counting_backend(graph_module, example_inputs):
        nonlocal compiles
        compiles += 1
        return graph_module.forward

    torch._dynamo.reset()
    compiled = wrap(torch.compile(model, backend=counting_backend, dynamic=False))
    with torch._dynamo.config.patch(cache_size_limit=64, fail_on_recompile_limit_hit=True):
        for length in lengths:
            inputs = torch.randn(1, length, 8, device=device)
            torch.testing.assert_close(compiled(inputs)[0].cpu(), model(inputs)[0].cpu(),
                                       atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()
    return compiles


@pytest.mark.parametrize("device", DEVICES)
def test_bucketing_bounds_the_number_of_compiles(device):
    generator = random.Random(3)
    lengths = [generator.randint(1, 64) for _ in range(20)]
    assert len(set(lengths)) > 4
    model = CausalModel().to(device)
    buckets = suggest_buckets(lengths, count=4)

    unbucketed = count_compiles(model, lambda compiled: compiled, lengths, device)
    bucketed = count_compiles(model, lambda compiled: Bucketed(compiled, buckets),
                              lengths, device)
    assert unbucketed == len(set(lengths))
    assert bucketed == len(buckets) <= 4
