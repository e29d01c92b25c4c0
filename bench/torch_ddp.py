"""PyTorch DDP peer of multi_gpu_bench: the MLP 784-4096-4096-10 (ReLU), SGD lr 0.1, batch 1024
per GPU, TF32 off, one process per GPU with init_process_group("nccl") and
DistributedDataParallel. Run under torchrun:

    python3 -m torch.distributed.run --nproc-per-node 2 bench/torch_ddp.py

Rank 0 prints one table row per input kind (resident on each GPU; copied from pinned host memory
each step), in samples/s of the whole job: the median of 5 trials of 30 steps after 5 warm-up steps.
"""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

BATCH_PER_GPU = 1024


def samples_per_second(model, opt, x_host, y_host, device, from_host, world):
    x_dev, y_dev = x_host.to(device), y_host.to(device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        if from_host:
            x, y = x_host.to(device, non_blocking=True), y_host.to(device, non_blocking=True)
        else:
            x, y = x_dev, y_dev
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize(device)
    trials = []
    for _ in range(5):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(30):
            step()
        torch.cuda.synchronize(device)
        trials.append((time.perf_counter() - start) / 30)
    seconds = sorted(trials)[2]
    return world * BATCH_PER_GPU / seconds


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", local)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(784, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                              torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(device)
    model = DistributedDataParallel(net, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x_host = torch.rand(BATCH_PER_GPU, 784).pin_memory()
    y_host = torch.randint(0, 10, (BATCH_PER_GPU,)).pin_memory()
    for from_host in (False, True):
        rate = samples_per_second(model, opt, x_host, y_host, device, from_host, world)
        if rank == 0:
            kind = "copied from cpu (pinned)" if from_host else "resident on each GPU"
            print(f"| {kind} | PyTorch {torch.__version__} DDP, {world} processes x 1 GPU | {rate:.0f} |", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
