"""Common layers beyond the MLP, forward and backward, against the CPU."""
import pytest
import torch


def compare_with_cpu(make_module, make_input, rtol=1e-5, atol=1e-6):
    torch.manual_seed(0)
    module = make_module()
    inputs = make_input()
    device_module = make_module().to("kiln")
    device_module.load_state_dict(module.state_dict())
    expected = module(inputs)
    result = device_module(inputs.to("kiln"))
    if isinstance(expected, tuple):
        expected, result = expected[0], result[0]
    torch.testing.assert_close(result.cpu(), expected, rtol=rtol, atol=atol)
    expected.square().sum().backward()
    result.square().sum().backward()
    for (name, on_device), on_cpu in zip(device_module.named_parameters(), module.parameters()):
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, rtol=rtol, atol=atol,
                                   msg=lambda message: f"{name}: {message}")


@pytest.mark.parametrize("bias", [True, False])
def test_lstm(bias):
    compare_with_cpu(lambda: torch.nn.LSTM(4, 8, num_layers=2, bias=bias, batch_first=True),
                     lambda: torch.randn(3, 5, 4))


@pytest.mark.parametrize("bias", [True, False])
def test_gru(bias):
    compare_with_cpu(lambda: torch.nn.GRU(4, 8, bias=bias), lambda: torch.randn(5, 3, 4))


def test_lstm_cell_with_only_the_cell_state_used():
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(3, 4)
    device_cell = torch.nn.LSTMCell(3, 4).to("kiln")
    device_cell.load_state_dict(cell.state_dict())
    x = torch.randn(2, 3)
    _, cy = cell(x)
    _, device_cy = device_cell(x.to("kiln"))
    cy.sum().backward()
    device_cy.sum().backward()
    torch.testing.assert_close(device_cell.weight_ih.grad.cpu(), cell.weight_ih.grad)


def test_transformer_encoder_layer():
    compare_with_cpu(
        lambda: torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True),
        lambda: torch.randn(2, 5, 16), rtol=1e-4, atol=1e-5)


def test_small_cnn():
    compare_with_cpu(
        lambda: torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                    torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                    torch.nn.Linear(36, 5)),
        lambda: torch.randn(2, 3, 8, 8), rtol=1e-4, atol=1e-5)


def test_embedding_and_layer_norm():
    compare_with_cpu(
        lambda: torch.nn.Sequential(torch.nn.Embedding(10, 6), torch.nn.LayerNorm(6)),
        lambda: torch.tensor([[1, 2, 3], [4, 5, 9]]))
