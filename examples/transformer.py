"""A kiln-eval model file: a decoder-only transformer language model
(token and position embeddings, causal self-attention, pre-norm blocks, a
tied head), trained on next-token prediction.

    kiln-eval examples/transformer.py                 (make demo)

Its default shape sweep runs 12 sequence lengths between 5 and 64: without
bucketing each length is a new compiled program; padded to the suggested
buckets, a few programs serve them all. Padding at the end is safe here
because the attention is causal.
"""
import torch
from torch.nn import functional

from torch_kiln.models.reference import DecoderOnlyTransformer

VOCABULARY = 64
CONTEXT = 64


def language_model_loss(logits, targets):
    return functional.cross_entropy(logits.reshape(-1, VOCABULARY), targets.reshape(-1))


def build():
    torch.manual_seed(0)

    def make_batch(sequence_length=16, batch_size=8):
        tokens = torch.randint(0, VOCABULARY, (batch_size, sequence_length + 1))
        return tokens[:, :-1], tokens[:, 1:]

    return {"model": DecoderOnlyTransformer(vocabulary=VOCABULARY, context=CONTEXT),
            "make_batch": make_batch, "loss": language_model_loss,
            "optimizer": lambda parameters: torch.optim.AdamW(parameters, lr=3e-3),
            "sweep": {"sequence_length": [5, 9, 12, 16, 20, 24, 31, 33, 40, 47, 56, 64]}}
