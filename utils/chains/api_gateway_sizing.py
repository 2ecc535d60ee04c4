"""api-gateway-sizing: the seven boxes between an API call and a GPU, each with one job and one way to
fail, and the sizing chain from 2,000 concurrent users to a replica count.

The boxes are data (BOXES), and what each carries at the page's traffic is computed from the chain. The
sizing is the replica-sizing chain (utils.chains.replica_sizing.sizing_chain, which calls utils.serving's
budget, add_budget_steps and add_decode_inputs), run at 2,000 users: tokens per user, the prefill and
decode demand on a replica, the KV budget, whichever binds, then replicas with headroom. Two checks run
the book's building blocks: the admission box (utils.serving.admission) admits exactly the caches the KV budget
holds, and utils.serving.batching's decode step at that batch is the chain's own.
"""
from __future__ import annotations

import dataclasses
import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains import multimodal_prefill as mm
from utils.chains import replica_sizing as rs
from utils.params import Result, Spec
from utils.serving import admission
from utils.serving import users_text as ucount
from utils.units import duration, fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

USERS_SOURCE = "the claim (2,000 concurrent users)"
PARAMETERS = tuple(dataclasses.replace(p, default=2000, source=USERS_SOURCE) if p.name == "users" else p
                   for p in rs.PARAMETERS)

RESULTS = (
    Result("request_rate", "request/s", "Requests per second at the gateway", of="R_q"),
    Result("token_rate", "token/s", "Tokens per second streamed back", of="R_t"),
    Result("users_per_replica_memory", "sequence", "Users per replica: memory (KV budget)", of="U_m"),
    Result("users_per_replica_throughput", "sequence", "Users per replica: throughput", of="U_t"),
    Result("users_per_replica", "sequence", "Users per replica (whichever binds)", of="U"),
    Result("replicas", "", "Replicas, with headroom", of="R"),
    Result("gpus", "GPU", "GPUs", of="G"),
)

# The seven boxes: (box, its one job, its one way to fail, what guards it). What each carries at the
# page's traffic is computed by `box_loads`, in the same order.
BOXES = (
    ('DNS and anycast',
     'send the client to a healthy region',
     'a stale record keeps sending clients to a dead region',
     'short TTLs and health-checked records'),
    ('load balancer and TLS',
     'end TLS and hold every open stream',
     'runs out of connections or file handles when streams are long',
     'connection limits sized to concurrent streams, not requests per second'),
    ('API gateway',
     'authenticate, meter and rate-limit by tokens per tenant',
     "a limit counted in requests lets one tenant's long prompts starve the rest",
     'two token buckets per tenant per model, counted in tokens'),
    ('admission queue',
     'admit a request only when its KV cache fits',
     'an unbounded queue turns overload into timeouts for everyone',
     'a bounded queue and a wait limit that sheds with a retry-after'),
    ('router',
     "pick the replica: least loaded, or the one holding the prompt's prefix",
     'routing blind to load or cache piles requests onto one replica',
     'load- and prefix-aware routing with a fallback'),
    ('inference server',
     'schedule the batch: prefill chunks and decode steps',
     'prefill bursts stall every running decode (TPOT spikes)',
     'chunked prefill and a token budget per step'),
    ('GPU engine',
     "run the step: read the weights and each user's cache",
     'the KV cache runs out and sequences are preempted',
     'the KV budget, and admission that reserves against it'),
)


def sizing(p, *, source="parameters cell") -> Chain:
    """replica-sizing's chain for this page's users, then the gateway's loads; source as rs.sizing_chain takes it."""
    ch = rs.sizing_chain(p.model, p.gpu, p.gpus_per_replica, p.gpus_per_node, p.users, p.context_tokens,
                         p.tokens_per_second_per_user, p.prompt_tokens_per_request, p.output_tokens_per_request,
                         p.weight_bytes_per_param, p.kv_bytes_per_element, p.gpu_memory_utilization,
                         p.memory_reading, p.headroom, p.compute_fraction, p.bandwidth_fraction, source=source)
    # What the boxes in front of the GPUs carry: requests, streams and tokens, all from the same users.
    ch.step("R_q", "N_u*lam", "request/s", "requests per second at the gateway")
    ch.step("R_t", "N_u*s", "token/s", "tokens per second streamed back")
    ch.step("R_p", "N_u*x_p", "token/s", "prompt tokens per second to prefill")
    return ch


def validate(p):
    rs.validate(p)


def compute(p) -> Chain:
    return sizing(p, source=lambda name: SPEC.source(p, name))


def box_loads(ch) -> list[str]:
    """What each box carries at the chain's traffic, as text for the table (same order as BOXES)."""
    U, R = ucount(ch["U"]), fmt(ch["R"])
    return [f"{ucount(ch['N_u'])} clients resolved, then cached",
            f"{ucount(ch['N_u'])} open streams",
            f"{fmt(ch['R_q'])}, {fmt(ch['R_p'])} of prompt",
            f"up to {ucount(ch['U_m'])} caches per replica",
            f"{fmt(ch['R_q'])} over {R} replicas",
            f"{U} users per replica, a step every {fmt(ch['t'])}",
            f"{fmt(ch['M_w'])} of weights and {fmt(ch['M_kv'])} of KV per replica"]


def boxes_table(ch) -> str:
    rows = "\n".join(f"| {b} | {job} | {fail} | {load} |" for (b, job, fail, _), load in zip(BOXES, box_loads(ch)))
    return "| box | its one job | its one way to fail | what it carries here |\n|---|---|---|---|\n" + rows


# --- the claim ---------------------------------------------------------------------------------------------
QUOTE = ("Seven boxes between an API call and a GPU, each with one job and one way to fail. The walkthrough a "
         "screen expects in the first ten minutes, with the sizing chain from 2,000 concurrent users to a "
         "replica count so the drawing has numbers on it.")
CLAIM_USERS = 2000


def claim_inputs():
    return SPEC.inputs({**SPEC.defaults(), "users": CLAIM_USERS})


def admitted_by_the_box(ch) -> int:
    """Run the admission box: offer one more full-context request than the budget could hold, never
    releasing; count the admitted. Tokens per request: the KV budget's tokens over the caches that fit."""
    T = int(as_float(ch["T"], "token/sequence"))
    budget_tokens = math.floor(as_float(ch["M_kv"] / (ch["rho"] * ch["kappa"]), "token"))
    adm = admission.Admission(budget_tokens, max_queue=0, max_wait=0.0, clock=lambda: 0.0)
    n = int(as_float(ch["U_m"], "sequence"))
    return sum(adm.offer(f"r{i}", T) == "admitted" for i in range(n + 2))


def step_agrees(ch) -> float:
    """utils.serving.batching's decode step at the binding batch, over the chain's own step time."""
    from utils.serving import batching  # a numpy simulator: the page's check, not the chain (closed form)
    # replica-sizing keeps f per token (tau tokens per user per step); Engine wants FLOPs per sequence
    e = batching.Engine(wbytes=as_float(ch["N_r"] * ch["b_w"], "byte"), kvs=as_float(ch["kv_u"], "byte/sequence"),
                        W=as_float(ch["g"] * ch["W_e"], "byte/s"), P=as_float(ch["g"] * ch["P_e"], "FLOP/s"),
                        f=as_float(ch["f"] * ch["tau"], "FLOP/sequence"), kNa=as_float(ch["k"] * ch["N_a"], "FLOP/token"),
                        att=as_float(ch["I_kv"] * ch["kappa"], "FLOP/token"), akv=as_float(ch["rho"] * ch["kappa"], "byte/token"))
    return float(batching.step_time(e, as_float(ch["U"], "sequence"))) / as_float(ch["t"], "s")


@memoised
def checks() -> dict:
    """The claim's sizing and the building blocks run on it: the admission box and the decode step."""
    p = claim_inputs()
    ch = sizing(p, source="the claim's reading")
    n_boxes = len(BOXES)
    distinct = len({b[1] for b in BOXES}) == n_boxes and len({b[2] for b in BOXES}) == n_boxes
    U, R = int(ch["U"].m), int(ch["R"].m)
    covers = R * U >= CLAIM_USERS * (1 + p.headroom) > (R - 1) * U
    admitted = admitted_by_the_box(ch)
    ratio = step_agrees(ch)
    agree = abs(ratio - 1) < 1e-9
    ok = n_boxes == 7 and distinct and covers and admitted == int(ch["U_m"].m) and agree
    return dict(p=p, chain=ch, n_boxes=n_boxes, distinct=distinct, covers=covers, admitted=admitted, agree=agree,
                ok=ok, step_ratio=ratio)


def claims() -> list[Claim]:
    k = checks()
    p, ch = k["p"], k["chain"]
    return [Claim(
        "seven-boxes", quote=QUOTE, source="spec/000 and spec/001, paragraph on the API walkthrough",
        claimed=f"seven boxes, each one job and one failure; {fmt(CLAIM_USERS)} concurrent users -> a replica count",
        derived=f"{k['n_boxes']} boxes; {fmt(ch['R'])} replicas of {p.gpus_per_replica} x {p.gpu.name} "
                f"({rs.binds(ch)} binds at {ucount(ch['U'])} users per replica)",
        # The seven boxes are this book's own inventory, and the source names no model, context, rate or
        # GPU, so the replica count is the book's figure, not a check of the source's: cannot be checked.
        verdict=UNCHECKABLE,
        reason=f"The boxes are this book's own list and the source gives no model, context, rate or GPU, so "
               f"nothing of the source's can be checked; the book's figure, at its own {fmt(q(p.context_tokens, 'token'))} "
               f"of context, {fmt(q(p.tokens_per_second_per_user, 'token/s'))} per user and the achieved shares "
               f"{pct(p.bandwidth_fraction)} of HBM and {pct(p.compute_fraction)} of the dense peak, is "
               f"{fmt(ch['R'])} replicas ({rs.binds(ch)} binds at {ucount(ch['U'])} users each).")]


# --- figure, what changes, exercises -----------------------------------------------------------------------
def replicas_curve(p, users) -> dict:
    """Replicas against concurrent users at the page's inputs (the per-replica users do not change)."""
    ch = sizing(p)
    U = as_float(ch["U"], "sequence")
    return dict(users=list(users), replicas=[math.ceil(u * (1 + p.headroom) / U) for u in users], U=U)


# The prefill MFU multimodal-prefill assumes, a lower achieved share than the catalog's attention kernel's.
MM_MFU = next(x.default for x in mm.PARAMETERS if x.name == "mfu")


def what_changes(p, ch) -> dict:
    base = ch
    rows = {"context": p.replace(context_tokens=2 * p.context_tokens),
            "rate": p.replace(tokens_per_second_per_user=2 * p.tokens_per_second_per_user),
            "fp8": p.replace(kv_bytes_per_element=1.0, weight_bytes_per_param=1.0),
            "h200": p.replace(gpu=catalog.accelerator("h200")),
            "mfu": p.replace(compute_fraction=MM_MFU)}
    out = {"wc-base-r": fmt(base["R"])}
    for name, pp in rows.items():
        c = sizing(pp)
        out[f"wc-{name}-r"], out[f"wc-{name}-binds"] = fmt(c["R"]), rs.binds(c)
    out["wc-context"] = fmt(q(2 * p.context_tokens, "token"))
    out["wc-rate"] = fmt(q(2 * p.tokens_per_second_per_user, "token/s"))
    out["wc-mfu"], out["wc-eta-p"] = pct(MM_MFU), pct(p.compute_fraction)
    return out


def exercises(p, ch) -> dict:
    p = claim_inputs()
    base = sizing(p)
    ten = sizing(p.replace(users=10 * CLAIM_USERS))
    no_head = sizing(p.replace(headroom=0.0))
    rpu = as_float(base["lam"], "request/s/sequence")
    return {"ex1-users": fmt(10 * CLAIM_USERS), "ex1-r": fmt(ten["R"]), "ex1-rq": fmt(ten["R_q"]),
            "ex2-r": fmt(no_head["R"]), "ex2-saved": fmt(base["R"].m - no_head["R"].m),
            "ex3-gap": duration(q(1 / rpu, "s")), "ex3-streams": ucount(base["N_u"])}


SPEC = Spec("api-gateway-sizing", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
