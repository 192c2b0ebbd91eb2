"""Shape bucketing: pad one dimension up to a few sizes so that inputs of many
lengths reuse a few compiled programs (docs/guides/bucketing.md).

``torch.compile(model, backend="kiln")`` compiles static shapes only: every new
input shape is a new program under Dynamo's guards. Padding the varying
dimension (sequence length, batch) up to the smallest of a few *buckets* bounds
the number of programs by the number of buckets.

    suggest_buckets(sizes, count=4, multiple=1)  bucket sizes that waste little
                                                 padding on the observed sizes
    bucket_for(size, buckets)                    the smallest bucket >= size
    pad_to_bucket(tensor, dim, buckets, value=0) pads `dim` at its end
    padding_mask(length, bucket, device=None)    True at the real positions
    Bucketed(module, buckets, dim=1, ...)        pads an input, calls the module,
                                                 slices the outputs back

All of them run eagerly, with ordinary torch ops, on any device (cpu, "kiln").
Compile the inner module, not the wrapper: ``Bucketed(torch.compile(model))``.
Dynamo guards on the shapes of the inputs of the function it compiles, so a
compiled wrapper would still see (and recompile for) every unpadded length.
"""
import collections
import itertools
import operator

import torch
from torch.utils._pytree import tree_map_only

__all__ = ["Bucketed", "bucket_for", "pad_to_bucket", "padding_mask", "suggest_buckets"]


def _as_size(value, what, minimum):
    """`value` as a Python int >= minimum, else a TypeError/ValueError naming `what`."""
    try:
        size = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None
    if size < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {size}")
    return size


def _as_buckets(buckets, caller):
    """The buckets as a sorted tuple of distinct positive ints; a clear error if empty."""
    sizes = sorted({_as_size(bucket, f"{caller}: a bucket", 1) for bucket in buckets})
    if not sizes:
        raise ValueError(f"{caller}: buckets must not be empty")
    return tuple(sizes)


def suggest_buckets(sizes, count=4, multiple=1):
    """A sorted list of at most `count` bucket sizes for the observed `sizes`.

    Every bucket is a multiple of `multiple` (use 8 or 64 to keep kernels
    aligned); the largest is the largest size rounded up, so every observed size
    fits. Among those choices it returns the one with the least total padding
    over `sizes` (a size is padded to the smallest bucket that holds it), found
    exactly by dynamic programming over the distinct rounded sizes. Repeated
    sizes weigh more, so pass the sizes as they occur (e.g. a sample of the data
    set's sequence lengths), not just their distinct values. Returns fewer than
    `count` buckets when there are fewer distinct rounded sizes.
    """
    count = _as_size(count, "suggest_buckets: count", 1)
    multiple = _as_size(multiple, "suggest_buckets: multiple", 1)
    rounded = [-(-_as_size(size, "suggest_buckets: a size", 1) // multiple) * multiple
               for size in sizes]
    if not rounded:
        raise ValueError("suggest_buckets: sizes must not be empty")
    values = sorted(set(rounded))
    if len(values) <= count:
        return values

    # With the buckets at indices b_1 < ... < b_k = n - 1 of `values`, the
    # padding is sum_i values[b_i] * (sizes in (values[b_(i-1)], values[b_i]])
    # minus sum(sizes), a constant. cost[j]: the least such sum covering
    # values[:j + 1] with the buckets of this round, the last at j.
    occurrences = collections.Counter(rounded)
    covered = list(itertools.accumulate(occurrences[v] for v in values))
    cost = [v * c for v, c in zip(values, covered)]  # one bucket
    choices = []  # choices[r][j]: the index of the bucket before j, round r
    for buckets_used in range(2, count + 1):
        cost, choice = _add_bucket(values, covered, cost, first=buckets_used - 1)
        choices.append(choice)

    index = len(values) - 1
    buckets = [values[index]]
    for choice in reversed(choices):
        index = choice[index]
        buckets.append(values[index])
    return sorted(buckets)


def _add_bucket(values, covered, cost, first):
    """One round of suggest_buckets' dynamic program: from the least cost with
    k - 1 buckets ending at each index, the least with k and where the one
    before the last sits. Indices below `first` cannot hold k buckets.

    The cost values[j] * (covered[j] - covered[i]) of a bucket at j after one at
    i is a Monge array (i < i', j < j' give (values[j'] - values[j]) *
    (covered[i] - covered[i']) <= 0), so the best i never decreases as j
    grows: divide and conquer over j needs O(n log n) steps, not O(n^2).
    """
    new_cost, choice = cost[:], [0] * len(values)
    pending = [(first, len(values) - 1, first - 1, len(values) - 2)]
    while pending:
        low, high, choice_low, choice_high = pending.pop()
        if low > high:
            continue
        j = (low + high) // 2
        best = None
        for i in range(choice_low, min(j - 1, choice_high) + 1):
            candidate = cost[i] + values[j] * (covered[j] - covered[i])
            if best is None or candidate < best:
                best, choice[j] = candidate, i
        new_cost[j] = best
        pending.append((low, j - 1, choice_low, choice[j]))
        pending.append((j + 1, high, choice[j], choice_high))
    return new_cost, choice


def bucket_for(size, buckets):
    """The smallest bucket >= `size` (buckets in any order).

    Raises ValueError naming the size and the largest bucket when none holds it.
    """
    size = _as_size(size, "bucket_for: size", 0)
    buckets = _as_buckets(buckets, "bucket_for")
    for bucket in buckets:
        if bucket >= size:
            return bucket
    raise ValueError(
        f"bucket_for: size {size} does not fit: the largest bucket is {buckets[-1]} "
        f"(buckets {list(buckets)}); add a larger bucket or shorten the input")


def pad_to_bucket(tensor, dim, buckets, value=0):
    """`tensor` padded with `value` at the end of `dim` up to bucket_for(size).

    Returns `tensor` itself when its size is already a bucket, else a new tensor
    of the same dtype and device (any device: it uses new_full and cat). Raises
    IndexError for a bad `dim` and ValueError when the size fits no bucket.
    """
    size = tensor.size(dim)  # checks dim, negative dims included
    bucket = bucket_for(size, buckets)
    if bucket == size:
        return tensor
    dim = dim % tensor.dim()
    shape = list(tensor.shape)
    shape[dim] = bucket - size
    return torch.cat([tensor, tensor.new_full(shape, value)], dim)


def padding_mask(length, bucket, device=None):
    """A bool tensor of shape (bucket,): True at the `length` real positions,
    False at the padding after them."""
    bucket = _as_size(bucket, "padding_mask: bucket", 0)
    length = _as_size(length, "padding_mask: length", 0)
    if length > bucket:
        raise ValueError(f"padding_mask: length {length} is larger than the bucket {bucket}")
    return torch.arange(bucket, device=device) < length


class Bucketed(torch.nn.Module):
    """Wraps `module` so that one input is padded along `dim` to a bucket.

    Bucketed(module, buckets, dim=1, pad_value=0, argument=0, output_dim=1,
             mask_keyword=None)

    A call pads the input `argument` (a positional index, or a keyword name)
    at the end of `dim` with `pad_value` up to the smallest of `buckets` that
    holds it, calls `module`, and narrows every output tensor whose size along
    `output_dim` is that bucket back to the original length (other tensors,
    e.g. pooled outputs, are returned as they are). With output_dim=None the
    padded outputs are returned. An input longer than the largest bucket raises
    ValueError.

    Padding at the end is correct only when padded positions cannot change the
    real ones: models in which a position depends on itself and earlier
    positions only (causal convolutions, causal attention, per-position layers),
    or models that take a mask. For the latter, `mask_keyword` (e.g.
    "attention_mask") passes a bool mask, True at real positions, of the padded
    input's shape up to and including `dim` (for input ids (batch, seq) and
    dim=1: (batch, bucket)). If the caller passes that keyword already, its mask
    (aligned with the input from the first dimension) is padded with zeros
    (False) along `dim` instead. Outputs at the padded positions are not
    meaningful in either case; with output_dim set they are cut off.

    Compile the inner module: Bucketed(torch.compile(model, backend="kiln"),
    buckets). Then each bucket compiles once, whatever the input lengths.
    """

    def __init__(self, module, buckets, *, dim=1, pad_value=0, argument=0, output_dim=1,
                 mask_keyword=None):
        super().__init__()
        if not isinstance(argument, (int, str)):
            raise TypeError("Bucketed: argument must be a positional index (int) or a "
                            f"keyword name (str), got {type(argument).__name__}")
        self.module = module
        self.buckets = _as_buckets(buckets, "Bucketed")
        self.dim = operator.index(dim)
        self.pad_value = pad_value
        self.argument = argument
        self.output_dim = None if output_dim is None else operator.index(output_dim)
        self.mask_keyword = mask_keyword

    def extra_repr(self):
        return (f"buckets={list(self.buckets)}, dim={self.dim}, argument={self.argument!r}, "
                f"output_dim={self.output_dim}, mask_keyword={self.mask_keyword!r}")

    def forward(self, *args, **kwargs):
        args, kwargs = list(args), dict(kwargs)
        container, key = (kwargs, self.argument) if isinstance(self.argument, str) \
            else (args, self.argument)
        try:
            tensor = container[key]
        except (IndexError, KeyError):
            raise TypeError(f"Bucketed: the call has no input {self.argument!r} to pad") from None
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"Bucketed: input {self.argument!r} must be a tensor, "
                            f"got {type(tensor).__name__}")
        length = tensor.size(self.dim)
        bucket = bucket_for(length, self.buckets)
        container[key] = pad_to_bucket(tensor, self.dim, self.buckets, self.pad_value)
        if self.mask_keyword is not None:
            kwargs[self.mask_keyword] = self._mask(kwargs.get(self.mask_keyword), tensor,
                                                   length, bucket)
        outputs = self.module(*args, **kwargs)
        if self.output_dim is None or bucket == length:
            return outputs
        return tree_map_only(torch.Tensor, lambda output: self._narrow(output, length, bucket),
                             outputs)

    def _mask(self, given, tensor, length, bucket):
        """The mask for the padded input: built, or the caller's padded with False."""
        dim = self.dim % tensor.dim()
        if given is None:
            shape = tuple(tensor.shape[:dim]) + (bucket,)
            return padding_mask(length, bucket, tensor.device).expand(shape).contiguous()
        if not isinstance(given, torch.Tensor) or given.dim() <= dim \
                or given.size(dim) != length:
            found = (f"shape {tuple(given.shape)}" if isinstance(given, torch.Tensor)
                     else type(given).__name__)
            raise ValueError(f"Bucketed: {self.mask_keyword} must be a tensor with size "
                             f"{length} (the input's length) along dim {dim}, got {found}")
        return pad_to_bucket(given, dim, (bucket,), 0)

    def _narrow(self, output, length, bucket):
        dim = self.output_dim
        if not -output.dim() <= dim < output.dim() or output.size(dim) != bucket:
            return output
        return output.narrow(dim, 0, length)
