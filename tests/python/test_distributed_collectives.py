"""torch.distributed's `kiln` backend: every collective and point-to-point op
on kiln tensors, against a reference computed on the CPU from every rank's
inputs, for float32, bfloat16 and int64, on 2 and 4 ranks (one process per
rank), plus sub-groups, async work and its future. all_reduce,
all_gather_into_tensor, reduce_scatter_tensor and broadcast between ranks of
one host go through shared memory (and the list forms of all_gather and
reduce_scatter through them), and all_to_all_single when it fits; they
are tested with Gloo carrying them too, and over the shapes and sizes that
take each of their paths.

Inputs are small integers, so every reduction order gives the same exact
result and the comparisons are exact."""
import time

import pytest
import torch
import torch.distributed as dist

from distributed_ranks import run_ranks

DTYPES = [torch.float32, torch.bfloat16, torch.int64]
FLOAT_OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "PREMUL_SUM"]
INTEGER_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
PREMUL_FACTOR = 0.5


def rank_input(rank, shape, dtype, salt=0):
    """Rank `rank`'s input, the same in every process."""
    generator = torch.Generator().manual_seed(1000 * salt + rank)
    low, high = (-2, 3) if dtype.is_floating_point else (0, 2) if dtype == torch.bool else (1, 8)
    return torch.randint(low, high, shape, generator=generator).to(dtype)


def reference_reduce(tensors, op, size):
    stacked = torch.stack([tensor.to(torch.float64) if tensor.is_floating_point() else tensor
                           for tensor in tensors])
    if op == "SUM":
        result = stacked.sum(0)
    elif op == "AVG":
        result = stacked.sum(0) / size
    elif op == "PREMUL_SUM":
        result = (stacked * PREMUL_FACTOR).sum(0)
    elif op == "PRODUCT":
        result = stacked.prod(0)
    elif op == "MIN":
        result = stacked.amin(0)
    elif op == "MAX":
        result = stacked.amax(0)
    else:
        result = tensors[0].clone()
        for tensor in tensors[1:]:
            result = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or,
                      "BXOR": torch.bitwise_xor}[op](result, tensor)
    return result.to(tensors[0].dtype)


def reduce_op(name):
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return getattr(dist.ReduceOp, name)


def check(actual, expected, what):
    actual = actual.cpu()
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    if actual.numel() <= 64:
        assert torch.equal(actual, expected), f"{what}: got {actual.tolist()}, expected {expected.tolist()}"
    elif not torch.equal(actual, expected):
        wrong = (actual != expected).flatten().nonzero().flatten()
        first = wrong[0].item()
        raise AssertionError(f"{what}: {wrong.numel()} of {actual.numel()} elements differ, the first at flat "
                             f"index {first}: {actual.flatten()[first].item()}, expected "
                             f"{expected.flatten()[first].item()}")


def ops_for(dtype):
    return FLOAT_OPS if dtype.is_floating_point else INTEGER_OPS


def reductions(rank, size, dtype):
    shape = (3, 5)
    inputs = [rank_input(r, shape, dtype) for r in range(size)]
    for name in ops_for(dtype):
        tensor = inputs[rank].to("kiln")
        dist.all_reduce(tensor, op=reduce_op(name))
        check(tensor, reference_reduce(inputs, name, size), f"all_reduce {name} {dtype}")

        tensor = inputs[rank].to("kiln")
        dist.reduce(tensor, dst=size - 1, op=reduce_op(name))
        expected = reference_reduce(inputs, name, size) if rank == size - 1 else inputs[rank]
        check(tensor, expected, f"reduce {name} {dtype} (root {size - 1})")

    for name in ("SUM", "AVG") if dtype.is_floating_point else ("SUM", "MAX"):
        chunks = [rank_input(r, (size * 2, 3), dtype, salt=1) for r in range(size)]
        output = torch.empty(2, 3, dtype=dtype, device="kiln")
        dist.reduce_scatter_tensor(output, chunks[rank].to("kiln"), op=reduce_op(name))
        check(output, reference_reduce(chunks, name, size)[2 * rank:2 * rank + 2],
              f"reduce_scatter_tensor {name} {dtype}")

        output = torch.empty(2, 3, dtype=dtype, device="kiln")
        dist.reduce_scatter(output, [part.to("kiln") for part in chunks[rank].split(2)],
                            op=reduce_op(name))
        check(output, reference_reduce(chunks, name, size)[2 * rank:2 * rank + 2],
              f"reduce_scatter {name} {dtype}")

    tensors = [rank_input(rank, (4,), dtype, salt=2), rank_input(rank, (2, 2), dtype, salt=3)]
    device_tensors = [tensor.to("kiln") for tensor in tensors]
    dist.all_reduce_coalesced(device_tensors)
    for index, tensor in enumerate(device_tensors):
        expected = reference_reduce([rank_input(r, tensors[index].shape, dtype, salt=2 + index)
                                     for r in range(size)], "SUM", size)
        check(tensor, expected, f"all_reduce_coalesced {dtype} tensor {index}")


def data_movement(rank, size, dtype):
    inputs = [rank_input(r, (2, 3), dtype, salt=4) for r in range(size)]
    mine = inputs[rank].to("kiln")

    tensor = mine.clone()
    dist.broadcast(tensor, src=1)
    check(tensor, inputs[1], f"broadcast {dtype}")

    gathered = [torch.empty(2, 3, dtype=dtype, device="kiln") for _ in range(size)]
    dist.all_gather(gathered, mine)
    for source, tensor in enumerate(gathered):
        check(tensor, inputs[source], f"all_gather {dtype} from rank {source}")

    flat = torch.empty(size * 2, 3, dtype=dtype, device="kiln")
    dist.all_gather_into_tensor(flat, mine)
    check(flat, torch.cat(inputs), f"all_gather_into_tensor {dtype}")

    collected = [torch.empty(2, 3, dtype=dtype, device="kiln") for _ in range(size)] if rank == 0 else None
    dist.gather(mine, collected, dst=0)
    if rank == 0:
        for source, tensor in enumerate(collected):
            check(tensor, inputs[source], f"gather {dtype} from rank {source}")

    received = torch.empty(2, 3, dtype=dtype, device="kiln")
    dist.scatter(received, [tensor.to("kiln") for tensor in inputs] if rank == 0 else None, src=0)
    check(received, inputs[rank], f"scatter {dtype}")

    # Uneven splits: rank r sends r + j + 1 rows to rank j.
    def block(sender, receiver):
        rows = sender + receiver + 1
        return (100 * sender + 10 * receiver + torch.arange(rows * 2).reshape(rows, 2)).to(dtype)
    send = torch.cat([block(rank, j) for j in range(size)]).to("kiln")
    expected = torch.cat([block(j, rank) for j in range(size)])
    output = torch.empty(expected.shape, dtype=dtype, device="kiln")
    dist.all_to_all_single(output, send, output_split_sizes=[j + rank + 1 for j in range(size)],
                           input_split_sizes=[rank + j + 1 for j in range(size)])
    check(output, expected, f"all_to_all_single (uneven splits) {dtype}")

    outputs = [torch.empty(2, dtype=dtype, device="kiln") for _ in range(size)]
    dist.all_to_all(outputs, [torch.full((2,), 10 * rank + j, dtype=dtype, device="kiln")
                              for j in range(size)])
    for source, tensor in enumerate(outputs):
        check(tensor, torch.full((2,), 10 * source + rank, dtype=dtype), f"all_to_all {dtype}")


def point_to_point(rank, size, dtype):
    following, preceding = (rank + 1) % size, (rank - 1) % size
    message = lambda sender: torch.arange(4, dtype=dtype) + 10 * sender  # noqa: E731
    # Both ranks send first: sends must not wait for the matching receive.
    received = torch.empty(4, dtype=dtype, device="kiln")
    request = dist.isend(message(rank).to("kiln"), following)
    dist.recv(received, preceding)
    request.wait()
    check(received, message(preceding), f"isend/recv {dtype}")

    received = torch.empty(4, dtype=dtype, device="kiln")
    requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, message(rank).to("kiln"), following),
                                       dist.P2POp(dist.irecv, received, preceding)])
    for request in requests:
        request.wait()
    check(received, message(preceding), f"batch_isend_irecv {dtype}")

    if rank == 0:
        dist.send(message(0).to("kiln"), 1)
    elif rank == 1:
        received = torch.empty(4, dtype=dtype, device="kiln")
        dist.irecv(received, 0).wait()
        check(received, message(0), f"send/irecv {dtype}")
    dist.barrier()


def every_collective(rank, size):
    for dtype in DTYPES:
        reductions(rank, size, dtype)
        data_movement(rank, size, dtype)
        point_to_point(rank, size, dtype)


def uses_shared_memory():
    return dist.group.WORLD._get_backend(torch.device("kiln")).uses_shared_memory


def every_collective_over_gloo(rank, size):
    assert not uses_shared_memory(), "KILN_DISTRIBUTED_SHARED_MEMORY=0 left shared memory on"
    every_collective(rank, size)
    shared_memory_data_movement(rank, size)  # the same sizes, over Gloo
    shared_memory_all_to_all(rank, size)


@pytest.mark.parametrize("world_size", [2, 4])
def test_every_collective_matches_the_cpu(world_size):
    run_ranks(every_collective, world_size)


def test_every_collective_matches_the_cpu_with_gloo_carrying_all():
    run_ranks(every_collective_over_gloo, 2, environment={"KILN_DISTRIBUTED_SHARED_MEMORY": "0"})


# Float32 elements of the shared-memory transport's slot (1 MiB), and of the
# largest piece every rank reduces whole (128 KiB).
SLOT_ELEMENTS = (1 << 20) // 4
WHOLE_PIECE_ELEMENTS = (128 << 10) // 4


def shared_memory_all_reduce(rank, size):
    assert uses_shared_memory(), "ranks on one host did not get the shared-memory transport"
    cases = [
        ((), torch.float32, "SUM"),                                  # a scalar
        ((0,), torch.float32, "SUM"),                                # no elements
        ((WHOLE_PIECE_ELEMENTS,), torch.float32, "MAX"),             # reduced whole by every rank
        ((WHOLE_PIECE_ELEMENTS + 1,), torch.float32, "SUM"),         # split among the ranks
        ((SLOT_ELEMENTS + 7,), torch.float32, "AVG"),                # a split piece, then a whole one
        ((3, SLOT_ELEMENTS // 2 + 5), torch.float32, "PREMUL_SUM"),  # two split pieces and a whole one
        ((70_000,), torch.bfloat16, "SUM"),
        ((70_000,), torch.float16, "MIN"),
        ((70_000,), torch.float64, "PRODUCT"),
        ((70_000,), torch.int32, "BXOR"),
        ((70_000,), torch.uint8, "MAX"),
        ((1000,), torch.bool, "BOR"),
    ]
    for shape, dtype, name in cases:
        inputs = [rank_input(r, shape, dtype, salt=7) for r in range(size)]
        tensor = inputs[rank].to("kiln")
        dist.all_reduce(tensor, op=reduce_op(name))
        check(tensor, reference_reduce(inputs, name, size), f"all_reduce {name} {dtype} {shape}")
    # Non-contiguous tensors: a transpose and a strided slice, reduced in place.
    for name in ("SUM", "MAX"):
        inputs = [rank_input(r, (400, 300), torch.float32, salt=8) for r in range(size)]
        base = inputs[rank].to("kiln")
        dist.all_reduce(base.t(), op=reduce_op(name))
        check(base, reference_reduce(inputs, name, size), f"all_reduce {name} of a transpose")
        base = inputs[rank].to("kiln")
        dist.all_reduce(base[::2], op=reduce_op(name))
        expected = inputs[rank].clone()
        expected[::2] = reference_reduce([tensor[::2] for tensor in inputs], name, size)
        check(base, expected, f"all_reduce {name} of every other row")


def shared_memory_data_movement(rank, size):
    """all_gather_into_tensor, reduce_scatter_tensor and broadcast through
    shared memory, over sizes that take one piece and several."""
    for count, dtype in ((3, torch.int64), (70_000, torch.bfloat16), (SLOT_ELEMENTS + 11, torch.float32)):
        inputs = [rank_input(r, (count,), dtype, salt=9) for r in range(size)]
        output = torch.empty(size * count, dtype=dtype, device="kiln")
        dist.all_gather_into_tensor(output, inputs[rank].to("kiln"))
        check(output, torch.cat(inputs), f"all_gather_into_tensor of {count} {dtype}")

        # reduce_scatter_tensor's pieces are a slot shared by every destination.
        for name in ("SUM", "AVG") if dtype.is_floating_point else ("SUM", "MAX"):
            chunks = [rank_input(r, (size * count,), dtype, salt=10) for r in range(size)]
            output = torch.empty(count, dtype=dtype, device="kiln")
            source = chunks[rank].to("kiln")
            dist.reduce_scatter_tensor(output, source, op=reduce_op(name))
            check(output, reference_reduce(chunks, name, size)[rank * count:(rank + 1) * count],
                  f"reduce_scatter_tensor {name} of {count} {dtype}")
            check(source, chunks[rank], f"reduce_scatter_tensor {name}'s input, after it")

        tensor = inputs[rank].to("kiln")
        dist.broadcast(tensor, src=size - 1)
        check(tensor, inputs[size - 1], f"broadcast of {count} {dtype}")

        # The list forms go through the tensor forms' pieces.
        gathered = [torch.empty(count, dtype=dtype, device="kiln") for _ in range(size)]
        dist.all_gather(gathered, inputs[rank].to("kiln"))
        for source, tensor in enumerate(gathered):
            check(tensor, inputs[source], f"all_gather of {count} {dtype} from rank {source}")
        chunks = [rank_input(r, (size * count,), dtype, salt=12) for r in range(size)]
        for name in ("SUM", "PREMUL_SUM") if dtype.is_floating_point else ("SUM",):
            output = torch.empty(count, dtype=dtype, device="kiln")
            parts = list(chunks[rank].to("kiln").split(count))
            dist.reduce_scatter(output, parts, op=reduce_op(name))
            check(output, reference_reduce(chunks, name, size)[rank * count:(rank + 1) * count],
                  f"reduce_scatter {name} of {count} {dtype}")
            check(torch.cat(parts), chunks[rank], f"reduce_scatter {name}'s inputs, after it")
    # Non-contiguous tensors, gathered into and broadcast in place.
    inputs = [rank_input(r, (300, 200), torch.float32, salt=11) for r in range(size)]
    output = torch.empty(200, 300 * size, device="kiln").t()
    dist.all_gather_into_tensor(output, inputs[rank].to("kiln"))
    check(output, torch.cat(inputs), "all_gather_into_tensor into a transpose")
    tensor = inputs[rank].to("kiln")
    dist.broadcast(tensor.t(), src=0)
    check(tensor, inputs[0], "broadcast of a transpose")


def uneven_all_to_all(rank, size, rows_per_step, dtype):
    """all_to_all_single where rank r sends (r + j + 1) * rows_per_step rows to rank j."""
    def block(sender, receiver):
        rows = (sender + receiver + 1) * rows_per_step
        return (1000 * sender + 100 * receiver + torch.arange(rows * 8).reshape(rows, 8) % 97).to(dtype)
    send = torch.cat([block(rank, j) for j in range(size)]).to("kiln")
    expected = torch.cat([block(j, rank) for j in range(size)])
    output = torch.empty(expected.shape, dtype=dtype, device="kiln")
    dist.all_to_all_single(output, send, output_split_sizes=[(j + rank + 1) * rows_per_step for j in range(size)],
                           input_split_sizes=[(rank + j + 1) * rows_per_step for j in range(size)])
    check(output, expected, f"all_to_all_single of {rows_per_step}-row steps {dtype}")


def shared_memory_all_to_all(rank, size):
    uneven_all_to_all(rank, size, 1000, torch.float32)   # every input fits its slot
    uneven_all_to_all(rank, size, 1000, torch.int64)
    # Some ranks' inputs exceed the 1 MiB slot: every rank takes Gloo for this call.
    uneven_all_to_all(rank, size, 10000, torch.float32)
    uneven_all_to_all(rank, size, 3, torch.bfloat16)     # and shared memory again after it


def shared_memory_collectives(rank, size):
    shared_memory_all_reduce(rank, size)
    shared_memory_data_movement(rank, size)
    shared_memory_all_to_all(rank, size)


@pytest.mark.parametrize("world_size", [2, 4])
def test_collectives_through_shared_memory_match_the_cpu(world_size):
    run_ranks(shared_memory_collectives, world_size)


def async_work_and_sub_groups(rank, size):
    # async_op=True: the work's future holds the device tensors; wait() makes
    # the result visible to work queued after it.
    tensor = torch.full((1000,), float(rank + 1), device="kiln") * 2  # queued work feeds it
    work = dist.all_reduce(tensor, async_op=True)
    work.wait()
    value = work.get_future().value()
    assert value[0].device.type == "kiln", f"the future holds {value[0].device} tensors"
    assert value[0].data_ptr() == tensor.data_ptr(), "the future holds another tensor"
    doubled = tensor * 2
    check(doubled, torch.full((1000,), float(2 * sum(range(1, size + 1)) * 2)), "async all_reduce")

    # Nobody waits on the work or looks at it: the completer thread finishes
    # it on one of its passes (one per poll period), AVG's division included.
    # Only the tensor's memory is watched, so nothing else completes it.
    tensor = torch.full((1000,), float(rank + 1), device="kiln")
    work = dist.all_reduce(tensor, op=dist.ReduceOp.AVG, async_op=True)
    average = torch.full((1000,), (size + 1) / 2)
    deadline = time.monotonic() + 10
    while not torch.equal(tensor.cpu(), average):
        assert time.monotonic() < deadline, "an unwaited work never completed"
        time.sleep(0.001)
    assert work.is_completed(), "the work's division ran but the work is not completed"
    # When is_completed() first says True the division has run (a caller
    # polling it completes a work whose transport is done itself).
    tensor = torch.full((1000,), float(rank + 1), device="kiln")
    work = dist.all_reduce(tensor, op=dist.ReduceOp.AVG, async_op=True)
    deadline = time.monotonic() + 10
    while not work.is_completed():
        assert time.monotonic() < deadline, "a polled work never completed"
        time.sleep(0.0001)
    check(tensor, average, "polled async all_reduce(AVG)")
    # A callback on the future runs on the completer's thread and needs the
    # GIL, while this thread polls is_completed(), which may wait for that
    # same completion: it must not hold the GIL meanwhile (this would hang).
    work = dist.all_reduce(torch.ones(1000, device="kiln"), async_op=True)
    seen = []
    chained = work.get_future().then(lambda future: seen.append(future.value()[0].device.type))
    deadline = time.monotonic() + 10
    while not work.is_completed():
        assert time.monotonic() < deadline, "a work with a callback never completed"
    chained.wait()
    assert seen == ["kiln"], f"the callback saw {seen}"
    # A future waited on instead of the work: getFuture rings the completer.
    tensor = torch.full((10,), float(rank), device="kiln")
    future = dist.all_reduce(tensor, async_op=True).get_future()
    check(future.wait()[0], torch.full((10,), float(sum(range(size)))), "all_reduce's future")

    odd = dist.new_group([r for r in range(size) if r % 2 == 1])
    even = dist.new_group([r for r in range(size) if r % 2 == 0])
    group = odd if rank % 2 else even
    members = [r for r in range(size) if r % 2 == rank % 2]
    tensor = torch.tensor([float(rank)], device="kiln")
    dist.all_reduce(tensor, group=group)
    check(tensor, torch.tensor([float(sum(members))]), "all_reduce in a new_group")
    gathered = [torch.empty(1, device="kiln") for _ in members]
    dist.all_gather(gathered, torch.tensor([float(rank)], device="kiln"), group=group)
    check(torch.cat(gathered), torch.tensor([float(r) for r in members]), "all_gather in a new_group")

    # Works dropped unwaited hold device tensors until they complete; the
    # group is destroyed right after (by run_ranks). Completing them must not
    # need the GIL that the destroying thread holds (this once hung).
    for _ in range(20):
        dist.all_reduce(torch.ones(1 << 18, device="kiln"), async_op=True)


def test_async_work_and_sub_groups():
    run_ranks(async_work_and_sub_groups, 4)


def cpu_tensors(rank, size):
    try:
        dist.all_reduce(torch.ones(2))
    except Exception as error:  # noqa: BLE001
        message = str(error)
    else:
        raise AssertionError("a CPU tensor was accepted by the kiln-only backend")
    # The group refuses it before any backend runs: it has none for the CPU.
    assert "No backend type associated with device type cpu" in message, message
    # The kiln backend itself names the fix, for callers that reach it directly.
    backend = dist.group.WORLD._get_backend(torch.device("kiln"))
    try:
        backend.allreduce([torch.ones(2)])
    except Exception as error:  # noqa: BLE001
        message = str(error)
    else:
        raise AssertionError("the kiln backend accepted a CPU tensor")
    assert "kiln backend: all_reduce expects tensors on a kiln device, got one on cpu" in message
    assert "cpu:gloo,kiln:kiln" in message, message


def test_cpu_tensors_are_refused():
    run_ranks(cpu_tensors, 2)


def mixed_devices(rank, size):
    on_cpu, on_kiln = torch.ones(3) * (rank + 1), torch.ones(3, device="kiln") * (rank + 1)
    dist.all_reduce(on_cpu)
    dist.all_reduce(on_kiln)
    check(on_cpu, torch.full((3,), 3.0), "all_reduce on the CPU (gloo)")
    check(on_kiln, torch.full((3,), 3.0), "all_reduce on kiln")


def test_a_mixed_backend_string_serves_cpu_and_kiln_tensors():
    run_ranks(mixed_devices, 2, backend="cpu:gloo,kiln:kiln")
