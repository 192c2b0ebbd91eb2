"""Expert parallelism on kiln devices: a mixture-of-experts layer whose experts
are split across ranks, tokens sent to their experts' ranks and back with
`all_to_all_single` (uneven splits) on the `kiln` process group.

    torchrun --standalone --nproc-per-node 2 examples/expert_parallel.py [--steps 5]
    KILN_NUM_DEVICES=2 torchrun --standalone --nproc-per-node 2 examples/expert_parallel.py

Every rank routes its own tokens (top-2 of EXPERTS, as Mixtral does); the
router and the output projection are replicated (their gradients are summed
over the ranks), each expert lives on one rank. A step:

  1. route: top-2 experts and their weights per token; order the (token,
     expert) pairs by expert; count them per expert (torch.bincount);
  2. exchange the counts, then the tokens, with all_to_all_single, each rank
     sending each other rank as many tokens as it routed to that rank's
     experts (uneven, sometimes zero);
  3. run each local expert on the tokens it received, from every rank;
  4. send the results back the same way (the autograd all_to_all_single sends
     gradients back along the reverse path) and sum each token's two results,
     weighted by the router.

The loss of a rank is the sum over its tokens divided by the tokens of all
ranks, so the ranks' gradients add up to the gradient of one process training
on every rank's tokens: `reference()` is that process, and rank 0 prints
whether the parameters match it. With a kiln device per rank (KILN_NUM_DEVICES),
the ranks form a DeviceMesh over them ("expert" dimension) and take its
process group; otherwise every rank uses its own kiln:0 and the world group.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as distributed_functional
from torch import nn

EXPERTS = 4
WIDTH = 32
HIDDEN = 64
TOKENS_PER_RANK = 24
TOP = 2


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class MixtureOfExperts(nn.Module):
    """Router, experts and an output projection. With `owned` experts (a list
    of indices), only those are built: the rest live on other ranks."""

    def __init__(self, owned=range(EXPERTS)):
        super().__init__()
        torch.manual_seed(0)  # every rank builds the same weights, and keeps its experts'
        self.router = nn.Linear(WIDTH, EXPERTS, bias=False)
        all_experts = [Expert() for _ in range(EXPERTS)]
        self.owned = list(owned)
        self.experts = nn.ModuleList(all_experts[index] for index in self.owned)
        self.output = nn.Linear(WIDTH, WIDTH)

    def route(self, x):
        """(expert of each pair, its weight, its token), pairs ordered by expert."""
        weights, experts = torch.softmax(self.router(x), dim=-1).topk(TOP, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        experts, order = experts.reshape(-1).sort(stable=True)
        tokens = torch.arange(x.shape[0], device=x.device).repeat_interleave(TOP)[order]
        return experts, weights.reshape(-1)[order], tokens

    def combine(self, x, results, weights, tokens):
        out = torch.zeros_like(x).index_add(0, tokens, results * weights.unsqueeze(-1))
        return self.output(out + x)

    def forward(self, x):
        """Single process: every expert here."""
        experts, weights, tokens = self.route(x)
        counts = torch.bincount(experts, minlength=EXPERTS).tolist()
        pieces = torch.split(x[tokens], counts)
        results = torch.cat([self.experts[index](piece) for index, piece in enumerate(pieces)])
        return self.combine(x, results, weights, tokens)


def expert_parallel_forward(model, x, group, splits=None):
    """The layer with its experts split over the ranks of `group`; appends
    (rows sent to each rank, rows received from each) to `splits` if given."""
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    per_rank = EXPERTS // world
    experts, weights, tokens = model.route(x)
    counts = torch.bincount(experts, minlength=EXPERTS)  # pairs this rank sends to each expert
    # What every rank sends to this rank's experts: counts_in[r, e] from rank r to local expert e.
    counts_in = torch.empty_like(counts)
    dist.all_to_all_single(counts_in, counts, group=group)
    counts_in = counts_in.view(world, per_rank).tolist()
    send = counts.view(world, per_rank).sum(1).tolist()
    receive = [sum(row) for row in counts_in]
    if splits is not None:
        splits.append((send, receive))
    received = distributed_functional.all_to_all_single(
        x.new_empty(sum(receive), WIDTH), x[tokens], receive, send, group=group)
    # Received rows: from rank 0 its pairs for local expert 0, 1, ..., then rank 1's. Run each
    # expert on its rows from every rank, and put the results back in the same places.
    chunks = torch.split(received, [count for row in counts_in for count in row])
    outputs = [None] * len(chunks)
    for local, expert in enumerate(model.experts):
        mine = [source * per_rank + local for source in range(world)]
        results = expert(torch.cat([chunks[index] for index in mine]))
        for index, piece in zip(mine, torch.split(results, [chunks[index].shape[0] for index in mine])):
            outputs[index] = piece
    returned = distributed_functional.all_to_all_single(
        x.new_empty(sum(send), WIDTH), torch.cat(outputs), send, receive, group=group)
    return model.combine(x, returned, weights, tokens)


def batches(steps, world):
    """Every rank's tokens and targets for each step, from one seed."""
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(world * TOKENS_PER_RANK, WIDTH, generator=generator),
             torch.randn(world * TOKENS_PER_RANK, WIDTH, generator=generator)) for _ in range(steps)]


def parameters_of(model, owned):
    """name -> CPU tensor, experts named by their global index."""
    result = {}
    for name, value in model.named_parameters():
        if name.startswith("experts."):
            _, local, rest = name.split(".", 2)
            name = f"experts.{owned[int(local)]}.{rest}"
        result[name] = value.detach().cpu()
    return result


def train(rank, world, steps, device, group, splits=None):
    """Expert-parallel training on this rank; (losses, parameters)."""
    per_rank = EXPERTS // world
    owned = list(range(rank * per_rank, (rank + 1) * per_rank))
    model = MixtureOfExperts(owned).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    replicated = [value for name, value in model.named_parameters() if not name.startswith("experts.")]
    losses = []
    for inputs, targets in batches(steps, world):
        mine = slice(rank * TOKENS_PER_RANK, (rank + 1) * TOKENS_PER_RANK)
        x, target = inputs[mine].to(device), targets[mine].to(device)
        optimizer.zero_grad()
        output = expert_parallel_forward(model, x, group, splits)
        loss = (output - target).square().sum() / (world * TOKENS_PER_RANK * WIDTH)
        loss.backward()
        for value in replicated:  # the ranks' shares of the router's and projection's gradients
            dist.all_reduce(value.grad, group=group)
        optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total, group=group)
        losses.append(total.item())
    return losses, parameters_of(model, owned)


def reference(steps, world, device="cpu"):
    """One process, every expert, every rank's tokens: (losses, parameters)."""
    model = MixtureOfExperts().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for inputs, targets in batches(steps, world):
        optimizer.zero_grad()
        output = model(inputs.to(device))
        loss = (output - targets.to(device)).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, parameters_of(model, list(range(EXPERTS)))


def gather_experts(parameters, group):
    """Every rank's parameters, merged (the experts of all ranks)."""
    gathered = [None] * dist.get_world_size(group)
    dist.all_gather_object(gathered, parameters, group=group)
    merged = {}
    for part in gathered:
        merged.update(part)
    return merged


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    arguments = parser.parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("kiln", local_rank % torch.kiln.device_count())
    dist.init_process_group("kiln", device_id=device)
    world = dist.get_world_size()
    assert EXPERTS % world == 0, f"{EXPERTS} experts do not split over {world} ranks"
    group = dist.group.WORLD
    if torch.kiln.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", world)):
        # A DeviceMesh takes a device per local rank, as with CUDA (KILN_NUM_DEVICES).
        from torch.distributed.device_mesh import init_device_mesh
        group = init_device_mesh("kiln", (world,), mesh_dim_names=("expert",)).get_group("expert")
    losses, parameters = train(dist.get_rank(), world, arguments.steps, device, group)
    merged = gather_experts(parameters, group)
    if dist.get_rank() == 0:
        expected_losses, expected = reference(arguments.steps, world)
        for step, (loss, wanted) in enumerate(zip(losses, expected_losses)):
            print(f"step {step} loss {loss:.6f} (one process: {wanted:.6f})")
        close = all(torch.allclose(merged[name], value, rtol=1e-4, atol=1e-5) for name, value in expected.items())
        print(f"parameters match one process training every expert: {close}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
