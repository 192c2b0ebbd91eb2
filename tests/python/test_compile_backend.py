"""torch.compile(backend="kiln") beyond the models: graph breaks, ops Kiln
cannot lower (an error naming the op and the source line, or fallback="eager"),
static shapes (dynamic=True refused, a new shape recompiles, bucketing bounds
recompiles), options and modes, the dump folder, and a second process that
compiles nothing."""
import json
import os
import random
import warnings

import pytest
import torch

import torch_kiln
from torch_kiln.bucketing import Bucketed

from conftest import run_python


pytestmark = pytest.mark.usefixtures("fresh_compile_state")


@torch.library.custom_op("kiln_test::cpu_only_square", mutates_args=(), device_types="cpu")
def cpu_only_square(x: torch.Tensor) -> torch.Tensor:
    return x * x


@cpu_only_square.register_fake
def _(x):
    return torch.empty_like(x)


def uses_cpu_only_op(x):
    y = torch.sin(x)
    return cpu_only_square(y) + 1  # the line the error names


def test_backend_is_registered_by_name():
    assert "kiln" in torch._dynamo.list_backends()
    compiled = torch.compile(lambda x: x * 2 + 1, backend="kiln")
    x = torch.randn(8, device="kiln")
    torch.testing.assert_close(compiled(x).cpu(), x.cpu() * 2 + 1)


def test_default_backend_can_be_kiln():
    previous = torch.compiler.get_default_backend() if hasattr(torch.compiler, "get_default_backend") else None
    torch.compiler.set_default_backend("kiln")
    try:
        compiled = torch.compile(lambda x: torch.exp(x) - 1)
        x = torch.randn(16, device="kiln")
        torch.testing.assert_close(compiled(x).cpu(), torch.exp(x.cpu()) - 1)
        assert torch_kiln.compile_stats()["graphs"] == 1
    finally:
        torch.compiler.set_default_backend(previous)


def test_graph_breaks_run_the_pieces_compiled_and_the_rest_eagerly():
    def function(x):
        y = torch.relu(x) * 3
        torch._dynamo.graph_break()
        return (y - 1).sum(dim=0)

    x = torch.randn(6, 5)
    result = torch.compile(function, backend="kiln")(x.to("kiln"))
    torch.testing.assert_close(result.cpu(), function(x))
    assert torch_kiln.compile_stats()["dynamo_graphs"] == 2


def test_a_chain_of_pointwise_ops_fuses_into_one_kernel():
    def chain(x):
        for step in range(8):
            x = torch.sin(x) * 1.5 if step % 2 else x + 0.25 * x
        return x

    x = torch.randn(1000)
    torch.testing.assert_close(torch.compile(chain, backend="kiln")(x.to("kiln")).cpu(), chain(x))
    stats = torch_kiln.compile_stats()
    assert stats["kernels"] == 1 and stats["fused_nodes"] == stats["nodes"], stats


def test_an_op_without_a_kiln_kernel_fails_the_compile_naming_it_and_the_line():
    compiled = torch.compile(uses_cpu_only_op, backend="kiln")
    with pytest.raises(Exception) as raised:
        compiled(torch.randn(4, device="kiln"))
    message = str(raised.value)
    assert "kiln_test.cpu_only_square" in message
    assert "test_compile_backend.py" in message and "the line the error names" in message
    assert '"fallback": "eager"' in message


def test_fallback_eager_runs_the_op_between_compiled_parts():
    torch_kiln.clear_op_tracking()
    compiled = torch.compile(uses_cpu_only_op, backend="kiln", options={"fallback": "eager"})
    x = torch.randn(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compiled(x.to("kiln"))
    torch.testing.assert_close(result.cpu(), uses_cpu_only_op(x))
    assert any("eagerly" in str(warning.message) for warning in caught)
    assert torch_kiln.compile_stats()["eager_nodes"] == 1
    assert "kiln_test::cpu_only_square" in torch_kiln.get_fallback_ops()


def test_unknown_options_are_refused():
    with pytest.raises(Exception, match="unknown torch.compile option"):
        torch.compile(lambda x: x + 1, backend="kiln", options={"unroll": True})(torch.ones(2, device="kiln"))
    with pytest.raises(Exception, match="must be one of"):
        torch.compile(lambda x: x + 1, backend="kiln", options={"fallback": "cpu"})(torch.ones(2, device="kiln"))


def test_other_modes_warn_and_are_ignored():
    with pytest.warns(UserWarning, match="mode='max-autotune' is ignored"):
        result = torch.compile(lambda x: x + 1, backend="kiln", mode="max-autotune")(torch.ones(2, device="kiln"))
    torch.testing.assert_close(result.cpu(), torch.full((2,), 2.0))


def test_dynamic_shapes_are_refused():
    compiled = torch.compile(lambda x: x * 2, backend="kiln", dynamic=True)
    with pytest.raises(Exception, match="static shapes only"):
        compiled(torch.ones(3, device="kiln"))


def test_inputs_the_graph_writes_in_place_are_updated_even_off_the_device():
    """An input on another device runs as a kiln copy; a write to it in the
    graph is copied back (an optimizer's step counters are CPU tensors)."""
    def update(parameters, gradients, counter):
        torch._foreach_mul_(parameters, 0.5)
        torch._foreach_add_(parameters, gradients, alpha=0.1)
        counter.add_(1)

    parameters = [torch.ones(3, device="kiln"), torch.ones(2, device="kiln")]
    gradients = [torch.ones(3, device="kiln"), torch.ones(2, device="kiln")]
    counter = torch.zeros(())
    compiled = torch.compile(update, backend="kiln")
    compiled(parameters, gradients, counter)
    compiled(parameters, gradients, counter)
    assert counter.device.type == "cpu" and counter.item() == 2.0
    for parameter in parameters:
        torch.testing.assert_close(parameter.cpu(), torch.full(parameter.shape, 0.4))


def test_a_compiled_optimizer_step_matches_the_cpu():
    def train(device, compile_step):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True)
        step = torch.compile(optimizer.step, backend="kiln") if compile_step else optimizer.step
        for index in range(3):
            inputs = torch.randn(5, 8, generator=torch.Generator().manual_seed(index)).to(device)
            model(inputs).square().mean().backward()
            step()
            optimizer.zero_grad()
        return [parameter.detach().cpu() for parameter in model.parameters()]

    for expected, actual in zip(train("cpu", False), train("kiln", True)):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dynamic", [False, None])
def test_a_new_shape_compiles_a_new_program(dynamic):
    compiled = torch.compile(lambda x: (x * 2).sum(dim=-1), backend="kiln", dynamic=dynamic)
    for length in (3, 5, 3, 7, 5):
        x = torch.randn(2, length)
        torch.testing.assert_close(compiled(x.to("kiln")).cpu(), (x * 2).sum(dim=-1))
    stats = torch_kiln.compile_stats()
    assert stats["dynamo_graphs"] == 3 and stats["recompiles"] == 2, stats


class CausalMixer(torch.nn.Module):
    """Each position depends on itself and the ones before it only."""

    def __init__(self):
        super().__init__()
        self.projection = torch.nn.Linear(8, 8)

    def forward(self, tokens):
        return torch.cumsum(torch.tanh(self.projection(tokens)), dim=1)


def test_bucketing_bounds_recompiles_to_the_number_of_buckets():
    torch.manual_seed(0)
    model = CausalMixer().to("kiln")
    generator = random.Random(0)
    lengths = [generator.randint(1, 64) for _ in range(20)]
    buckets = torch_kiln.bucketing.suggest_buckets(lengths, count=4)
    bucketed = Bucketed(torch.compile(model, backend="kiln", dynamic=False), buckets, dim=1, output_dim=1)
    with torch._dynamo.config.patch(cache_size_limit=64), torch.no_grad():
        for length in lengths:
            tokens = torch.randn(2, length, 8, device="kiln")
            torch.testing.assert_close(bucketed(tokens).cpu(), model(tokens).cpu(), rtol=1e-5, atol=1e-5)
    assert torch_kiln.compile_stats()["dynamo_graphs"] == len(buckets)
    assert len(set(lengths)) > len(buckets)


SECOND_PROCESS = """
import json, torch, torch_kiln
from torch_kiln.models import MODELS, train_steps
torch.manual_seed(0)
spec = MODELS["mlp"]
model = torch.compile(spec.make_model().to("kiln"), backend="kiln")
losses, _ = train_steps(spec, "kiln", steps=2, model=model)
print(json.dumps({"losses": losses, **torch_kiln.compile_stats()}))
"""


def test_a_second_process_compiles_nothing_and_the_dump_folder_keeps_every_stage(tmp_path):
    cache, dump = tmp_path / "cache", tmp_path / "dump"
    first = run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache, KILN_DUMP_DIR=dump)
    assert first.returncode == 0, first.stderr
    second = run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache)
    assert second.returncode == 0, second.stderr
    first_stats, second_stats = (json.loads(run.stdout.strip().splitlines()[-1]) for run in (first, second))
    assert first_stats["kernels_compiled"] > 0
    assert second_stats["kernels_compiled"] == 0 and second_stats["kernel_cache_hits"] > 0, second_stats
    assert first_stats["cache_hits"] == 0 and second_stats["cache_hits"] == second_stats["graphs"] == 2
    assert second_stats["losses"] == first_stats["losses"]
    graphs = sorted(os.listdir(dump / "graphs"))
    for kind in ("forward", "backward"):
        for stage in ("fx", "ir-input", "ir", "fused"):
            assert any(name.endswith(f"-{kind}.{stage}.txt") for name in graphs), graphs
    assert any(name.endswith(".c") for name in os.listdir(dump)), os.listdir(dump)


def test_a_damaged_program_cache_entry_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    assert run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache).returncode == 0
    entries = list((cache / "programs").rglob("*.program"))
    assert len(entries) == 2
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-10] + b"0123456789")
    damaged = run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache)
    assert damaged.returncode == 0, damaged.stderr
    assert json.loads(damaged.stdout.strip().splitlines()[-1])["cache_hits"] == 0
    repaired = run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache)
    assert json.loads(repaired.stdout.strip().splitlines()[-1])["cache_hits"] == 2


def test_a_program_cache_entry_others_may_write_is_refused(tmp_path):
    # Entries are unpickled: one another user could have written would run
    # their code. The compile fails naming the entry; made private again, the
    # entry is used.
    cache = tmp_path / "cache"
    assert run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache).returncode == 0
    entries = sorted((cache / "programs").rglob("*.program"))
    assert len(entries) == 2
    entries[0].chmod(0o666)
    refused = run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache)
    assert refused.returncode != 0
    assert f"refusing to use the program cache entry {entries[0]}: it is writable by every user" in refused.stderr
    entries[0].chmod(0o600)
    reused = run_python(SECOND_PROCESS, KILN_CACHE_DIR=cache)
    assert reused.returncode == 0, reused.stderr
    assert json.loads(reused.stdout.strip().splitlines()[-1])["cache_hits"] == 2


def test_a_graph_from_other_source_lines_gets_its_own_program_cache_key():
    # The lowered description keeps each node's source line for its errors:
    # a program cached from a copy of the code elsewhere must not be reused
    # with that copy's file names.
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch_kiln.compile.lowering import program_cache

    gm = make_fx(lambda x: (x * 2).relu(), tracing_mode="fake")(torch.randn(4, 4))
    node = next(node for node in gm.graph.nodes if node.op == "call_function")
    node.meta["stack_trace"] = '  File "/home/user/model.py", line 7, in forward\n    return (x * 2).relu()\n'
    key = program_cache.graph_key(gm, "error")
    assert program_cache.graph_key(gm, "error") == key
    node.meta["stack_trace"] = '  File "/tmp/copy/model.py", line 7, in forward\n    return (x * 2).relu()\n'
    assert program_cache.graph_key(gm, "error") != key


def test_a_compiled_function_may_save_and_restore_the_generator_state(fresh_compile_state):
    # torch.testing's freeze_rng_state, around every random OpInfo sample:
    # Dynamo breaks the graph at torch.kiln's state functions and calls them
    # (tracing into them failed the compile).
    from torch.testing._utils import freeze_rng_state

    def seeded_noise(x):
        with freeze_rng_state():
            torch.manual_seed(7)
            return x + torch.rand(x.shape, device=x.device), x.sum().item()

    x = torch.zeros(6, device="kiln")
    torch.manual_seed(3)
    compiled = torch.compile(seeded_noise, backend="kiln", dynamic=False)
    (first, total), (second, _) = compiled(x), compiled(x)
    after = torch.rand(6, device="kiln")  # the state freeze_rng_state restored
    torch.manual_seed(3)
    torch.testing.assert_close(after.cpu(), torch.rand(6, device="kiln").cpu())
    torch.testing.assert_close(second.cpu(), first.cpu())
    assert total == 0


def test_seeding_kiln_does_not_import_dynamo():
    result = run_python("""
        import sys, torch, torch_kiln
        torch.manual_seed(0)
        torch.kiln.set_rng_state(torch.kiln.get_rng_state())
        print("torch._dynamo" in sys.modules)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "False"
