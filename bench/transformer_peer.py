"""tutorials/transformer's model and loop in PyTorch, for its wall time on the same GPU.

The same decoder-only character-level GPT (pre-norm blocks, no biases, the output layer tied to
the token embedding, nanoGPT's initialisation), the same batches (windows drawn at random from the
first 90% of the text), AdamW (betas 0.9 and 0.99, weight decay 0.1 on the matrices), 100 steps of
linear warm-up then a cosine decay to lr / 10, gradients clipped to a global norm of 1, bfloat16
autocast, evaluation of both splits every --eval-interval steps. Eager, or with --compile under
torch.compile. Prints each evaluation, then "wall_seconds S", "train_seconds S" (the steps alone)
and "val_loss L".

    python3 bench/transformer_peer.py --data tinyshakespeare.txt [--compile] [--steps 5000]
"""
import argparse
import math
import time

import torch


class Block(torch.nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.ln_1 = torch.nn.LayerNorm(width, bias=False)
        self.c_attn = torch.nn.Linear(width, 3 * width, bias=False)
        self.attn_proj = torch.nn.Linear(width, width, bias=False)
        self.ln_2 = torch.nn.LayerNorm(width, bias=False)
        self.c_fc = torch.nn.Linear(width, 4 * width, bias=False)
        self.c_proj = torch.nn.Linear(4 * width, width, bias=False)
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (a.view(b, t, self.heads, c // self.heads).transpose(1, 2) for a in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        x = x + self.drop(self.attn_proj(y.transpose(1, 2).reshape(b, t, c)))
        return x + self.drop(self.c_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)))))


class GPT(torch.nn.Module):
    def __init__(self, vocab, context, layers, heads, width, dropout):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, width)
        self.wpe = torch.nn.Embedding(context, width)
        self.drop = torch.nn.Dropout(dropout)
        self.h = torch.nn.ModuleList(Block(width, heads, dropout) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(width, bias=False)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("c_proj.weight", "attn_proj.weight")) else 0.02
                torch.nn.init.normal_(p, 0.0, std)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.drop(self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device)))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-interval", type=int, default=500)
    parser.add_argument("--eval-iters", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1337)
    a = parser.parse_args()
    torch.manual_seed(a.seed)
    dev = torch.device("cuda:0")
    text = open(a.data, encoding="utf-8", errors="surrogateescape").read()
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    split = int(0.9 * len(ids))
    data = {"train": ids[:split].to(dev), "val": ids[split:].to(dev)}

    def batch(which):
        d = data[which]
        starts = torch.randint(len(d) - a.context - 1, (a.batch_size,), device=dev)
        offsets = torch.arange(a.context, device=dev)
        return d[starts[:, None] + offsets], d[starts[:, None] + offsets + 1]

    net = GPT(len(chars), a.context, a.layers, a.heads, a.width, a.dropout).to(dev)
    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), fused=True)
    warmup = min(100, a.steps // 10)

    def lr_at(step):
        if step < warmup:
            return a.lr * step / warmup
        progress = (step - warmup) / max(1, a.steps - warmup)
        return a.lr / 10 + (a.lr - a.lr / 10) * 0.5 * (1 + math.cos(math.pi * progress))
    model = torch.compile(net) if a.compile else net

    def loss_of(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            scores = model(x)
        return torch.nn.functional.cross_entropy(scores.float().view(-1, scores.shape[-1]), y.view(-1))

    @torch.no_grad()
    def evaluate(step):
        model.eval()
        losses = {w: torch.stack([loss_of(*batch(w)) for _ in range(a.eval_iters)]).mean().item()
                  for w in ("train", "val")}
        model.train()
        print(f"step {step} train_loss {losses['train']:.4f} val_loss {losses['val']:.4f}", flush=True)
        return losses["val"]

    start = time.perf_counter()
    train_seconds = 0.0
    val = float("nan")
    for step in range(a.steps):
        if step % a.eval_interval == 0:
            val = evaluate(step)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        x, y = batch("train")
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        torch.cuda.synchronize()
        train_seconds += time.perf_counter() - t0
    val = evaluate(a.steps)
    print("wall_seconds", time.perf_counter() - start)
    print("train_seconds", train_seconds)
    print("val_loss", val)


if __name__ == "__main__":
    main()
