"""The three reference models and their training loop."""
import dataclasses
from typing import Callable

import torch
from torch import nn
from torch.nn import functional


class MultilayerPerceptron(nn.Module):
    def __init__(self, features=32, hidden=64, classes=10):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, classes))

    def forward(self, inputs):
        return self.layers(inputs)


class SmallConvolutionalNetwork(nn.Module):
    """conv, batch norm, ReLU, max pool, twice, then a linear classifier."""

    def __init__(self, channels=3, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(channels, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(32 * 4 * 4, classes)

    def forward(self, images):
        return self.classifier(torch.flatten(self.features(images), 1))


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.query_key_value = nn.Linear(width, 3 * width)
        self.projection = nn.Linear(width, width)

    def forward(self, tokens):
        batch, length, width = tokens.shape
        query, key, value = self.query_key_value(tokens).split(width, dim=2)
        shape = (batch, length, self.heads, width // self.heads)
        query, key, value = (part.view(shape).transpose(1, 2) for part in (query, key, value))
        attended = functional.scaled_dot_product_attention(query, key, value, is_causal=True)
        return self.projection(attended.transpose(1, 2).reshape(batch, length, width))


class DecoderBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = CausalSelfAttention(width, heads)
        self.feed_forward_norm = nn.LayerNorm(width)
        self.feed_forward = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                          nn.Linear(4 * width, width))

    def forward(self, tokens):
        tokens = tokens + self.attention(self.attention_norm(tokens))
        return tokens + self.feed_forward(self.feed_forward_norm(tokens))


class DecoderOnlyTransformer(nn.Module):
    """Token and position embeddings, pre-norm decoder blocks, a tied head."""

    def __init__(self, vocabulary=64, width=32, heads=4, layers=2, context=16):
        super().__init__()
        self.token_embedding = nn.Embedding(vocabulary, width)
        self.position_embedding = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(DecoderBlock(width, heads) for _ in range(layers))
        self.final_norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocabulary, bias=False)
        self.head.weight = self.token_embedding.weight
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=0.02)  # as GPT-2: small tied logits

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.token_embedding(tokens) + self.position_embedding(positions)
        for block in self.blocks:
            hidden = block(hidden)
        return self.head(self.final_norm(hidden))


@dataclasses.dataclass
class ModelSpec:
    name: str
    make_model: Callable[[], nn.Module]
    make_batch: Callable[[torch.Generator], tuple]
    make_optimizer: Callable[[list], torch.optim.Optimizer]
    loss: Callable
    clip_gradients: float = 0.0


def _classification_loss(outputs, targets):
    return functional.cross_entropy(outputs, targets)


def _language_model_loss(logits, targets):
    return functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


MODELS = {
    "mlp": ModelSpec(
        "mlp", MultilayerPerceptron,
        lambda generator: (torch.randn(64, 32, generator=generator),
                           torch.randint(0, 10, (64,), generator=generator)),
        lambda parameters: torch.optim.Adam(parameters, lr=1e-3),
        _classification_loss),
    "cnn": ModelSpec(
        "cnn", SmallConvolutionalNetwork,
        lambda generator: (torch.randn(16, 3, 16, 16, generator=generator),
                           torch.randint(0, 10, (16,), generator=generator)),
        lambda parameters: torch.optim.SGD(parameters, lr=0.01, momentum=0.9),
        _classification_loss),
    "transformer": ModelSpec(
        "transformer", DecoderOnlyTransformer,
        lambda generator: (lambda tokens: (tokens[:, :-1], tokens[:, 1:]))(
            torch.randint(0, 64, (8, 17), generator=generator)),
        lambda parameters: torch.optim.AdamW(parameters, lr=3e-3, weight_decay=0.01),
        _language_model_loss, clip_gradients=1.0),
}


class Training:
    """`spec`'s model, optimizer and batch stream on `device`, from a fixed
    seed; step() runs one training step and returns its loss tensor (on the
    device: reading it is the caller's choice, as it waits for the device).
    Batches are made on the CPU and moved, so every device sees the same data."""

    def __init__(self, spec, device, seed=0, model=None):
        torch.manual_seed(seed)
        self.spec = spec
        self.device = device
        self.model = (spec.make_model() if model is None else model).to(device)
        self.optimizer = spec.make_optimizer(list(self.model.parameters()))
        self.generator = torch.Generator().manual_seed(seed + 1)

    def step(self):
        spec = self.spec
        inputs, targets = (tensor.to(self.device) for tensor in spec.make_batch(self.generator))
        self.optimizer.zero_grad(set_to_none=True)
        loss = spec.loss(self.model(inputs), targets)
        loss.backward()
        if spec.clip_gradients:
            nn.utils.clip_grad_norm_(self.model.parameters(), spec.clip_gradients)
        self.optimizer.step()
        return loss.detach()


def train_steps(spec, device, steps, seed=0, model=None):
    """Trains `spec`'s model on `device` for `steps` steps from a fixed seed;
    returns (losses as floats, model)."""
    training = Training(spec, device, seed, model)
    losses = [training.step().item() for _ in range(steps)]
    return losses, training.model
