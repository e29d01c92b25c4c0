"""PyTorch on the cases of bench/ndarray_bench.cu (no argument) or bench/gluon_bench.cu ('gluon'),
on the same GPU: prints 'case seconds-per-op'."""
import statistics
import sys
import time

import torch


def median_seconds(fn, reps, trials=5):
    times = []
    for t in range(trials + 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        if t > 0:
            times.append((time.perf_counter() - start) / reps)
    return statistics.median(times)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False  # exact float32, like cublasSgemm's default
    dev = torch.device("cuda:0")
    n = 1 << 28
    a, b = torch.rand(n, device=dev), torch.rand(n, device=dev)
    print("add", median_seconds(lambda: a + b, 10))
    del a, b
    m = 8192
    a, b = torch.rand(m, m, device=dev), torch.rand(m, m, device=dev)
    print("dot", median_seconds(lambda: a @ b, 3))
    del a, b
    print("uniform", median_seconds(lambda: torch.rand(n, device=dev), 10))
    c = 64 << 20
    host = torch.rand(c).pin_memory()
    gpu = torch.rand(c, device=dev)
    print("h2d", median_seconds(lambda: host.to(dev), 5))
    pinned_out = torch.empty(c).pin_memory()
    print("d2h", median_seconds(lambda: pinned_out.copy_(gpu), 5))
    if torch.cuda.device_count() >= 2:
        print("p2p", median_seconds(lambda: gpu.to("cuda:1"), 10))
    x, y = torch.ones(1000, device=dev), torch.zeros(1000, device=dev)

    def chain():
        nonlocal y
        for _ in range(10000):
            y = y + x
    print("dispatch", median_seconds(chain, 1) / 10000)


def load_fashion_mnist():
    import gzip
    import os
    root = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    with gzip.open(os.path.join(root, "train-images-idx3-ubyte.gz")) as f:
        images = torch.frombuffer(bytearray(f.read()[16:]), dtype=torch.uint8).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(root, "train-labels-idx1-ubyte.gz")) as f:
        labels = torch.frombuffer(bytearray(f.read()[8:]), dtype=torch.uint8).long()
    return images, labels


def training_epoch(dev):
    images, labels = load_fashion_mnist()
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 10)).to(dev)
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.01)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    loss = torch.nn.CrossEntropyLoss()

    def epoch():
        order = torch.randperm(images.shape[0])
        for start in range(0, images.shape[0], 256):
            idx = order[start:start + 256]
            x = (images[idx].float() / 255).pin_memory().to(dev, non_blocking=True)
            y = labels[idx].to(dev, non_blocking=True)
            opt.zero_grad()
            loss(net(x), y).backward()
            opt.step()
    return median_seconds(epoch, 1, 3)


def gluon():
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    n = 4096
    linear = torch.nn.Linear(n, n).to(dev)
    x = torch.rand(n, n, device=dev)
    g = torch.rand(n, n, device=dev)

    def fwd_bwd():
        linear.zero_grad(set_to_none=True)
        linear(x).backward(g)
    print("linear_fwd_bwd", median_seconds(fwd_bwd, 5))
    print("epoch", training_epoch(dev))
    with torch.no_grad():
        print("linear", median_seconds(lambda: linear(x), 5))
        for batch in (1, 64):
            mlp = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                      torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
            xb = torch.rand(batch, 784, device=dev)
            print(f"mlp{batch}", median_seconds(lambda: mlp(xb), 1000))


if __name__ == "__main__":
    gluon() if sys.argv[1:] == ["gluon"] else main()
