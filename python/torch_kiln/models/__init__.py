"""Small reference models Kiln is measured and tested with: an MLP, a CNN and a
decoder-only transformer, each with synthetic data and a device-agnostic
training loop. Tests compare their losses and gradients with the CPU run;
bench/bench_training.py times them; kiln-eval evaluates them."""
from .reference import MODELS, ModelSpec, Training, train_steps

__all__ = ["MODELS", "ModelSpec", "Training", "train_steps"]
