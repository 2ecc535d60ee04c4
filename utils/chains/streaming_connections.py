"""streaming-connections: a stream is a long-lived connection to a GPU slot, and four client behaviours
waste that slot's time: a slow reader, a dropped connection, a half-finished answer retried from the
start, a duplicate retry. Each costs slot-seconds (a slot is one sequence's KV reservation; the unit
here is sequence x second), and each has a defence: a bounded per-stream buffer so the engine never
waits on a reader, freeing the slot after a short grace on disconnect, a resumable stream (an event id
to resume from), an idempotency key.

The arithmetic is the chain; the defences are utils.serving.streaming_server, run for real on loopback with
misbehaving clients in the check (counts only: which client got which tokens, what was left behind).
"""
from __future__ import annotations

from utils.chain import Chain, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.serving.streaming_server import contract_scenarios as ss_contract
from utils.serving.streaming_server import reference, scenario
from utils.units import fmt, q
from utils.verdicts import UNCHECKABLE, WRONG, Claim

PARAMETERS = (
    Param("step_ms", 30.0, "decode step time, one token per stream per step (the TPOT)", unit="ms",
          source="this book's assumption: a 70B-class model at a few dozen streams per replica"),
    Param("answer_tokens", 500, "tokens in one answer", check="whole", unit="token",
          source="this book's assumption: a chat answer of a few paragraphs"),
    Param("slots", 64, "streams one replica decodes at once (KV slots)", check="whole",
          source="this book's assumption"),
    Param("stall_s", 10.0, "how long a slow reader stops reading (a phone sent to the background)", unit="s",
          source="this book's assumption"),
    Param("drop_at", 0.5, "how far through its answer a dropped stream is when the client goes", check="fraction",
          source="this book's assumption: half-way on average"),
    Param("grace_s", 5.0, "how long a stream with no client keeps its slot before it is cancelled", unit="s",
          source="this book's assumption: long enough to reconnect on a network change"),
    Param("requests_per_day", 1e6, "streamed requests a day", unit="request",
          source="this book's assumption"),
    Param("stall_rate", 0.01, "share of requests whose reader stalls", check="share",
          source="this book's assumption"),
    Param("drop_rate", 0.02, "share of requests whose connection drops mid-stream", check="share",
          source="this book's assumption"),
    Param("retry_rate", 0.01, "share of requests retried while the first attempt still runs", check="share",
          source="this book's assumption"),
)

RESULTS = (
    Result("slot_seconds_per_answer", "sequence*s", "Slot time of one answer", of="W_ans"),
    Result("stall_waste_blocking", "sequence*s", "Slot time one stalled reader costs an engine that waits on it",
           of="W_stall"),
    Result("drop_waste_kept", "sequence*s", "Slot time a dropped stream wastes if it runs to the end", of="W_drop"),
    Result("drop_waste_grace", "sequence*s", "Slot time a dropped stream wastes with a grace", of="W_grace"),
    Result("restart_waste", "sequence*s", "Slot time a retry from the start regenerates", of="W_half"),
    Result("duplicate_waste", "sequence*s", "Slot time a duplicate retry costs", of="W_dup"),
    Result("daily_waste_undefended", "sequence*hour", "Slot time wasted a day, no defences", of="D_none"),
    Result("daily_waste_defended", "sequence*hour", "Slot time wasted a day, all four defences", of="D_def"),
    Result("waste_share_undefended", "", "Waste over useful slot time, no defences", of="s_none", percent=True),
    Result("replicas_saved", "", "Replicas the defences free, averaged over the day", of="R_saved"),
)


def validate(p):
    if p.stall_rate + p.drop_rate + p.retry_rate >= 1:
        raise ParameterError("stall_rate + drop_rate + retry_rate must be below 1, got "
                             f"{p.stall_rate + p.drop_rate + p.retry_rate:g}")


def waste_chain(step_ms, answer_tokens, slots, stall_s, drop_at, grace_s, requests_per_day, stall_rate,
                drop_rate, retry_rate, *, source="parameters cell") -> Chain:
    """`source`: one text for every parameter's row, or a function of the parameter's name (SPEC.source)."""
    def a(name: str) -> dict:
        return dict(kind="assumption", source=source(name) if callable(source) else source)

    ch = Chain("Slot time each misbehaving client wastes, and a day of it")
    ch.given("t_s", q(step_ms, "ms"), "decode step time per token", **a("step_ms"))
    ch.given("L", q(answer_tokens, "token"), "tokens per answer", **a("answer_tokens"))
    ch.given("k", q(1, "sequence/token"), "a slot holds one sequence per token step", kind="spec",
             source="one token per stream per step")
    ch.step("W_ans", "k*L*t_s", "sequence*s", "slot time of one whole answer")
    ch.given("B", q(slots, "sequence"), "slots one replica decodes at once", **a("slots"))
    ch.given("S", q(stall_s, "s"), "a slow reader's stall", **a("stall_s"))
    ch.step("W_stall", "B*S", "sequence*s", "engine waits on the reader: every slot stalls")
    ch.given("f", drop_at, "how far through the answer the client goes", **a("drop_at"))
    ch.step("W_drop", "(1 - f)*W_ans", "sequence*s", "dropped, slot kept to the end of the answer")
    ch.given("G", q(grace_s, "s"), "grace before a client-less stream is cancelled", **a("grace_s"))
    kept = (1 - drop_at) * answer_tokens * step_ms / 1e3
    ch.given("W_grace", q(min(grace_s, kept), "sequence*s"), "dropped, slot freed after the grace: min(G, rest)",
             kind="derived", source="min(k G, (1 - f) W_ans)")
    ch.step("W_half", "f*W_ans", "sequence*s", "a retry from the start regenerates what was sent")
    ch.step("W_dup", "W_ans", "sequence*s", "a duplicate retry without a key: a second whole answer")
    ch.given("N", q(requests_per_day, "request"), "streamed requests a day", **a("requests_per_day"))
    ch.given("r_s", stall_rate, "share that stall", **a("stall_rate"))
    ch.given("r_d", drop_rate, "share that drop mid-stream (and retry from the start)", **a("drop_rate"))
    ch.given("r_r", retry_rate, "share retried while the first runs", **a("retry_rate"))
    ch.given("n", q(1, "1/request"), "per request", kind="spec", source="counting")
    ch.step("D_none", "n*N*(r_s*W_stall + r_d*(W_drop + W_half) + r_r*W_dup)", "sequence*hour",
            "wasted a day, no defences")
    ch.step("D_def", "n*N*r_d*W_grace", "sequence*hour", "wasted a day with the defences (the grace alone)")
    ch.step("D_use", "n*N*W_ans", "sequence*hour", "useful slot time a day")
    ch.step("s_none", "D_none/D_use", "", "waste over useful, no defences")
    ch.given("T_d", q(24, "hour"), "a day", kind="spec", source="the calendar")
    ch.step("R_saved", "(D_none - D_def)/(B*T_d)", "", "replicas the defences free, on average")
    return ch


def compute(p) -> Chain:
    return waste_chain(p.step_ms, p.answer_tokens, p.slots, p.stall_s, p.drop_at, p.grace_s,
                       p.requests_per_day, p.stall_rate, p.drop_rate, p.retry_rate,
                       source=lambda name: SPEC.source(p, name))


# --- the claim, judged by running the server --------------------------------------------------------
QUOTE = ("However, if the token stream stutters or disconnects due to poor resource allocation, the product "
         "is unusable. Your design must prioritize the inference engine's ability to sustain throughput over "
         "the metadata store's immediate consistency.")
ANSWER = 120            # tokens per stream in the loopback scenario (steps of one millisecond)


@memoised   # the runs' counts are deterministic: the page, the claim and the tests share them
def checks() -> dict:
    """The misbehaving clients against the bounded server and against the engine that waits on readers."""
    return dict(good=scenario(answer=ANSWER), bad=scenario(answer=ANSWER, blocking=True, timeout=0.3))


def frozen(out) -> int:
    """Clients whose stream stopped short in a run (counted by prompt: the second no-key attempt may or
    may not have reached a slot before the freeze, so it is not counted)."""
    return len({s[0] for s in out["during"]["streams"] if s[1] == "running" and s[2] < ANSWER})


def _good_finished(out) -> bool:
    return "good" in out and out["good"]["done"] and out["good"]["tokens"] == reference("good", ANSWER)


def claims() -> list[Claim]:
    ck = checks()
    g, b = ck["good"], ck["bad"]
    ok = _good_finished(g) and not _good_finished(b) and g["after"]["slots_held"] == 0
    held = frozen(b)
    return [Claim(
        "stutter-throughput", quote=QUOTE, source="spec/003 (the paragraph on token streams and consistency)",
        claimed="a stream that stutters makes the product unusable; the engine's throughput comes first",
        derived=(f"bounded buffers: the good client got all {ANSWER:,} tokens while a reader stalled; an engine "
                 f"that waits on readers froze {held:,} streams"),
        # The source trades the engine's throughput against a metadata store's consistency and gives no number;
        # the page models no metadata store. What it runs is the book's own demonstration, labelled so.
        verdict=UNCHECKABLE if ok else WRONG,
        nearest_true="" if ok else "a stalled reader does not stop the other streams here",
        reason=(f"The source weighs the engine's throughput against the metadata store's consistency and gives no "
                f"number, and this page models no metadata store, so nothing of the source's can be checked; the "
                f"book's own run: on loopback a client that stopped reading froze all {held:,} streams of an engine "
                f"that waits on its readers, while the engine with bounded buffers finished a neighbour's "
                f"{ANSWER:,} tokens during the stall; at the defaults one stall costs "
                f"{slot_s(compute_defaults()['W_stall'])} if the engine waits."))]


def compute_defaults() -> Chain:
    """The chain at the module's defaults (the claim's arithmetic does not follow the reader's cell)."""
    return compute(SPEC.check())


def scenario_rows(ck: dict) -> list[list[str]]:
    """One row per client: what it did, the tokens it ended with, whether they are the reference."""
    g = ck["good"]
    yes = lambda b: "yes" if b else "no"          # noqa: E731
    ref = lambda name: reference(name, ANSWER)    # noqa: E731
    starts = [s[0] for s in g["during"]["streams"]]
    return [
        ["reads everything", "good", f"{len(g['good']['tokens']):,}", yes(g["good"]["tokens"] == ref("good")),
         "1", "finished while the slow reader was stalled"],
        ["stops reading, then resumes", "slow", f"{len(g['slow']['tokens']):,}",
         yes(g["slow"]["tokens"] == ref("slow")), "1",
         "cut when its buffer filled; resumed from its offset, served from the log"],
        ["hangs up for good", "drop", f"{len(g['drop']['tokens']):,}", "-", "1",
         "slot freed after the grace: " + yes(g["drop_freed"])],
        ["hangs up, reconnects with its offset", "resume", f"{len(g['resume']['tokens']):,}",
         yes(g["resume"]["tokens"] == ref("resume")), "1", "exact continuation"],
        ["retries with the same key", "retry", f"{len(g['retry']['again']['tokens']):,}",
         yes(g["retry"]["again"]["tokens"] == ref("retry")), "1",
         "same stream, replayed: " + yes(g["retry"]["again"]["header"].get("replayed"))
         + "; same key, other body: refused"],
        ["retries with no key", "nokey", f"{len(g['no_key']['again']['tokens']):,}",
         yes(g["no_key"]["again"]["tokens"] == ref("nokey")), f"{starts.count('nokey'):,}",
         "a second generation of the same answer"],
    ]


def leak_rows(ck: dict) -> list[list[str]]:
    rows = []
    for name, out in (("bounded buffers", ck["good"]), ("engine waits on readers", ck["bad"])):
        a = out["after"]
        rows.append([name, "yes" if _good_finished(out) else "no", f"{a['slots_held']:,}", f"{a['tasks']:,}",
                     f"{a['open_sockets']:,}", f"{a['other_tasks']:,}"])
    return rows


def check_text(ck: dict) -> dict:
    g, b = ck["good"], ck["bad"]
    return {"check-answer": f"{ANSWER:,}", "check-started": f"{g['during']['started']:,}",
            "check-cuts": f"{g['during']['cuts']:,}", "check-cancelled": f"{g['during']['cancelled']:,}",
            "check-frozen": f"{frozen(b):,}", "check-drop-read": f"{len(g['drop']['tokens']):,}",
            "check-drop-asked": f"{10 * ANSWER:,}", "check-clients": f"{len(scenario_rows(ck)):,}",
            "check-clients2": f"{len(scenario_rows(ck)):,}"}


# --- figure, what changes, exercises ----------------------------------------------------------------
def waste_bars(p) -> dict:
    """Slot-seconds per incident, without and with its defence."""
    ch = compute(p)
    v = lambda k: ch[k].to("sequence*s").m          # noqa: E731
    return dict(labels=["slow reader", "dropped connection", "retry from the start", "duplicate retry"],
                undefended=[v("W_stall"), v("W_drop"), v("W_half"), v("W_dup")],
                defended=[0.0, v("W_grace"), 0.0, 0.0])


def what_changes(p, ch) -> dict:
    base = ch
    big = waste_chain(p.step_ms, p.answer_tokens, 2 * p.slots, p.stall_s, p.drop_at, p.grace_s, p.requests_per_day,
                      p.stall_rate, p.drop_rate, p.retry_rate)
    long = waste_chain(p.step_ms, 4 * p.answer_tokens, p.slots, p.stall_s, p.drop_at, p.grace_s,
                       p.requests_per_day, p.stall_rate, p.drop_rate, p.retry_rate)
    return {"wc-slots-2x": f"{2 * p.slots:,}", "wc-stall": slot_s(base["W_stall"]),
            "wc-stall-2x": slot_s(big["W_stall"]),
            "wc-share": f"{fmt(base['s_none'].m * 100)}%", "wc-share-2x": f"{fmt(big['s_none'].m * 100)}%",
            "wc-long": f"{4 * p.answer_tokens:,}", "wc-drop": slot_s(base["W_drop"]),
            "wc-drop-long": slot_s(long["W_drop"]), "wc-grace": fmt(q(p.grace_s, "s"))}


def exercises(p, ch) -> dict:
    e1 = waste_chain(20.0, 1000, 128, 30.0, 0.5, 5.0, 1e6, 0.01, 0.02, 0.01)
    e3 = waste_chain(p.step_ms, p.answer_tokens, p.slots, p.stall_s, 0.1, p.grace_s, p.requests_per_day,
                     p.stall_rate, p.drop_rate, p.retry_rate)
    return {"ex1-step": fmt(q(20.0, "ms")), "ex1-slots": "128", "ex1-stall": fmt(q(30.0, "s")),
            "ex1-waste": slot_s(e1["W_stall"]), "ex1-answers": fmt(e1["W_stall"] / e1["W_ans"]), "ex1-len": "1,000",
            "ex2-answer": f"{p.answer_tokens:,}", "ex2-step": fmt(q(p.step_ms, "ms")),
            "ex2-dup": slot_s(ch["W_dup"]),
            "ex3-f": pct_text(0.1), "ex3-drop": slot_s(e3["W_drop"]),
            "ex3-grace": slot_s(e3["W_grace"])}


def slot_s(x) -> str:
    """Slot time in words: a slot-second is one sequence held for one second."""
    return f"{fmt(x.to('sequence*s').m)} slot-seconds"


def pct_text(x: float) -> str:
    return f"{fmt(x * 100)}%"


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held}. The scenarios:
    hostile request lines, a connection that never sends one, a good request after them.
    The full set, with processes killed mid-operation, is tests/serving/test_streaming_server_adversarial.py."""
    return ss_contract()


def contract_text() -> dict:
    ck = contract_checks()
    return {"contract-scenarios": f"{ck['scenarios']:,}", "contract-held": f"{ck['held']:,}"}


SPEC = Spec("streaming-connections", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
