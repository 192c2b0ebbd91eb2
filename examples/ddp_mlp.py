"""Data-parallel training of an MLP on kiln devices with DDP, one process per
rank, launched by torchrun:

    torchrun --standalone --nproc-per-node 2 examples/ddp_mlp.py [--steps 10]
    KILN_NUM_DEVICES=2 torchrun --standalone --nproc-per-node 2 examples/ddp_mlp.py

Each rank takes its share of every global batch; DDP averages the gradients
over the `kiln` backend of torch.distributed. Rank 0 prints the losses (the
mean over the ranks) and checks the parameters are identical on every rank.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

GLOBAL_BATCH = 64


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    arguments = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    # Each process has its own kiln runtime. With KILN_NUM_DEVICES set to the
    # ranks per node, rank r takes kiln:r as it would take cuda:r; with the
    # default single device, every rank uses its own kiln:0.
    device = torch.device("kiln", local_rank % torch.kiln.device_count())
    dist.init_process_group("kiln", device_id=device)
    rank, world_size = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # the same initial parameters on every rank
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(1)
    share = GLOBAL_BATCH // world_size
    for step in range(arguments.steps):
        inputs = torch.randn(GLOBAL_BATCH, 32, generator=generator)
        targets = torch.randint(0, 10, (GLOBAL_BATCH,), generator=generator)
        mine = slice(rank * share, (rank + 1) * share)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[mine].to(device)),
                                           targets[mine].to(device))
        loss.backward()
        optimizer.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"step {step:3d}  loss {mean_loss.item():.4f}")

    # Every rank must hold the same parameters after DDP's averaged steps.
    flat = torch.cat([parameter.detach().reshape(-1) for parameter in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        same = all(torch.equal(gathered[0].cpu(), other.cpu()) for other in gathered[1:])
        print(f"parameters identical on all {world_size} ranks: {same}")
        if not same:
            raise SystemExit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
