"""Kiln under concurrency (issue 35, part 6): several Python threads training
at once, each on a stream of its own; a DataLoader whose worker processes feed
pinned batches to non_blocking copies; and a process that forks after using
kiln. Each is compared with the same work on the CPU."""
import subprocess
import sys
import threading

import pytest
import torch

from conftest import run_python

FEATURES, HIDDEN, CLASSES, BATCH = 256, 256, 10, 64  # a batch of features is 64 KiB: queued, not run inline
STEPS = 12
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def small_model(seed):
    """A model with weights from `seed`. It seeds PyTorch's global generator, so
    call it from one thread only: threads build their models before they start."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.GELU(), torch.nn.LayerNorm(HIDDEN),
                                torch.nn.Linear(HIDDEN, CLASSES))
    torch.random.set_rng_state(generator_state)
    return model


def batches(seed, count=STEPS):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(BATCH, FEATURES, generator=generator),
             torch.randint(0, CLASSES, (BATCH,), generator=generator)) for _ in range(count)]


def train(model, data, device):
    """Trains `model` (already on `device`) on `data`; returns the losses
    (read once at the end, so a kiln run never waits for its stream midway)."""
    return train_with(model, model, data, device)


def train_with(runner, model, data, device="kiln", after_first_step=None):
    """train(), calling `runner` (model, or a compiled model) for the forward,
    and `after_first_step` (if given) once the first step is done."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for index, (features, labels) in enumerate(data):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(runner(features.to(device)), labels.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        if index == 0 and after_first_step is not None:
            after_first_step()
    return torch.stack(losses).cpu()


def assert_same_training(kiln_model, kiln_losses, cpu_model, cpu_losses):
    torch.testing.assert_close(kiln_losses, cpu_losses, **TOLERANCE)
    for (name, on_kiln), on_cpu in zip(kiln_model.state_dict().items(), cpu_model.state_dict().values()):
        torch.testing.assert_close(on_kiln.cpu(), on_cpu, **TOLERANCE, msg=lambda text: f"{name}: {text}")


def run_in_threads(work, seeds, timeout):
    """Runs work(seed) in a thread per seed, all at once; returns {seed: what it
    returned}. Fails if a thread raised (naming its seed) or is still running
    after `timeout` seconds."""
    results, errors = {}, []

    def run(seed):
        try:
            results[seed] = work(seed)
        except Exception as error:  # reported below, with the thread's seed
            errors.append((seed, repr(error)))

    workers = [threading.Thread(target=run, args=(seed,)) for seed in seeds]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=timeout)
    assert not any(worker.is_alive() for worker in workers), "a training thread hung"
    assert not errors, errors
    return results


# ------------------------------------------------------------ threads, each on its own stream

@pytest.mark.parametrize("threads", [4])
def test_threads_training_on_their_own_streams_match_the_cpu(threads):
    references = {}
    for seed in range(threads):
        model = small_model(seed)
        references[seed] = (model, train(model, batches(seed), "cpu"))
    models = {seed: small_model(seed) for seed in range(threads)}
    start = threading.Barrier(threads)

    def work(seed):
        stream = torch.kiln.Stream()
        with torch.kiln.stream(stream):
            assert torch.kiln.current_stream() == stream
            model = models[seed].to("kiln")
            data = batches(seed)
            start.wait(timeout=60)  # every thread trains at the same time
            losses = train(model, data, "kiln")
            assert torch.kiln.current_stream() == stream
        return model, losses

    results = run_in_threads(work, range(threads), timeout=180)
    for seed, (model, losses) in results.items():
        assert_same_training(model, losses, *references[seed])
    assert sorted(results) == list(range(threads))


def test_threads_sharing_the_default_stream_match_the_cpu():
    """Without streams of their own, threads queue on the default stream together."""
    references = {seed: small_model(seed) for seed in range(3)}
    expected = {seed: train(model, batches(seed), "cpu") for seed, model in references.items()}
    models = {seed: small_model(seed) for seed in references}

    def work(seed):
        model = models[seed].to("kiln")
        return model, train(model, batches(seed), "kiln")

    results = run_in_threads(work, references, timeout=180)
    for seed, (model, losses) in results.items():
        assert_same_training(model, losses, references[seed], expected[seed])


def test_threads_training_compiled_models_on_their_own_streams_match_the_cpu():
    """torch.compile(backend="kiln") called from several threads at once. PyTorch's
    backend registry is not thread-safe: two threads that are the first to look
    "kiln" up both register its entry point and one fails with "duplicate name:
    kiln" (Dynamo as a whole is not thread-safe, pytorch/pytorch#136833). Looking
    the backend up once first, as here, avoids it (docs/guides/concurrency.md).
    And while Dynamo compiles in one thread, torch.compiler.is_compiling() is
    True in every thread (a module global), so an eager AdamW step running in
    another thread then takes its compiled-path branch and fails in
    _foreach_addcdiv_: each thread takes its first step, the one that compiles,
    alone, and all train together once every model is compiled."""
    torch.compile(torch.nn.Identity(), backend="kiln")
    threads, steps = 2, 4
    references = {}
    for seed in range(threads):
        model = small_model(seed)
        references[seed] = (model, train(model, batches(seed, steps), "cpu"))
    models = {seed: small_model(seed) for seed in range(threads)}

    first_steps = threading.Lock()
    all_compiled = threading.Barrier(threads)

    def work(seed):
        with torch.kiln.stream(torch.kiln.Stream()):
            model = models[seed].to("kiln")
            compiled = torch.compile(model, backend="kiln", dynamic=False)
            first_steps.acquire()
            holding = [True]

            def after_first_step():
                holding[0] = False
                first_steps.release()
                all_compiled.wait(timeout=240)

            try:
                return model, train_with(compiled, model, batches(seed, steps), after_first_step=after_first_step)
            finally:
                if holding[0]:  # the first step failed: let the other threads fail fast
                    first_steps.release()
                    all_compiled.abort()

    results = run_in_threads(work, range(threads), timeout=300)
    for seed, (model, losses) in results.items():
        assert_same_training(model, losses, *references[seed])

# ------------------------------------------------------------ DataLoader: worker processes, pinned batches

class NumberedSamples(torch.utils.data.Dataset):
    """Sample i: features drawn from seed i, and label i % CLASSES, so any
    batch can be checked against what it should hold."""

    def __len__(self):
        return 8 * BATCH

    def __getitem__(self, index):
        return torch.randn(FEATURES, generator=torch.Generator().manual_seed(index)), index % CLASSES, index


def expected_batch(indices):
    dataset = NumberedSamples()
    samples = [dataset[index] for index in indices.tolist()]
    return torch.stack([features for features, _, _ in samples]), torch.tensor([label for _, label, _ in samples])


def test_dataloader_workers_feed_pinned_non_blocking_copies_intact():
    # PyTorch 2.14 pins for the current accelerator (pin_memory_device is deprecated): kiln.
    assert torch.accelerator.current_accelerator() == torch.device("kiln")
    loader = torch.utils.data.DataLoader(NumberedSamples(), batch_size=BATCH, shuffle=True, num_workers=2,
                                         pin_memory=True, generator=torch.Generator().manual_seed(0))
    model = small_model(0).to("kiln")  # kiln is in use before the workers fork
    reference = small_model(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    arrived, losses, reference_losses = [], [], []
    for epoch in range(2):
        for features, labels, indices in loader:
            assert features.is_pinned() and labels.is_pinned()
            on_device = features.to("kiln", non_blocking=True), labels.to("kiln", non_blocking=True)
            del features, labels  # the pinned buffers may be reused by the next batch: the copy must still see them
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(on_device[0]), on_device[1])
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
            arrived.append((indices, on_device))
            expected_features, expected_labels = expected_batch(indices)
            reference_optimizer.zero_grad(set_to_none=True)
            reference_loss = torch.nn.functional.cross_entropy(reference(expected_features), expected_labels)
            reference_loss.backward()
            reference_optimizer.step()
            reference_losses.append(reference_loss.detach())
    assert len(arrived) == 2 * len(loader)
    for epoch in range(2):
        seen = torch.cat([indices for indices, _ in arrived[epoch * len(loader):(epoch + 1) * len(loader)]])
        assert sorted(seen.tolist()) == list(range(len(NumberedSamples()))), "a batch was lost or repeated"
    for indices, (features, labels) in arrived:
        expected_features, expected_labels = expected_batch(indices)
        assert torch.equal(features.cpu(), expected_features)
        assert torch.equal(labels.cpu(), expected_labels)
    assert_same_training(model, torch.stack(losses).cpu(), reference, torch.stack(reference_losses))



def test_a_pinned_batch_dropped_before_its_copy_ran_is_not_overwritten_by_the_next():
    """The DataLoader loop's pattern at its worst: each pinned batch is dropped
    right after its non_blocking copy is queued behind slow work, and the next
    batch is pinned at once, the same size (the block a careless cache would
    hand out again while the copy has not read it yet)."""
    elements = 1 << 18  # 1 MiB
    busy = torch.randn(512, 512, device="kiln")
    copies, queued_behind_work = [], 0
    for index in range(12):
        for _ in range(3):
            busy = (busy @ busy).div_(512)  # work ahead of the copy on the stream
        pinned = torch.full((elements,), float(index)).pin_memory()
        copies.append(pinned.to("kiln", non_blocking=True))
        queued_behind_work += not torch.kiln.current_stream().query()
        del pinned
    assert queued_behind_work > 0, "every copy ran at once: this test checked nothing"
    for index, copied in enumerate(copies):
        assert torch.equal(copied.cpu(), torch.full((elements,), float(index))), f"batch {index} overwritten"

# ------------------------------------------------------------ fork and spawn

def test_parent_keeps_computing_while_a_forked_child_lives_and_after_it_exits():
    result = run_python("""
        import os, torch
        weight = torch.randn(128, 128)
        def product_is_right():
            on_kiln = (weight.to("kiln") @ weight.to("kiln")).relu().sum(0)
            return torch.allclose(on_kiln.cpu(), (weight @ weight).relu().sum(0), rtol=1e-4, atol=1e-4)
        assert product_is_right()                       # kiln's runtime and stream workers are running
        from_child, to_parent = os.pipe()
        from_parent, to_child = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(from_child); os.close(to_child)
            try:
                torch.ones(1, device="kiln")
                verdict = b"used kiln"
            except RuntimeError as error:
                verdict = b"refused" if "forked subprocess" in str(error) else b"other error"
            cpu_ok = torch.equal(torch.ones(4, 4) @ torch.ones(4, 4), torch.full((4, 4), 4.0))
            os.write(to_parent, verdict + (b" cpu ok" if cpu_ok else b" cpu wrong"))
            os.read(from_parent, 1)                     # lives until the parent has computed
            os._exit(0)
        os.close(to_parent); os.close(from_parent)
        child_said = os.read(from_child, 100).decode()
        alive = [product_is_right() for _ in range(5)]  # the child is alive, waiting
        os.write(to_child, b"x")
        _, status = os.waitpid(pid, 0)
        after = [product_is_right() for _ in range(5)]
        model = torch.nn.Linear(16, 4).to("kiln")
        model(torch.randn(8, 16, device="kiln")).sum().backward()
        print(child_said, all(alive), all(after), os.waitstatus_to_exitcode(status),
              model.weight.grad.abs().sum().item() > 0)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["refused", "cpu", "ok", "True", "True", "0", "True"]


SPAWNED = """
import multiprocessing
import torch

def child(queue):
    queue.put((torch.arange(6.0, device="kiln") * 2).sum().item())

if __name__ == "__main__":
    torch.ones(1, device="kiln")                 # the parent has used kiln
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=child, args=(queue,))
    process.start()
    value = queue.get(timeout=120)
    process.join(timeout=120)
    print(value, process.exitcode, (torch.ones(3, device="kiln") + 1).sum().item())
"""


def test_a_spawned_child_can_use_kiln(tmp_path):
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["30.0", "0", "6.0"]
