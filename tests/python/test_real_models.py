"""Models no one here wrote (torchvision, Hugging Face transformers), with
random weights, train on kiln as on the CPU: the same loss and the same
gradients after a forward and backward, and no op falls back. Their products
and convolutions are large enough to be split over Kiln's pool
(library_threads.h)."""
import copy

import pytest
import torch

import torch_kiln

torchvision = pytest.importorskip("torchvision")
transformers = pytest.importorskip("transformers")


def resnet18():
    model = torchvision.models.resnet18(num_classes=10)
    images, labels = torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))
    return model, lambda m, to: torch.nn.functional.cross_entropy(m(images.to(to)), labels.to(to))


def gpt2():
    transformers.logging.set_verbosity_error()
    config = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=64, vocab_size=1000,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(config)
    tokens = torch.randint(0, config.vocab_size, (2, 64))
    return model, lambda m, to: m(input_ids=tokens.to(to), labels=tokens.to(to)).loss


def llama():
    transformers.logging.set_verbosity_error()
    config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=256, vocab_size=1000,
                                      max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(config)
    tokens = torch.randint(0, config.vocab_size, (2, 64))
    return model, lambda m, to: m(input_ids=tokens.to(to), labels=tokens.to(to)).loss


@pytest.mark.parametrize("build", [resnet18, gpt2, llama], ids=lambda build: build.__name__)
def test_loss_and_gradients_match_the_cpu(build):
    torch.manual_seed(0)
    model, loss_of = build()
    model.train()
    device_model = copy.deepcopy(model).to("kiln")
    expected = loss_of(model, "cpu")
    expected.backward()
    torch_kiln.clear_op_tracking()
    loss = loss_of(device_model, "kiln")
    loss.backward()
    torch.kiln.synchronize()
    assert not torch_kiln.get_fallback_ops()
    torch.testing.assert_close(loss.detach().cpu(), expected.detach(), atol=1e-4, rtol=1e-4)
    for (name, parameter), device_parameter in zip(model.named_parameters(), device_model.parameters()):
        torch.testing.assert_close(device_parameter.grad.cpu(), parameter.grad, atol=2e-4, rtol=2e-3,
                                   msg=lambda message: f"{name}: {message}")
