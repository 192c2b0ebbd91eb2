"""torch.distributed's `kiln` backend under training and failure: DDP, eager
and compiled, matching single-process training on the same global batch, init with
device_id, and a peer that dies or never joins a collective giving an error
that names the collective and the rank within the group's timeout; under
TORCH_DISTRIBUTED_DEBUG=DETAIL, a collective whose shapes or dtypes differ
across ranks fails on every rank, naming both."""
import os
import time

import pytest
import torch
import torch.distributed as dist

from distributed_ranks import run_ranks

STEPS = 4
GLOBAL_BATCH = 16


def make_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def batches():
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(GLOBAL_BATCH, 8, generator=generator),
             torch.randn(GLOBAL_BATCH, 4, generator=generator)) for _ in range(STEPS)]


def train(model, data, device):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for inputs, targets in data:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs.to(device)), targets.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def ddp_rank(rank, size, compiled=False):
    from torch.nn.parallel import DistributedDataParallel
    device = torch.device("kiln", rank)
    module = make_mlp().to(device)
    # Compiled (DDP around the compiled module), the steps after the first
    # run through kiln's C++ autograd function, whose backward must still
    # reach DDP's gradient hooks. (torch.compile around DDP compiles nothing
    # in torch 2.14.1, with any backend and on the CPU with gloo too: Dynamo
    # breaks the graph at DDP's logger on every frame.)
    inner = torch.compile(module, backend="kiln", dynamic=False) if compiled else module
    model = DistributedDataParallel(inner, device_ids=None)
    share = GLOBAL_BATCH // size
    local = [(inputs[rank * share:(rank + 1) * share], targets[rank * share:(rank + 1) * share])
             for inputs, targets in batches()]
    losses = train(model, local, device)
    if compiled:
        import torch_kiln
        assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1, torch_kiln.compile_stats()
    # Plain lists: tensors sent to the parent would share memory with a
    # process that is about to exit.
    return losses, {name: value.detach().cpu().tolist() for name, value in module.state_dict().items()}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_ddp_matches_single_process_training_on_the_global_batch(compiled):
    results = run_ranks(ddp_rank, 2, compiled, device_ids=True)
    reference = make_mlp()
    reference_losses = train(reference, batches(), "cpu")
    for rank, (losses, state) in results.items():
        assert state.keys() == reference.state_dict().keys()
        for name, value in reference.state_dict().items():
            torch.testing.assert_close(torch.tensor(state[name]), value, rtol=1e-5, atol=1e-5,
                                       msg=lambda m: f"rank {rank}, parameter {name}: {m}")
    # Each rank's loss is its half's; their mean is the global batch's loss.
    mean_losses = [sum(results[rank][0][step] for rank in results) / len(results)
                   for step in range(STEPS)]
    torch.testing.assert_close(mean_losses, reference_losses, rtol=1e-5, atol=1e-6)


def device_id_rank(rank, size):
    assert dist.get_backend() == "kiln"
    tensor = torch.full((2,), float(rank), device=torch.device("kiln", rank))
    dist.all_reduce(tensor)
    assert tensor.device == torch.device("kiln", rank)
    return tensor.cpu().tolist()


def test_init_with_a_device_id_per_rank():
    results = run_ranks(device_id_rank, 2, device_ids=True)
    assert results == {0: [1.0, 1.0], 1: [1.0, 1.0]}


TIMEOUT_SECONDS = 4


def silent_peer_rank(rank, size):
    """Rank 1 joins the group but not the collective; rank 0's all_reduce
    must fail within the timeout, naming itself."""
    if rank == 1:
        time.sleep(TIMEOUT_SECONDS + 4)
        return None
    return failed_all_reduce()


def failed_all_reduce():
    """(error message, seconds) of an all_reduce that must fail."""
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4, device="kiln"))
    except Exception as error:  # noqa: BLE001
        return str(error), time.monotonic() - start
    raise AssertionError("all_reduce returned without its peer")


def test_a_peer_that_never_joins_times_out_with_the_collective_named():
    results = run_ranks(silent_peer_rank, 2, timeout_seconds=TIMEOUT_SECONDS)
    message, seconds = results[0]
    assert "kiln: all_reduce on rank 0 of 2 failed" in message, message
    assert "timeout 4000 ms" in message, message
    assert seconds < TIMEOUT_SECONDS + 3, f"the error came after {seconds:.1f} s"


def dead_peer_rank(rank, size):
    """Rank 1 dies after joining the group; rank 0's broadcast must fail."""
    if rank == 1:
        os._exit(0)
    start = time.monotonic()
    try:
        dist.broadcast(torch.ones(4, device="kiln"), src=1)
    except Exception as error:  # noqa: BLE001
        return str(error), time.monotonic() - start
    raise AssertionError("broadcast returned without its peer")


def test_a_dead_peer_fails_the_collective_with_its_name():
    results = run_ranks(dead_peer_rank, 2, timeout_seconds=TIMEOUT_SECONDS, may_exit=(1,))
    message, seconds = results[0]
    assert "kiln: broadcast on rank 0 of 2 failed" in message, message
    assert seconds < TIMEOUT_SECONDS + 3, f"the error came after {seconds:.1f} s"


def dead_peer_all_reduce_rank(rank, size):
    """Rank 1 dies after joining the group; rank 0's all_reduce, through
    shared memory, must fail naming it, well before the timeout."""
    if rank == 1:
        os._exit(0)
    return failed_all_reduce()


def test_a_dead_peer_fails_a_shared_memory_all_reduce_before_the_timeout():
    results = run_ranks(dead_peer_all_reduce_rank, 2, timeout_seconds=TIMEOUT_SECONDS, may_exit=(1,))
    message, seconds = results[0]
    assert "kiln: all_reduce on rank 0 of 2 failed" in message, message
    assert "rank 1 (process" in message and "exited)" in message, message
    assert seconds < TIMEOUT_SECONDS / 2, f"the error came after {seconds:.1f} s"


def mismatched_rank(rank, size, kind):
    if kind == "shape":
        tensor = torch.ones(4 if rank == 0 else 8, device="kiln")
    elif kind == "dtype":
        tensor = torch.ones(4, device="kiln", dtype=torch.float32 if rank == 0 else torch.int64)
    else:
        tensor = torch.ones(4, device="kiln")
    try:
        if kind == "collective" and rank == 1:
            dist.broadcast(tensor, src=0)
        elif kind == "barrier" and rank == 1:
            dist.barrier()
        else:
            dist.all_reduce(tensor)
    except Exception as error:  # noqa: BLE001
        return str(error)
    raise AssertionError("a mismatched collective returned")


def test_mismatched_collectives_fail_on_every_rank_naming_each_ranks_call():
    """Through shared memory (ranks on one host) the ranks compare their
    collective, dtype, sizes and op at their first meeting, and all fail."""
    for kind, described in (
            ("shape", ("rank 0 called all_reduce (SUM) of 4 elements of Float",
                       "rank 1 called all_reduce (SUM) of 8 elements of Float")),
            ("dtype", ("rank 0 called all_reduce (SUM) of 4 elements of Float",
                       "rank 1 called all_reduce (SUM) of 4 elements of Long")),
            ("collective", ("rank 0 called all_reduce (SUM) of 4 elements of Float",
                            "rank 1 called broadcast from rank 0 of 4 elements of Float")),
            ("barrier", ("rank 0 called all_reduce (SUM) of 4 elements of Float",
                         "rank 1 called barrier"))):
        results = run_ranks(mismatched_rank, 2, kind, timeout_seconds=TIMEOUT_SECONDS)
        for rank, message in results.items():
            collective = {"collective": "broadcast", "barrier": "barrier"}.get(kind, "all_reduce") \
                if rank == 1 else "all_reduce"
            assert f"kiln: {collective} on rank {rank} of 2 failed" in message, message
            assert "the ranks' calls differ" in message, message
            assert all(part in message for part in described), (kind, message)


def test_a_mismatched_collective_over_gloo_names_itself_by_default(capfd):
    """Without TORCH_DISTRIBUTED_DEBUG, Gloo's I/O thread ends the rank that
    receives the larger message (rank 0 here, whose tensor is smaller). Kiln's
    terminate handler names the collective, the rank and the shape first; the
    peer gets a DistBackendError naming the collective when the connection
    closes. (all_reduce goes through Gloo here, as between hosts.)"""
    for kind, described in (("shape", "(Float [4])"), ("dtype", "(Float [4])")):
        results = run_ranks(mismatched_rank, 2, kind, timeout_seconds=TIMEOUT_SECONDS,
                            may_exit=(0,), environment={"KILN_DISTRIBUTED_SHARED_MEMORY": "0"})
        error_output = capfd.readouterr().err
        assert ("kiln: the process is ending inside the collective transport while all_reduce"
                f" on rank 0 of 2 {described} was the last collective it started") in error_output
        assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in error_output
        assert "kiln: all_reduce on rank 1 of 2 failed" in results[1], results[1]


def test_a_mismatched_collective_fails_clearly_under_distributed_debug():
    """PyTorch's collective fingerprint check (ProcessGroupWrapper) wraps the
    kiln backend as it wraps Gloo and NCCL. Without it, Gloo aborts the
    process on a size mismatch (docs/design/distributed.md)."""
    for kind, expected in (("shape", ("TensorShape=[4]", "TensorShape=[8]")),
                           ("dtype", ("TensorDtypes=Float", "TensorDtypes=Long"))):
        results = run_ranks(mismatched_rank, 2, kind, timeout_seconds=TIMEOUT_SECONDS,
                            environment={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
        for rank, message in results.items():
            assert "Detected mismatch between collectives on ranks" in message, message
            assert "OpType=ALLREDUCE" in message, message
            assert all(part in message for part in expected), (kind, message)
