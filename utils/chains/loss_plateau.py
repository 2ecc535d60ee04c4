"""loss-plateau: the five checks for a loss that stops moving, with the arithmetic of each.

1. The step counter: a job relaunched from one checkpoint trains nothing (not a training problem at all).
2. The learning rate and grad norm: a cosine schedule whose length was set shorter than the run sits at
   zero for the rest; clipping at a norm far below the gradient's shrinks every SGD update by c/|g|, and
   leaves an Adam update as it was (m/sqrt(v) does not change when the gradient is scaled by one factor).
3. Repeated data: tokens seen over the shard's tokens is the epoch count; past a few, the loss flattens.
4. The fp16 loss scaler: every overflow halves the scale and skips the step, so k overflows in a row
   take 2^16 to 2^16 / 2^k, and log2(2^16) of them reach a scale of one.
5. One rank sending zeros: the mean over N ranks misses 1/N of the gradient, so the effective batch is
   (N-1)/N of intended; so is an SGD update, while an Adam update keeps its size.
The tiny training loop that injects each fault and runs the checks is utils.training.plateau (torch, in the
chapter and its tests); this module holds only the arithmetic.
"""
from __future__ import annotations

from utils.chain import Chain
from utils.params import Param, ParameterError, Result, Spec
from utils.training.plateau import CHECKS, OPTIMIZERS, cosine_lr
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

PARAMETERS = (
    Param("init_scale", 65536.0, "fp16 loss scaler's initial scale", check="positive",
          source="torch 2.13 torch.amp.GradScaler: init_scale=65536.0 (2^16), read 2026-12-01"),
    Param("backoff_factor", 0.5, "factor the scale is multiplied by on an overflow", check="fraction",
          source="torch 2.13 torch.amp.GradScaler: backoff_factor=0.5, read 2026-12-01"),
    Param("growth_interval", 2000, "clean steps before the scaler doubles again", check="whole",
          source="torch 2.13 torch.amp.GradScaler: growth_interval=2000, read 2026-12-01"),
    Param("peak_lr", 3e-4, "peak learning rate", check="positive", source="this book's assumption"),
    Param("warmup_steps", 2000, "linear warmup steps", check="whole",
          source="this book's assumption"),
    Param("schedule_steps", 10000, "steps the cosine schedule was configured for", check="whole",
          source="this book's assumption: the misconfiguration under test"),
    Param("run_steps", 100000, "steps the run actually takes", check="whole",
          source="this book's assumption"),
    Param("read_step", 50000, "the step at which the reader looks at the learning rate",
          check="whole", source="this book's assumption"),
    Param("shard_tokens", 2e9, "tokens in the data shard the loader cycles over", unit="token",
          source="this book's assumption"),
    Param("batch_tokens", 4e6, "tokens per optimizer step (global batch)", unit="token",
          source="Llama 3 paper (arXiv:2407.21783) sec. 3.4.1: the first-stage batch of 4M tokens"),
    Param("n_ranks", 8, "data-parallel ranks", check="whole", source="this book's assumption"),
    Param("grad_norm", 1.0, "the gradient's norm before clipping", check="positive",
          source="this book's assumption"),
    Param("clip_norm", 0.01, "max_norm of gradient clipping", check="positive",
          source="this book's assumption: a typo for 1.0"),
    Param("optimizer", "adam", "the optimizer: adam (Adam/AdamW, scale-free) or sgd", check="choice",
          choices=OPTIMIZERS, source="the book's training chapters assume AdamW (16 B/param of state)"),
)

RESULTS = (
    Result("skipped_to_unit_scale", "", "Overflows in a row that take the scale to one", of="k_1"),
    Result("clean_steps_to_recover", "", "Clean steps to grow back from one to the initial scale", of="s_rec"),
    Result("lr_at_read_step", "", "Learning rate at the step read", of="eta"),
    Result("zero_lr_share", "", "Share of the run at zero learning rate", of="z", percent=True),
    Result("epochs", "", "Epochs over the shard", of="E"),
    Result("rank_missing_share", "", "Share of the mean gradient one zero rank removes", of="m", percent=True),
    Result("effective_batch_scale", "", "Effective batch scale with one rank sending zeros", of="b_r"),
    Result("effective_lr_scale", "", "Update scale with one rank sending zeros", of="u_r"),
    Result("clip_update_scale", "", "Update scale under clipping", of="u_c"),
)


def validate(p):
    if p.warmup_steps >= p.schedule_steps:
        raise ParameterError(f"warmup_steps must be below schedule_steps, got {p.warmup_steps}")
    if p.read_step > p.run_steps:
        raise ParameterError(f"read_step must be at most run_steps, got {p.read_step}")
    if p.n_ranks < 2:
        raise ParameterError(f"n_ranks must be at least 2 for one rank to send zeros, got {p.n_ranks}")


def compute(p) -> Chain:
    ch = Chain("Five checks for a loss that stops moving")
    # 4. the loss scaler (computed first: its numbers are the chapter's opening example)
    ch.given("S_0", p.init_scale, "initial loss scale", kind="spec", source=SPEC.source(p, "init_scale"))
    ch.given("b", p.backoff_factor, "backoff on each overflow", kind="spec", source=SPEC.source(p, "backoff_factor"))
    ch.solve("k_1", "S_0*b**k_1 = 1", "", "overflows in a row to reach a scale of one")
    ch.given("g_i", p.growth_interval, "clean steps per doubling", kind="spec",
             source=SPEC.source(p, "growth_interval"))
    ch.step("s_rec", "g_i*k_1", "", "clean steps to grow back to the initial scale")
    # 2. the schedule
    ch.given("eta_p", p.peak_lr, "peak learning rate", kind="assumption", source=SPEC.source(p, "peak_lr"))
    ch.given("T_s", p.schedule_steps, "steps the schedule was set for", kind="assumption",
             source=SPEC.source(p, "schedule_steps"))
    ch.given("T_r", p.run_steps, "steps the run takes", kind="assumption", source=SPEC.source(p, "run_steps"))
    ch.given("eta", cosine_lr(p.read_step, p.peak_lr, p.warmup_steps, p.schedule_steps),
             "learning rate at the step read (warmup, cosine)", kind="derived", source="utils.training.plateau.cosine_lr")
    ch.step("z", "1 - T_s/T_r", "", "share of the run at zero learning rate")
    ch.given("g", p.grad_norm, "grad norm", kind="assumption", source=SPEC.source(p, "grad_norm"))
    ch.given("c", p.clip_norm, "clipping max_norm", kind="assumption", source=SPEC.source(p, "clip_norm"))
    sgd = p.optimizer == "sgd"
    # clip_grad_norm_ scales the gradient by min(1, c/g); SGD's update follows it, Adam's m/sqrt(v) does not
    ch.given("u_c", min(1.0, p.clip_norm / p.grad_norm) if sgd else 1.0,
             "update scale under clipping: min(1, c/g) for SGD, 1 for Adam",
             kind="derived", source="torch.nn.utils.clip_grad_norm_'s rule; Adam's update m/sqrt(v) (arXiv:1412.6980)")
    # 3. repeated data
    ch.given("B", q(p.batch_tokens, "token"), "tokens per step", kind="assumption",
             source=SPEC.source(p, "batch_tokens"))
    ch.given("D_s", q(p.shard_tokens, "token"), "tokens in the shard", kind="assumption",
             source=SPEC.source(p, "shard_tokens"))
    ch.step("E", "T_r*B/D_s", "", "epochs over the shard")
    # 5. one rank sending zeros
    ch.given("N", p.n_ranks, "data-parallel ranks", kind="assumption", source=SPEC.source(p, "n_ranks"))
    ch.step("m", "N**-1", "", "share of the mean gradient one rank's zeros remove")
    ch.step("b_r", "1 - N**-1", "", "effective batch scale")
    if sgd:
        ch.step("u_r", "b_r", "", "update scale (SGD: the update follows the gradient)")
    else:
        ch.given("u_r", 1.0, "update scale (Adam: m/sqrt(v) is unchanged by a uniform gradient scale)",
                 kind="derived", source="Adam's update m/sqrt(v) (arXiv:1412.6980)")
    return ch


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("A loss that stops moving has five different causes and one of them is not a training problem at all. "
         "The checks in order: is the step counter moving, what are the learning rate and the grad norm doing, "
         "is the data repeating, has the loss scaler collapsed, and is one rank sending zeros.")
LISTED = ("step counter", "learning rate and grad norm", "data repeating", "loss scaler", "rank gradients")


def claims() -> list[Claim]:
    assert LISTED == CHECKS
    return [Claim(
        "five-causes", quote=QUOTE, source="spec/001, paragraph on a loss that stops moving",
        claimed=f"{len(LISTED)} causes", derived=f"the book's own {len(CHECKS)} faults, each caught by its check",
        verdict=UNCHECKABLE,
        reason=f"how many causes a flat loss has is a taxonomy, and the source's count is its own list of "
               f"{len(LISTED)} checks: judging it by the book's loop, which injects one fault per check, would only "
               "compare the list with itself; the page shows what each check catches, and that under Adam a tiny "
               "clip is not a cause at all")]


def what_changes(p, ch: Chain) -> dict:
    """On the page's defaults (the prose names them), not the reader's inputs."""
    base = SPEC.derive()
    big = SPEC.derive(shard_tokens=200e9)
    n64 = SPEC.derive(n_ranks=64)
    sgd = SPEC.derive(optimizer="sgd")
    return {"wc-clip-sgd": fmt(sgd["clip_update_scale"]), "wc-rank-sgd": fmt(sgd["effective_lr_scale"]),
            "wc-epochs-base": fmt(base["epochs"]), "wc-epochs-big": fmt(big["epochs"]),
            "wc-shard-big": fmt(q(200e9, "token")), "wc-missing-64": pct(n64["rank_missing_share"]),
            "wc-ranks-64": fmt(q(64, ""))}


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the page's defaults, each question changing one of them."""
    r = SPEC.derive(init_scale=2.0 ** 24)
    step = 6000
    mid = SPEC.derive(read_step=step)
    n4, n4_sgd = SPEC.derive(n_ranks=4), SPEC.derive(n_ranks=4, optimizer="sgd")
    return {"ex1-skips": fmt(r["skipped_to_unit_scale"]), "ex2-lr": fmt(mid["lr_at_read_step"]), "ex2-step": f"{step:,}",
            "ex3-ranks": fmt(q(4, "")), "ex3-batch": fmt(n4["effective_batch_scale"]),
            "ex3-scale": fmt(n4["effective_lr_scale"]), "ex3-scale-sgd": fmt(n4_sgd["effective_lr_scale"]),
            "ex3-missing": pct(n4["rank_missing_share"])}


SPEC = Spec("loss-plateau", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
