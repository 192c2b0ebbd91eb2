"""Hugging Face's Trainer and an accelerate loop on kiln (issue 36, part 4;
docs/guides/training_libraries.md).

accelerate finds kiln by itself through torch.accelerator.current_accelerator().
transformers' TrainingArguments does not (its device list is hard-coded and
ends in CUDA, else ACCELERATE_TORCH_DEVICE, else the CPU), so a Trainer run
sets ACCELERATE_TORCH_DEVICE=kiln, the variable both libraries read. Each run
is compared with the same run on the CPU (same seed, weights and batches), and
no op may fall back to the CPU."""
import pytest
import torch

import torch_kiln

transformers = pytest.importorskip("transformers")
accelerate = pytest.importorskip("accelerate")
from accelerate.state import AcceleratorState  # noqa: E402

VOCABULARY, SEQUENCE, EXAMPLES, BATCH, STEPS = 64, 16, 32, 8, 8


def _tiny_gpt2():
    """A two-layer GPT-2 with random weights and no dropout (dropout draws differ by device)."""
    configuration = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCABULARY,
                                            n_positions=SEQUENCE, bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(configuration)


class _Tokens(torch.utils.data.Dataset):
    def __init__(self):
        generator = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, VOCABULARY, (EXAMPLES, SEQUENCE), generator=generator)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


@pytest.fixture
def fresh_accelerate_state():
    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


def _trainer_run(device, output_dir, monkeypatch):
    if device == "kiln":
        monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "kiln")
    else:
        monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    arguments = transformers.TrainingArguments(
        output_dir=str(output_dir), per_device_train_batch_size=BATCH, max_steps=STEPS, logging_steps=1,
        learning_rate=1e-2, seed=0, report_to=[], save_strategy="no", disable_tqdm=True,
        use_cpu=device == "cpu")
    model = _tiny_gpt2()
    trainer = transformers.Trainer(model=model, args=arguments, train_dataset=_Tokens())
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return losses, trainer


def test_trainer_trains_on_kiln_like_on_the_cpu(tmp_path, monkeypatch, fresh_accelerate_state):
    expected, _ = _trainer_run("cpu", tmp_path / "cpu", monkeypatch)
    AcceleratorState._reset_state(reset_partial_state=True)
    torch_kiln.clear_op_tracking()
    actual, trainer = _trainer_run("kiln", tmp_path / "kiln", monkeypatch)
    assert trainer.args.device.type == "kiln"
    assert next(trainer.model.parameters()).device.type == "kiln"
    # The Trainer's default optimizer (adamw_torch_fused) runs natively.
    assert trainer.optimizer.param_groups[0]["fused"] is True
    assert torch_kiln.get_fallback_ops() == {}
    assert len(actual) == len(expected) == STEPS
    assert actual[-1] < actual[0]
    # The Trainer logs losses rounded to 4 decimals.
    torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected), rtol=0, atol=2e-4)


def test_training_arguments_need_the_variable_and_accelerate_does_not(tmp_path, monkeypatch, fresh_accelerate_state):
    """Why the Trainer needs ACCELERATE_TORCH_DEVICE: without it TrainingArguments picks the CPU
    while accelerate (inside the Trainer) picks kiln, and training stops at the first loss
    ("Calculated loss must be on the original device"). A newer transformers that asks
    torch.accelerator fails this test: then the guide's advice can go."""
    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    assert torch.accelerator.current_accelerator().type == "kiln"
    assert accelerate.PartialState().device.type == "kiln"
    AcceleratorState._reset_state(reset_partial_state=True)
    arguments = transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[])
    assert arguments.device.type == "cpu"
    AcceleratorState._reset_state(reset_partial_state=True)
    monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "kiln")
    assert transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[]).device.type == "kiln"


def _accelerate_run(cpu, mixed_precision="no"):
    accelerator = accelerate.Accelerator(cpu=cpu, mixed_precision=mixed_precision)
    model = _tiny_gpt2()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loader = torch.utils.data.DataLoader(_Tokens(), batch_size=BATCH, shuffle=False)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    block_dtypes = []
    model.transformer.h[0].mlp.c_fc.register_forward_hook(lambda module, inputs, output: block_dtypes.append(output.dtype))
    losses = []
    for _ in range(STEPS // len(loader)):
        for batch in loader:
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
    return losses, accelerator, block_dtypes


def test_accelerate_loop_picks_kiln_and_trains_like_the_cpu(fresh_accelerate_state):
    expected, _, _ = _accelerate_run(cpu=True)
    AcceleratorState._reset_state(reset_partial_state=True)
    torch_kiln.clear_op_tracking()
    actual, accelerator, _ = _accelerate_run(cpu=False)
    assert accelerator.device.type == "kiln"  # found through torch.accelerator, nothing set
    assert torch_kiln.get_fallback_ops() == {}
    assert actual[-1] < actual[0]
    torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mixed_precision, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16)])
def test_accelerate_mixed_precision_autocasts_on_kiln(fresh_accelerate_state, mixed_precision, dtype):
    torch_kiln.clear_op_tracking()
    losses, accelerator, block_dtypes = _accelerate_run(cpu=False, mixed_precision=mixed_precision)
    assert accelerator.native_amp and block_dtypes[0] == dtype
    assert (accelerator.scaler is not None) == (mixed_precision == "fp16")  # fp16 scales the loss
    assert torch_kiln.get_fallback_ops() == {}
    assert losses[-1] < losses[0]


def test_trainer_checkpoint_resumes_on_kiln(tmp_path, monkeypatch, fresh_accelerate_state):
    """A checkpoint (weights, fused AdamW state on kiln, RNG states) saved mid-run and resumed
    by a new Trainer ends where the uninterrupted run ends; evaluation runs on kiln too."""
    monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "kiln")
    torch_kiln.clear_op_tracking()

    def trainer():
        arguments = transformers.TrainingArguments(
            output_dir=str(tmp_path), per_device_train_batch_size=BATCH, max_steps=6, learning_rate=1e-2, seed=0,
            report_to=[], save_strategy="steps", save_steps=3, disable_tqdm=True)
        return transformers.Trainer(model=_tiny_gpt2(), args=arguments, train_dataset=_Tokens(),
                                    eval_dataset=_Tokens())

    uninterrupted = trainer()
    uninterrupted.train()
    evaluation = uninterrupted.evaluate()
    resumed = trainer()
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-3"))
    for (name, want), got in zip(uninterrupted.model.named_parameters(), resumed.model.parameters()):
        assert got.device.type == "kiln"
        torch.testing.assert_close(got.detach().cpu(), want.detach().cpu(), rtol=1e-5, atol=1e-6, msg=name)
    assert evaluation["eval_loss"] < 4.0  # chance is ln(64) = 4.16
    assert torch_kiln.get_fallback_ops() == {}


def test_trainer_fp16_mixed_precision_on_kiln(tmp_path, monkeypatch, fresh_accelerate_state):
    """fp16=True: autocast to float16 on kiln, GradScaler's ops and the fused AdamW step
    with grad_scale and found_inf, all native. (bf16=True is refused by transformers'
    own device list before Kiln is reached: docs/guides/training_libraries.md.)"""
    monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "kiln")
    torch_kiln.clear_op_tracking()
    arguments = transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=BATCH, max_steps=STEPS, logging_steps=1,
        learning_rate=1e-2, seed=0, report_to=[], save_strategy="no", disable_tqdm=True, fp16=True)
    trainer = transformers.Trainer(model=_tiny_gpt2(), args=arguments, train_dataset=_Tokens())
    block_dtypes = []
    trainer.model.transformer.h[0].mlp.c_fc.register_forward_hook(
        lambda module, inputs, output: block_dtypes.append(output.dtype))
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert block_dtypes[0] == torch.float16 and trainer.accelerator.scaler is not None
    assert losses[-1] < losses[0]
    assert torch_kiln.get_fallback_ops() == {}
