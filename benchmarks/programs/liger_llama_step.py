"""Training steps (forward + backward + AdamW) of a small Llama-style decoder block built from Liger-Kernel's
Triton ops: RMSNorm, RoPE, SwiGLU (SiLU-mul) and the fused linear cross entropy; attention is torch's SDPA.

This file is ours; the kernels are Liger-Kernel's (``pip install liger-kernel``, pure Python). It is the "real
program nobody here wrote the kernels of" that ``bench_capture.py`` captures. It times its own steps (CUDA
synchronized around each) and prints one JSON line: ``{"step_ms": [...], "median_ms": ..., "loss": ...}``.
On a CPU it runs tiny sizes under ``TRITON_INTERPRET=1`` (slow; a smoke test of the capture).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from liger_kernel.ops import (LigerFusedLinearCrossEntropyFunction, LigerRMSNormFunction, LigerRopeFunction,
                              LigerSiLUMulFunction)


class Block(torch.nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, vocab: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.o = torch.nn.Linear(hidden, hidden, bias=False)
        self.gate = torch.nn.Linear(hidden, intermediate, bias=False)
        self.up = torch.nn.Linear(hidden, intermediate, bias=False)
        self.down = torch.nn.Linear(intermediate, hidden, bias=False)
        self.norm1 = torch.nn.Parameter(torch.ones(hidden))
        self.norm2 = torch.nn.Parameter(torch.ones(hidden))
        self.norm_f = torch.nn.Parameter(torch.ones(hidden))
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        h = LigerRMSNormFunction.apply(x, self.norm1, 1e-6, 0.0, "llama", False)
        q, k, v = self.qkv(h).view(batch, seq, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = LigerRopeFunction.apply(q, k, cos, sin)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attn.transpose(1, 2).reshape(batch, seq, hidden))
        h = LigerRMSNormFunction.apply(x, self.norm2, 1e-6, 0.0, "llama", False)
        x = x + self.down(LigerSiLUMulFunction.apply(self.gate(h), self.up(h)))
        h = LigerRMSNormFunction.apply(x, self.norm_f, 1e-6, 0.0, "llama", False)
        loss = LigerFusedLinearCrossEntropyFunction.apply(h.reshape(-1, hidden), self.lm_head.weight,
                                                          labels.reshape(-1))
        return loss[0] if isinstance(loss, tuple) else loss


def rope_tables(seq: int, head_dim: int, device: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(seq, device=device).float(), inv)
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos().to(dtype)[None], emb.sin().to(dtype)[None]


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3, help="steps left out of the timing")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--intermediate", type=int, default=5632)
    parser.add_argument("--vocab", type=int, default=32000)
    return parser


def make_step(args: argparse.Namespace) -> Callable[[], torch.Tensor]:
    """One training step (forward, backward, AdamW) of a block built from ``args``; returns the loss. A function
    of its own so that ``bench_capture_ablation.py`` can time steps with and without a capture in one process."""
    cuda = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    torch.manual_seed(0)
    model = Block(args.hidden, args.heads, args.intermediate, args.vocab).to(device, dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cos, sin = rope_tables(args.seq, args.hidden // args.heads, device, dtype)
    x = torch.randn(args.batch, args.seq, args.hidden, device=device, dtype=dtype)
    labels = torch.randint(0, args.vocab, (args.batch, args.seq), device=device)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = model(x, cos, sin, labels)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    args = parser().parse_args()
    cuda = torch.cuda.is_available()
    step = make_step(args)
    times, loss = [], torch.zeros(())
    for i in range(args.warmup + args.steps):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        loss = step()
        if cuda:
            torch.cuda.synchronize()
        if i >= args.warmup:
            times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"step_ms": times, "median_ms": statistics.median(times), "loss": float(loss)}))


if __name__ == "__main__":
    main()
