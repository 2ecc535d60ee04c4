"""A small GPT-style model and an exact FLOP count of one training step, on the CPU.

The six-nd chapter's measurement: PyTorch's FlopCounterMode counts every matrix product a forward and
backward pass dispatches, so 6N per token plus the attention term can be checked exactly, without a
GPU. Attention is written out (explicit QK^T and AV over the full square, masked), so the counter sees
both products; the output head is untied. Imports torch: chapters and tests only, never a chain.

Chapters: six-nd.
"""
from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode


class Block(torch.nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, d = x.shape
        q_, k_, v_ = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, d // self.heads).transpose(1, 3).unbind(2)
        scores = (q_ @ k_.transpose(-1, -2)) / (d // self.heads) ** 0.5
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = scores.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v_).transpose(1, 2).reshape(B, T, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=512, d=128, layers=2, heads=4, context=64):
        super().__init__()
        self.embed, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(context, d)
        self.blocks = torch.nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.embed(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.blocks(x))


def count_training_step(vocab=512, d=128, layers=2, heads=4, context=64, batch=4, seed=0) -> dict:
    """One forward + backward step on seeded random tokens under FlopCounterMode.

    Returns the counted FLOPs, the parameters held in weight matrices (what 6N counts), all parameters,
    the tokens trained and the architecture."""
    torch.manual_seed(seed)
    model = TinyGPT(vocab, d, layers, heads, context)
    tokens = torch.randint(0, vocab, (batch, context + 1))
    with FlopCounterMode(display=False) as counter:
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
    return dict(flops=counter.get_total_flops(),
                params_matmul=sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)),
                params_total=sum(p.numel() for p in model.parameters()),
                tokens=batch * context, context=context, layers=layers, d_attn=d)
