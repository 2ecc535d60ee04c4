"""The loss that stops moving: a tiny training loop with faults injected, and the five checks in order.

The checks, in the order that costs least to run (spec/001's paragraph on a loss that stops moving):
1. is the step counter moving (a job restarting from one checkpoint, or a loop that never calls step);
2. what are the learning rate and the grad norm doing (a schedule decayed to zero; clipping at a norm so
   small every update is a crumb);
3. is the data repeating (epochs over a shard too small: the loss falls, then flattens);
4. has the loss scaler collapsed (fp16: every overflow halves the scale and skips the step);
5. is one rank sending zeros (its share of the mean gradient, 1/N, is missing).
Each check reads only the per-step log a real run records, and fires at the first step its rule is met.

The loop is a seeded linear regression on the CPU, single-threaded and deterministic, so the table of
which check fires after how many steps is the same on every machine. It trains with Adam, the optimizer the
book's memory chapters assume (AdamW's decoupled weight decay does not touch the gradient, so it is left
out), or with plain SGD: the two differ where it matters. Adam's update m/sqrt(v) does not change when every
gradient is scaled by one factor, so a tiny clipping norm that stalls SGD does not stall Adam. torch is
imported inside run(), so the chain module can read the schedule and the check names without it.

Chapters: loss-plateau.
"""
from __future__ import annotations

import math

OPTIMIZERS = ("adam", "sgd")
ADAM = dict(beta1=0.9, beta2=0.999, eps=1e-8)   # torch.optim.AdamW's defaults
FAULTS = ("none", "stalled_counter", "lr_zero", "tiny_clip", "repeated_data", "scaler_collapse", "zero_rank")
CHECKS = ("step counter", "learning rate and grad norm", "data repeating", "loss scaler", "rank gradients")


def cosine_lr(step: int, peak: float, warmup: int, total: int, floor: float = 0.0) -> float:
    """Linear warmup to `peak`, then cosine decay to `floor` at `total` (0 after it)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * t))


def run(fault: str = "none", steps: int = 200, ranks: int = 4, batch: int = 8, dim: int = 16,
        shard: int = 8192, lr: float = 0.05, seed: int = 0, optimizer: str = "adam") -> list[dict]:
    """Train y = X w* with `ranks` simulated data-parallel ranks; return one log record per step."""
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}, got {fault!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    import torch
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    g = torch.Generator().manual_seed(seed)
    n = 32 if fault == "repeated_data" else shard          # a too-small shard: epochs repeat it
    X = torch.randn(n, dim, generator=g)
    w_true = torch.randn(dim, generator=g)
    y = X @ w_true + 0.1 * torch.randn(n, generator=g)
    Xh = torch.randn(256, dim, generator=g)              # held out: what the loss on new data does
    yh = Xh @ w_true + 0.1 * torch.randn(256, generator=g)
    w = torch.zeros(dim, requires_grad=True)
    m, v = torch.zeros(dim), torch.zeros(dim)                # Adam's moments
    scale, step_counter, log = 2.0 ** 16, 0, []
    total = steps if fault != "lr_zero" else steps // 10   # decayed to zero a tenth of the way in
    for it in range(steps):
        grads, ids = [], []
        for r in range(ranks):
            idx = torch.arange(batch) + ((it * ranks + r) * batch) % n
            idx = idx % n
            ids += idx.tolist()
            loss = ((X[idx] @ w - y[idx]) ** 2).mean()
            (gr,) = torch.autograd.grad(loss, w)
            if fault == "zero_rank" and r == ranks - 1:
                gr = torch.zeros_like(gr)               # the bug: this rank contributes zeros
            grads.append(gr)
        grad = torch.stack(grads).mean(0)
        # clip_grad_norm_'s rule: scale by min(1, max_norm/|g|); the fault is a max_norm far below |g|.
        clip = min(1.0, 1e-3 / float(grad.norm())) if fault == "tiny_clip" else 1.0
        grad = grad * clip
        overflow = fault == "scaler_collapse"            # an fp16 overflow every step: inf in the grads
        rate = cosine_lr(step_counter, lr, 10, total) if fault == "lr_zero" else lr
        if overflow:
            scale /= 2                                    # the scaler halves and skips the step
        elif fault != "stalled_counter":                 # stalled: relaunched from one checkpoint, no step
            step_counter += 1
            with torch.no_grad():
                if optimizer == "sgd":
                    w -= rate * grad
                else:                                     # Adam with bias correction, as torch.optim.AdamW
                    b1, b2 = ADAM["beta1"], ADAM["beta2"]
                    m.mul_(b1).add_((1 - b1) * grad)
                    v.mul_(b2).add_((1 - b2) * grad * grad)
                    m_hat, v_hat = m / (1 - b1 ** step_counter), v / (1 - b2 ** step_counter)
                    w -= rate * m_hat / (v_hat.sqrt() + ADAM["eps"])
        full = float(((X @ w.detach() - y) ** 2).mean())
        heldout = float(((Xh @ w.detach() - yh) ** 2).mean())
        log.append(dict(it=it, step=step_counter, lr=rate, grad_norm=float(grad.norm() / clip), clip=clip,
                        loss=full, heldout=heldout, scale=scale, skipped=overflow, ids=ids,
                        rank_norms=[float(x.norm()) for x in grads]))
    return log


# --- the checks: each returns the iteration it fires at, or None --------------------------------------
def check_counter(log, window: int = 5):
    for i in range(window, len(log)):
        if log[i]["step"] == log[i - window]["step"] and not any(r["skipped"] for r in log[i - window:i + 1]):
            return i
    return None


def check_lr_grad(log, lr_floor: float = 1e-6, clip_floor: float = 0.01):
    """A zero learning rate while gradients flow, or clipping that keeps less than 1% of the gradient."""
    return next((r["it"] for r in log if r["grad_norm"] > 0 and (r["lr"] < lr_floor or r["clip"] < clip_floor)),
                None)


def check_repeats(log):
    seen = set()
    for r in log:
        if seen & set(r["ids"]):
            return r["it"]
        seen |= set(r["ids"])
    return None


def check_scaler(log, halvings: int = 5):
    """Fires after `halvings` skipped steps in a row (a healthy scaler skips one, then grows again)."""
    run_ = 0
    for r in log:
        run_ = run_ + 1 if r["skipped"] else 0
        if run_ >= halvings:
            return r["it"]
    return None


def check_ranks(log):
    return next((r["it"] for r in log if min(r["rank_norms"]) == 0.0 < max(r["rank_norms"])), None)


def diagnose(log) -> tuple[str | None, int | None]:
    """Run the five checks in order; return the first that fires and the iteration it fires at."""
    for name, check in zip(CHECKS, (check_counter, check_lr_grad, check_repeats, check_scaler, check_ranks)):
        at = check(log)
        if at is not None:
            return name, at
    return None, None


def fault_table(steps: int = 200, optimizer: str = "adam") -> list[dict]:
    """Each fault injected in turn: which check catches it, after how many steps, and the final loss."""
    rows = []
    for fault in FAULTS:
        log = run(fault, steps=steps, optimizer=optimizer)
        name, at = diagnose(log)
        rows.append(dict(fault=fault, caught_by=name, steps_to_catch=None if at is None else at + 1,
                         first_loss=log[0]["loss"], final_loss=log[-1]["loss"],
                         final_heldout=log[-1]["heldout"]))
    return rows


def plateaued(row: dict, healthy: dict) -> bool:
    """The loss stopped moving: the training loss kept more than half its start, or the held-out loss ended
    more than twice the healthy run's (repeated data: training loss falls, new data does not)."""
    return row["final_loss"] > 0.5 * row["first_loss"] or row["final_heldout"] > 2 * healthy["final_heldout"]
