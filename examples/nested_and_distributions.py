"""torch.distributions and strided nested tensors on kiln, with nothing
leaving the device, and what kiln says about sparse layouts.

    python examples/nested_and_distributions.py

1. Sampling: a Dirichlet-multinomial draw (Dirichlet mixing weights, then
   categories drawn with torch.multinomial) and a Gamma-Poisson (negative
   binomial) draw, reproducible under torch.manual_seed.
2. Variable-length sequences as one nested tensor: a layer norm, a linear
   layer, attention scores per sequence and a softmax, trained one step with
   autograd, checked against the same model on the CPU.
3. Sparse tensors: refused on kiln with an error saying what to do instead.
"""
import torch
import torch.distributions as D
import torch.nn.functional as F

import torch_kiln

DEVICE = "kiln"


def sample_on_kiln():
    torch.manual_seed(0)
    concentration = torch.tensor([0.5, 1.0, 2.0, 4.0], device=DEVICE)
    weights = D.Dirichlet(concentration).sample((3,))              # _sample_dirichlet
    draws = torch.multinomial(weights, 1000, replacement=True)     # multinomial
    counts = F.one_hot(draws, 4).sum(1)
    rates = D.Gamma(torch.full((5,), 3.0, device=DEVICE), 0.5).sample()  # _standard_gamma
    overdispersed = torch.poisson(rates)                             # poisson
    torch.manual_seed(0)
    again = torch.multinomial(D.Dirichlet(concentration).sample((3,)), 1000, replacement=True)
    assert torch.equal(again.cpu(), draws.cpu()), "manual_seed replays kiln's samplers"
    print("Dirichlet weights:\n", weights.cpu())
    print("multinomial counts per row (1000 draws):\n", counts.cpu())
    print("Gamma-Poisson draws:", overdispersed.cpu().tolist())


def nested_model_step(device, sequences, parameters):
    weight, bias, norm_weight, norm_bias = [tensor.to(device, copy=True).requires_grad_() for tensor in parameters]
    batch = torch.nested.nested_tensor([sequence.clone() for sequence in sequences], device=device)
    hidden = F.gelu(F.linear(F.layer_norm(batch, (8,), norm_weight, norm_bias), weight, bias))
    scores = torch.softmax(torch.matmul(hidden, hidden.transpose(1, 2)) / 8 ** 0.5, -1)
    mixed = torch.matmul(scores, hidden)
    loss = torch.nested.to_padded_tensor(mixed, 0.0).pow(2).mean()
    loss.backward()
    return loss.detach(), [weight.grad, bias.grad, norm_weight.grad, norm_bias.grad], mixed


def nested_on_kiln():
    torch.manual_seed(1)
    sequences = [torch.randn(length, 8) for length in (3, 7, 5)]
    parameters = [torch.randn(8, 8) * 0.3, torch.zeros(8), torch.ones(8), torch.zeros(8)]
    torch_kiln.clear_op_tracking()
    loss, grads, mixed = nested_model_step(DEVICE, sequences, parameters)
    fallbacks = torch_kiln.get_fallback_ops()
    cpu_loss, cpu_grads, _ = nested_model_step("cpu", sequences, parameters)
    print("nested output component shapes:", [tuple(component.shape) for component in mixed.unbind()])
    print(f"loss on kiln {loss.item():.6f}, on the CPU {cpu_loss.item():.6f}")
    for kiln_grad, cpu_grad in zip(grads, cpu_grads):
        torch.testing.assert_close(kiln_grad.cpu(), cpu_grad, rtol=1e-4, atol=1e-5)
    print("gradients match the CPU; ops that fell back to the CPU:", fallbacks or "none")


def sparse_on_kiln():
    dense = torch.eye(3)
    try:
        dense.to_sparse().to(DEVICE)
    except NotImplementedError as error:
        print("sparse on kiln:", str(error).split("\n")[0])
    print("instead:", dense.to_sparse().to_dense().to(DEVICE).device)


if __name__ == "__main__":
    sample_on_kiln()
    nested_on_kiln()
    sparse_on_kiln()
