"""PyTorch on the cases of bench/ndarray_bench.cpp (no argument), bench/gluon_bench.cpp ('gluon'),
bench/conv_bench.cpp ('conv'), bench/hybridize_bench.cpp ('hybridize'), bench/amp_bench.cpp ('amp')
bench/optimizer_bench.cpp ('optim SHAPES_FILE'), bench/data_bench.cpp ('data_pipeline FOLDER') or
bench/rnn_bench.cpp ('rnn'), on the same GPU: prints 'case seconds-per-op'."""
import os
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


def optim(shapes_file):
    """One step of each optimizer on tensors of the shapes listed (one per line), float32, with
    PyTorch's fastest CUDA implementation: fused=True where it has one (SGD, Adam, AdamW), else
    foreach=True. PyTorch has no LAMB."""
    dev = torch.device("cuda:0")
    with open(shapes_file) as f:
        shapes = [tuple(int(d) for d in line.split()) for line in f if line.strip()]
    params = [torch.nn.Parameter(torch.rand(s, device=dev) * 2 - 1) for s in shapes]
    for p in params:
        p.grad = torch.rand_like(p) * 2 - 1
    o = torch.optim
    families = {
        "sgd": lambda: o.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4, fused=True),
        "nag": lambda: o.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4, fused=True),
        "adam": lambda: o.Adam(params, lr=1e-3, weight_decay=1e-4, fused=True),
        "adamw": lambda: o.AdamW(params, lr=1e-3, weight_decay=1e-2, fused=True),
        "adamax": lambda: o.Adamax(params, lr=2e-3, foreach=True),
        "nadam": lambda: o.NAdam(params, lr=1e-3, foreach=True),
        "rmsprop": lambda: o.RMSprop(params, lr=1e-3, foreach=True),
        "adagrad": lambda: o.Adagrad(params, lr=1e-2, foreach=True),
        "adadelta": lambda: o.Adadelta(params, foreach=True),
    }
    for name, make in families.items():
        opt = make()
        print("optim_" + name, median_seconds(opt.step, 20))


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


def training_epoch(dev, autocast_dtype=None):
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
            with torch.autocast("cuda", dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None):
                out = loss(net(x), y)
            out.backward()
            opt.step()
    return median_seconds(epoch, 1, 3)


def lenet(batch_norm):
    """D2L 7.6's LeNet, or with batch_norm D2L 8.5's BN-LeNet (concise), for (batch, 1, 28, 28) input."""
    nn = torch.nn
    if batch_norm:
        return nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.BatchNorm2d(6), nn.Sigmoid(), nn.AvgPool2d(2, 2),
            nn.Conv2d(6, 16, 5), nn.BatchNorm2d(16), nn.Sigmoid(), nn.AvgPool2d(2, 2), nn.Flatten(),
            nn.Linear(16 * 4 * 4, 120), nn.BatchNorm1d(120), nn.Sigmoid(),
            nn.Linear(120, 84), nn.BatchNorm1d(84), nn.Sigmoid(),
            nn.Linear(84, 10))
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2, 2),
        nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, 2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),
        nn.Linear(120, 84), nn.Sigmoid(),
        nn.Linear(84, 10))


def lenet_epoch(dev, batch_norm):
    """Seconds per epoch of 60000 random samples already on the GPU, batch 256: forward, softmax
    cross-entropy, backward and the SGD update (Xavier weights as D2L's train_ch6; lr 0.9 / 1.0)."""
    n, batch = 60000, 256
    images = torch.rand(n, 1, 28, 28, device=dev)
    labels = torch.randint(0, 10, (n,), device=dev)
    net = lenet(batch_norm).to(dev)
    for m in net.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=1.0 if batch_norm else 0.9)
    loss = torch.nn.CrossEntropyLoss()

    def epoch():
        for start in range(0, n, batch):
            opt.zero_grad(set_to_none=True)
            loss(net(images[start:start + batch]), labels[start:start + batch]).backward()
            opt.step()
    return median_seconds(epoch, 1, 3)


def conv():
    """Convolution, batch norm and pooling forward+backward on (64, 64, 56, 56), and LeNet epochs."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda:0")
    x = torch.rand(64, 64, 56, 56, device=dev, requires_grad=True)

    def fwd_bwd(layer, out_shape):
        g = torch.rand(out_shape, device=dev)

        def step():
            layer.zero_grad(set_to_none=True)
            x.grad = None
            layer(x).backward(g)
        return step

    conv2d = torch.nn.Conv2d(64, 64, 3, padding=1, bias=True).to(dev)
    print("conv2d_fwd_bwd", median_seconds(fwd_bwd(conv2d, (64, 64, 56, 56)), 20))
    torch.backends.cudnn.allow_tf32 = True
    print("conv2d_tf32_fwd_bwd", median_seconds(fwd_bwd(conv2d, (64, 64, 56, 56)), 20))
    torch.backends.cudnn.allow_tf32 = False
    # channels last, bfloat16 autocast, no bias (float32 data and weight cast each step)
    x_last = torch.rand(64, 64, 56, 56, device=dev).to(memory_format=torch.channels_last).requires_grad_()
    conv_last = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).to(dev).to(memory_format=torch.channels_last)
    g_last = torch.rand(64, 64, 56, 56, device=dev, dtype=torch.bfloat16).to(memory_format=torch.channels_last)

    def step_last():
        conv_last.zero_grad(set_to_none=True)
        x_last.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = conv_last(x_last)
        y.backward(g_last)
    print("conv2d_nhwc_bf16_fwd_bwd", median_seconds(step_last, 20))
    batch_norm = torch.nn.BatchNorm2d(64).to(dev).train()
    print("batchnorm_fwd_bwd", median_seconds(fwd_bwd(batch_norm, (64, 64, 56, 56)), 50))
    max_pool = torch.nn.MaxPool2d(2, 2)
    print("maxpool_fwd_bwd", median_seconds(fwd_bwd(max_pool, (64, 64, 28, 28)), 50))
    del x
    print("lenet_epoch", lenet_epoch(dev, batch_norm=False))
    print("bn_lenet_epoch", lenet_epoch(dev, batch_norm=True))


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


def amp():
    dev = torch.device("cuda:0")
    n = 4096
    linear = torch.nn.Linear(n, n).to(dev)
    x = torch.rand(n, n, device=dev)
    g = torch.rand(n, n, device=dev)

    def fwd_bwd():
        linear.zero_grad(set_to_none=True)
        linear(x).backward(g)
    torch.backends.cuda.matmul.allow_tf32 = True
    print("linear_tf32", median_seconds(fwd_bwd, 10))
    torch.backends.cuda.matmul.allow_tf32 = False
    g16 = g.bfloat16()

    def fwd_bwd_bf16():
        linear.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = linear(x)
        y.backward(g16)
    print("linear_bf16", median_seconds(fwd_bwd_bf16, 10))
    print("epoch_bf16", training_epoch(dev, torch.bfloat16))


def mlp_784_256_256_10(dev):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10)).to(dev)


def warm_up_on_side_stream(fn, iterations=3):
    """Runs fn on a side stream before a capture, as torch.cuda.graph's documentation does."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(iterations):
            fn()
    torch.cuda.current_stream().wait_stream(side)


def captured(fn, copies):
    """fn() captured in a CUDA graph after a warm-up; returns the replay, which first copies each
    (new, static) pair of copies into the graph's static input, as users of a graph do."""
    warm_up_on_side_stream(fn)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = fn()

    def replay():
        for new, static in copies:
            static.copy_(new)
        graph.replay()
        return static_out  # the graph writes its output there
    return replay


def hybridize():
    """The cases of bench/hybridize_bench.cpp, eager ('KEY') and captured in a CUDA graph
    ('KEY_graph'): MLP 784-256-256-10 forward at batch 1 and 64, a training step at batch 256
    (SGD lr 0.1, cross-entropy; the whole step captured, as the 'whole network capture' recipe of
    PyTorch's CUDA graphs documentation), and a chain of 50 adds on 4 values (seconds per add)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    with torch.no_grad():
        for batch in (1, 64):
            mlp = mlp_784_256_256_10(dev)
            x = torch.rand(batch, 784, device=dev)
            static_x = torch.rand(batch, 784, device=dev)
            print(f"mlp{batch}", median_seconds(lambda: mlp(x), 1000))
            print(f"mlp{batch}_graph", median_seconds(captured(lambda: mlp(static_x), [(x, static_x)]), 1000))
            # The input already in the graph's static input (written there by the caller).
            print(f"mlp{batch}_static", median_seconds(lambda: mlp(static_x), 1000))
            print(f"mlp{batch}_static_graph", median_seconds(captured(lambda: mlp(static_x), []), 1000))

    batch = 256
    data = torch.rand(batch, 784, device=dev)
    target = torch.randint(0, 10, (batch,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    for graphed in (False, True):
        net = mlp_784_256_256_10(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        static_data, static_target = data.clone(), target.clone()
        if graphed:
            def warm_up_step():
                opt.zero_grad(set_to_none=True)
                loss_fn(net(static_data), static_target).backward()
                opt.step()
            warm_up_on_side_stream(warm_up_step)
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)  # backward's .grad then come from the graph's pool
            with torch.cuda.graph(graph):
                loss_fn(net(static_data), static_target).backward()
                opt.step()

            def step():
                static_data.copy_(data)
                static_target.copy_(target)
                graph.replay()
        else:
            def step():
                opt.zero_grad(set_to_none=True)
                loss_fn(net(data), target).backward()
                opt.step()
        print("step256_graph" if graphed else "step256", median_seconds(step, 200))

    adds = 50
    x = torch.rand(4, device=dev)
    static_x = torch.rand(4, device=dev)

    def chain(a):
        y = a + a
        for _ in range(adds - 1):
            y = y + a
        return y
    print("add_chain", median_seconds(lambda: chain(x), 1000) / adds)
    print("add_chain_graph", median_seconds(captured(lambda: chain(static_x), [(x, static_x)]), 1000) / adds)


def data_pipeline(folder):
    """torchvision's GPU pipeline over data_bench's JPEG files: the files read and decoded on the GPU
    in batches of 256 (torchvision.io.decode_jpeg), then RandomResizedCrop(224), a flip, normalisation
    and bfloat16 per image (transforms.v2). Prints seconds per batch; nothing when torchvision is
    missing."""
    import glob
    import torchvision
    from torchvision.transforms import v2
    files = sorted(glob.glob(os.path.join(folder, "images", "*", "*.jpg")))
    dev = torch.device("cuda:0")
    augment = v2.Compose([v2.RandomResizedCrop(224, antialias=False), v2.RandomHorizontalFlip(),
                          v2.ToDtype(torch.float32, scale=True),
                          v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), v2.ToDtype(torch.bfloat16)])
    batch = 256

    def one_batch(i):
        names = files[(i * batch) % (len(files) - batch):][:batch]
        data = [torchvision.io.read_file(f) for f in names]
        images = torchvision.io.decode_jpeg(data, device=dev)
        return torch.stack([augment(im) for im in images])

    for i in range(3):
        one_batch(i)
    torch.cuda.synchronize()
    start = time.perf_counter()
    batches = 20
    for i in range(batches):
        one_batch(i + 3)
    torch.cuda.synchronize()
    print("data_pipeline", (time.perf_counter() - start) / batches)

class LanguageModel(torch.nn.Module):
    """rnn_bench's model: Embedding -> nn.LSTM (time-major) -> Linear over every step."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, embed)
        self.lstm = torch.nn.LSTM(embed, hidden, layers)
        self.output = torch.nn.Linear(hidden, vocab)

    def forward(self, x):
        y, _ = self.lstm(self.embedding(x))
        return self.output(y.reshape(-1, y.shape[-1]))


def rnn():
    """rnn_bench's cases: the LSTM language model's training step (SGD, clip_grad_norm_ to 1) in
    float32 with TF32 off, with TF32 on, under bfloat16 autocast; a generation step at batch 1
    (eager); the LSTM and GRU layers' forward and backward; the small model on the CPU."""
    def train(dev, vocab, embed, hidden, layers, seq, batch, autocast=None, reps=10):
        net = LanguageModel(vocab, embed, hidden, layers).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=1.0)
        x = torch.randint(0, vocab, (seq, batch), device=dev)
        y = torch.randint(0, vocab, (seq * batch,), device=dev)
        loss = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=autocast, enabled=autocast is not None):
                out = loss(net(x), y)
            out.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
        return median_seconds(step, reps, trials=3)

    dev = torch.device("cuda:0")
    large = (10000, 512, 1024, 2, 64, 64)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("lstm_lm_f32", train(dev, *large))
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    print("lstm_lm_tf32", train(dev, *large))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("lstm_lm_bf16", train(dev, *large, autocast=torch.bfloat16))
    net = LanguageModel(*large[:4]).to(dev).eval()
    token = torch.tensor([[7]], device=dev)

    def generate():
        with torch.no_grad():
            return torch.topk(net(token), 5)
    print("lstm_generate", median_seconds(generate, 50))
    lstm = torch.nn.LSTM(512, 1024, 2).to(dev)
    x = torch.rand(64, 64, 512, device=dev, requires_grad=True)

    def layers():
        y, _ = lstm(x)
        y.sum().backward()
    print("lstm_layers", median_seconds(layers, 10, trials=3))
    gru = torch.nn.GRU(512, 1024, 2).to(dev)

    def gru_layers():
        y, _ = gru(x)
        y.sum().backward()
    print("gru_layers", median_seconds(gru_layers, 10, trials=3))
    print("lstm_lm_cpu", train(torch.device("cpu"), 1000, 128, 256, 2, 35, 32, reps=3))


def attention():
    """attention_bench's cases: scaled_dot_product_attention forward and backward (bfloat16, the
    flash backend), layer_norm forward and backward (bfloat16), and a BERT-base encoder's training
    step (nn.TransformerEncoder, post-norm, GELU, bfloat16 autocast, AdamW) eager and compiled."""
    dev = torch.device("cuda:0")
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for d in (64, 128):
        for t in (512, 2048, 8192):
            for causal in (False, True):
                q, k, v = (torch.rand(8, 16, t, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                g = torch.rand(8, 16, t, d, device=dev, dtype=torch.bfloat16)

                def step():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    y.backward(g)
                key = f"sdpa_d{d}_t{t}" + ("_causal" if causal else "")
                print(key, median_seconds(step, 2 if t >= 8192 else 5, trials=3))
                del q, k, v, g
    for rows, cols in ((4096, 8192), (32768, 768)):
        x = torch.rand(rows, cols, device=dev, dtype=torch.bfloat16, requires_grad=True)
        w = torch.ones(cols, device=dev, dtype=torch.bfloat16, requires_grad=True)
        b = torch.zeros(cols, device=dev, dtype=torch.bfloat16, requires_grad=True)
        g = torch.rand(rows, cols, device=dev, dtype=torch.bfloat16)

        def layer_norm():
            torch.nn.functional.layer_norm(x, (cols,), w, b).backward(g)
        print(f"layer_norm_{rows}x{cols}", median_seconds(layer_norm, 20))
    for compiled in (False, True):
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.1, activation="gelu")
        encoder = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).to(dev)
        opt = torch.optim.AdamW(encoder.parameters(), lr=1e-4, fused=True)
        model = torch.compile(encoder) if compiled else encoder
        x = torch.rand(128, 32, 768, device=dev)

        def train_step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = model(x).float()
            (y * y).mean().backward()
            opt.step()
        for _ in range(3):
            train_step()  # compiles
        print("bert_encoder_compile" if compiled else "bert_encoder_eager", median_seconds(train_step, 5, trials=3))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "optim":
        optim(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "data_pipeline":
        data_pipeline(sys.argv[2])
    else:
        {"gluon": gluon, "conv": conv, "hybridize": hybridize, "amp": amp, "rnn": rnn,
         "attention": attention}.get(sys.argv[1] if len(sys.argv) == 2 else "", main)()
