"""Trains a small GPT-2 (random weights) with Hugging Face's Trainer on kiln.

    python examples/hf_trainer.py [--steps 20] [--device kiln|cpu]

transformers' TrainingArguments picks CUDA or a few named devices and
otherwise reads ACCELERATE_TORCH_DEVICE (the variable accelerate reads too),
so this script sets it to "kiln" before the arguments choose their device
(docs/guides/training_libraries.md). Everything else is stock Trainer,
including its default fused AdamW, which runs natively on kiln. It prints
the losses and the ops that fell back to the CPU (none are expected).
"""
import argparse
import os
import tempfile

import torch
import transformers

import torch_kiln


class RepeatingText(torch.utils.data.Dataset):
    """Random token sequences, each repeating a short pattern the model can learn."""

    def __init__(self, examples=64, sequence_length=32, vocabulary=128):
        generator = torch.Generator().manual_seed(0)
        patterns = torch.randint(0, vocabulary, (examples, 4), generator=generator)
        self.ids = patterns.repeat(1, sequence_length // 4)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--device", choices=["kiln", "cpu"], default="kiln")
    options = parser.parse_args()
    # Read when TrainingArguments first resolves its device; set it before.
    os.environ["ACCELERATE_TORCH_DEVICE"] = options.device

    configuration = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=128, n_positions=32,
                                            bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(configuration)
    with tempfile.TemporaryDirectory() as output_dir:
        arguments = transformers.TrainingArguments(
            output_dir=output_dir, per_device_train_batch_size=8, max_steps=options.steps, learning_rate=1e-2,
            logging_steps=5, report_to=[], save_strategy="no", use_cpu=options.device == "cpu")
        trainer = transformers.Trainer(model=model, args=arguments, train_dataset=RepeatingText())
        print(f"training on {arguments.device} with {type(trainer.create_optimizer()).__name__} "
              f"(fused={trainer.optimizer.param_groups[0].get('fused')})")
        trainer.train()
    losses = [round(entry["loss"], 4) for entry in trainer.state.log_history if "loss" in entry]
    print("losses:", losses)
    print("ops that fell back to the CPU:", torch_kiln.get_fallback_ops() or "none")


if __name__ == "__main__":
    main()
