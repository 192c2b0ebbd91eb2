"""Random programs of eager kiln ops, run with adaptive eager off and on, whose
results must agree bit for bit (docs/design/adaptive_eager.md).

A program is a list of steps drawn from a seeded random.Random: pointwise ops
(unary, binary with tensors or Python scalars, comparisons and where, casts,
in-place ops, ops through transposed and sliced views), reductions (sum,
mean, amax, amin, prod over either dim, of pool entries and of temporaries
that die at once, which run fused as the reduction's prologue, some with
pointwise ops on the result alone, its epilogue), and drops
of references (so that some intermediates die and the fused kernel does not
store them). run_program() interprets it on the kiln device; compare() runs it
twice, with adaptive eager off and in 'always' mode with synchronous
compiles (so every region's first sight already runs fused), and returns the
first difference.

`python tests/python/adaptive_fuzz.py --programs N --seed S` runs N programs
(`make fuzz-adaptive` runs many); the pytest suite runs a few dozen.
"""
import argparse
import random
import sys
import time

import torch

import torch_kiln

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INT_DTYPES = [torch.int32, torch.int64, torch.uint8]

UNARY_FLOAT = ["neg", "abs", "exp", "log1p_abs", "sin", "tanh", "sigmoid", "sqrt_abs", "reciprocal", "floor", "erf"]
UNARY_INT = ["neg", "abs", "bitwise_not"]
BINARY_FLOAT = ["add", "sub", "mul", "div", "maximum", "minimum", "pow_abs", "atan2"]
BINARY_INT = ["add", "sub", "mul", "maximum", "minimum", "bitwise_and", "bitwise_xor"]
REDUCTIONS = ["sum", "mean", "amax", "amin", "prod"]


def make_program(rng, steps=None):
    """A program: its inputs' description and its steps (plain data)."""
    dtype = rng.choice(FLOAT_DTYPES * 3 + INT_DTYPES)
    rows = rng.choice([1, 3, 17, 64, 130])
    cols = rng.choice([1, 5, 33, 128, 257])
    if rng.random() < 0.05:
        rows = 0
    program = {"dtype": dtype, "shape": (rows, cols), "seed": rng.randrange(1 << 30), "steps": []}
    # Pool entries: 0 x (full), 1 y (full), 2 row vector (1, cols), 3 z.t() view of a (cols, rows)
    # tensor, 4 a slice of a wider tensor. Each step adds at most one entry.
    live = [0, 1, 2, 3, 4]
    count = 5
    floating = dtype.is_floating_point
    # Some programs long enough to fill a region (8 scalars, 16 operands,
    # 32 ops), which then ends before its independent tail.
    for _ in range(steps or (rng.randint(3, 14) if rng.random() < 0.8 else rng.randint(20, 40))):
        kind = rng.random()
        pick = lambda: rng.choice(live)  # noqa: E731
        if kind < 0.3:
            op = rng.choice(UNARY_FLOAT if floating else UNARY_INT)
            program["steps"].append(("unary", op, pick()))
        elif kind < 0.6:
            op = rng.choice(BINARY_FLOAT if floating else BINARY_INT)
            if rng.random() < 0.3:
                scalar = rng.choice([2, -3, 0.5, 1.5, 1e-3]) if floating else rng.choice([2, -3, 7])
                program["steps"].append(("binary_scalar", op, pick(), scalar))
            else:
                program["steps"].append(("binary", op, pick(), pick()))
        elif kind < 0.68:
            program["steps"].append(("where", pick(), pick(), pick()))
        elif kind < 0.74:
            target = rng.choice(FLOAT_DTYPES + INT_DTYPES)
            program["steps"].append(("cast", pick(), str(target)))
        elif kind < 0.84:
            op = rng.choice(["add_", "mul_", "clamp_"])
            program["steps"].append(("inplace", op, pick(), pick()))
        elif kind < 0.87:
            program["steps"].append(("reduce", rng.choice(REDUCTIONS), rng.choice([0, -1]), rng.random() < 0.5,
                                     pick()))
        elif kind < 0.93:
            # A reduction of a temporary: the fused kernel runs the ops as the
            # reduction's prologue and never stores what they computed.
            op = rng.choice(BINARY_FLOAT if floating else BINARY_INT)
            unary = rng.choice(UNARY_FLOAT if floating else UNARY_INT)
            # Sometimes with an epilogue: a scalar op and a unary op on the
            # reduction's result alone, which run inside the reduction too.
            epilogue = None
            if rng.random() < 0.5:
                epilogue = (rng.choice(BINARY_FLOAT if floating else BINARY_INT),
                            rng.choice([2, -3, 0.5, 1e-3]) if floating else rng.choice([2, -3, 7]),
                            rng.choice(UNARY_FLOAT if floating else UNARY_INT))
            # Sometimes with row ops: the reduction's input or its prologue's
            # result combined with the (broadcast) result, then perhaps with
            # another tensor, which run in one row kernel with the reduction
            # (a normalisation); sometimes the prologue's result stays held.
            row = None
            if floating and rng.random() < 0.6:
                row = (rng.choice(["input", "prologue"]), rng.choice(["mul", "div", "sub", "add"]),
                       rng.choice(["mul", "add", "sub", None]), pick(), rng.random() < 0.3)
            program["steps"].append(("reduce_expr", rng.choice(REDUCTIONS), rng.choice([0, -1]), op, unary,
                                     pick(), pick(), epilogue, row))
        else:
            if len(live) > 3:
                victim = rng.choice(live[5:] or live[:1])
                if victim >= 5:
                    live.remove(victim)
                    program["steps"].append(("drop", victim))
                    continue
            program["steps"].append(("unary", "neg", pick()))
        if program["steps"][-1][0] != "drop":
            live.append(count)
            count += 1
    return program


def _inputs(program, device):
    generator = torch.Generator().manual_seed(program["seed"])
    dtype = program["dtype"]
    rows, cols = program["shape"]

    def draw(*shape):
        if dtype.is_floating_point:
            values = torch.randn(*shape, generator=generator) * 3
            values[values.abs() < 0.05] = 0.0  # some exact zeros (signed, after neg)
            return values.to(dtype)
        return torch.randint(0, 100 if dtype == torch.uint8 else 50, shape, generator=generator).to(dtype)

    x, y, row = draw(rows, cols), draw(rows, cols), draw(1, cols)
    z = draw(cols, rows)
    wide = draw(rows, cols + 3)
    on = [t.to(device) for t in (x, y, row, z, wide)]
    return [on[0], on[1], on[2], on[3].t(), on[4][:, 1:cols + 1]]


def _unary(op, a):
    if op == "log1p_abs":
        return torch.log1p(a.abs())
    if op == "sqrt_abs":
        return torch.sqrt(a.abs())
    return getattr(torch, op)(a)


def _binary(op, a, b):
    if op == "pow_abs":
        return torch.pow(a.abs() if torch.is_tensor(a) else abs(a), b)
    return getattr(torch, op)(a, b)


def run_program(program, device="kiln"):
    """Runs `program`; returns every live result, moved to the CPU."""
    pool = list(_inputs(program, device))
    kept = []  # results held to the end beside the pool's
    for step in program["steps"]:
        kind = step[0]
        try:
            if kind == "unary":
                pool.append(_unary(step[1], pool[step[2]]))
            elif kind == "binary":
                pool.append(_binary(step[1], pool[step[2]], pool[step[3]]))
            elif kind == "binary_scalar":
                pool.append(_binary(step[1], pool[step[2]], step[3]))
            elif kind == "where":
                pool.append(torch.where(pool[step[1]] > 0, pool[step[2]], pool[step[3]]))
            elif kind == "cast":
                pool.append(pool[step[1]].to(getattr(torch, step[2].split(".")[1])))
            elif kind == "inplace":
                target, source = pool[step[2]], pool[step[3]]
                if step[1] == "clamp_":
                    target.clamp_(min=-2)
                else:
                    getattr(target, step[1])(source)
                pool.append(target)
            elif kind == "reduce":
                pool.append(getattr(torch, step[1])(pool[step[4]], dim=step[2], keepdim=step[3]))
            elif kind == "reduce_expr":
                # No name holds the temporaries once the step ends.
                prologue = _binary(step[3], pool[step[5]], pool[step[6]])
                reduced = getattr(torch, step[1])(_unary(step[4], prologue), dim=step[2], keepdim=True)
                if step[7] is not None:
                    binary, scalar, unary = step[7]
                    reduced = _unary(unary, _binary(binary, reduced, scalar))
                row = step[8] if len(step) > 8 else None
                if row is not None:
                    operand, first, second, other, keep = row
                    reduced = _binary(first, pool[step[5]] if operand == "input" else prologue, reduced)
                    if second is not None:
                        reduced = _binary(second, reduced, pool[other])
                    if keep:
                        kept.append(prologue)
                del prologue
                pool.append(reduced)
            elif kind == "drop":
                pool[step[1]] = None
        except (RuntimeError, TypeError, AttributeError, IndexError):
            pool.append(None)  # refused alike on both runs (compare() checks)
    return [None if t is None else t.cpu() for t in pool + kept]


def _same_bits(a, b):
    """Equal bit for bit, but for the sign and payload of NaNs: C compilers
    do not keep those (GCC folds -(a / b) into (-a) / b, so a fused sigmoid
    of 0 / 0 gave NaN where the unfused one gave -NaN), nor does PyTorch's
    CPU across its vectorised and scalar loops."""
    if a is None or b is None:
        return a is None and b is None
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        nan = torch.isnan(a)
        if not torch.equal(nan, torch.isnan(b)):
            return False
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        a_bits, b_bits = a.contiguous().view(bits), b.contiguous().view(bits)
        return torch.equal(a_bits[~nan], b_bits[~nan])
    return torch.equal(a, b)


def compare(program):
    """Runs `program` unfused and fused; returns None or the first difference."""
    mode = torch_kiln.adaptive_eager_mode()
    try:
        torch_kiln.set_adaptive_eager("off")
        unfused = run_program(program)
        torch_kiln.set_adaptive_eager("always")
        torch_kiln._C._adaptive_eager_synchronous_compiles(True)
        fused = run_program(program)
    finally:
        torch_kiln._C._adaptive_eager_synchronous_compiles(False)
        torch_kiln.set_adaptive_eager(mode)
    for index, (a, b) in enumerate(zip(unfused, fused)):
        if not _same_bits(a, b):
            return f"entry {index} differs: unfused {a!r} fused {b!r}"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    start = time.monotonic()
    torch_kiln.reset_adaptive_eager_stats()
    ran = 0
    for index in range(args.programs):
        program = make_program(rng)
        difference = compare(program)
        ran += 1
        if difference is not None:
            print(f"program {index} (seed {args.seed}): {difference}\n{program}")
            return 1
        if args.seconds is not None and time.monotonic() - start > args.seconds:
            break
    stats = torch_kiln.adaptive_eager_stats()
    print(f"{ran} programs agree bit for bit; {stats['regions_fused']} regions fused "
          f"({stats['ops_fused']} ops, {stats['reductions_fused']} of them with a reduction, "
          f"{stats['row_kernels_fused']} of those as row kernels), "
          f"{stats['region_keys']} region kernels, "
          f"{stats['bytes_not_stored']} bytes not stored, {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
