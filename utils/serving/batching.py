"""Batching engines and the traces they serve: the decode step on the roofline at a batch, static and
continuous (iteration-level) batching over a seeded trace, and the closed form static batching is
checked against.

A step reads every weight once and each running sequence's cache, and does two FLOPs per weight per
token plus the attention over the cache; a step that carries a prefill chunk adds the chunk's bytes and
FLOPs. Its time is the larger of the two sides of the roofline:

    t(B) = max((weights + B kv_s + chunk bytes) / W, (B f + chunk FLOPs) / P)

Every function takes plain floats (bytes, FLOPs, seconds) so the loops run at numpy speed; `Engine.of`
reads them from a chain's quantities. Everything random is drawn from a seeded generator.

Chapters: api-gateway-sizing, continuous-batching, latency-slos-goodput, observability-budget, tail-latency.
"""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Engine:
    """What a step costs, as plain floats: bytes of weights read, cache bytes per running sequence,
    the replica's bandwidth (byte/s) and rate (FLOP/s), FLOPs per running sequence, FLOPs per prompt
    token through the weights, attention FLOPs per token per context token, KV bytes per token."""
    wbytes: float
    kvs: float
    W: float
    P: float
    f: float
    kNa: float
    att: float
    akv: float

    @classmethod
    def of(cls, ch) -> "Engine":
        """From a chain that holds N_r, b_w, kv_u, g, W, P, f, k, N_a, I_kv, kappa and rho."""
        from utils.chain import as_float
        return cls(wbytes=as_float(ch["N_r"] * ch["b_w"], "byte"), kvs=as_float(ch["kv_u"], "byte/sequence"),
                   W=as_float(ch["g"] * ch["W"], "byte/s"), P=as_float(ch["g"] * ch["P"], "FLOP/s"),
                   f=as_float(ch["f"], "FLOP/sequence"), kNa=as_float(ch["k"] * ch["N_a"], "FLOP/token"),
                   att=as_float(ch["I_kv"] * ch["kappa"], "FLOP/token"),
                   akv=as_float(ch["rho"] * ch["kappa"], "byte/token"))


def step_time(e: Engine, n_dec, chunk_bytes=0.0, chunk_flops=0.0):
    """The decode step on the roofline with n_dec running sequences (a number or an array), plus a
    chunk's bytes and FLOPs when it carries one: seconds."""
    import numpy as np
    n_dec = np.asarray(n_dec, float) if np.ndim(n_dec) else float(n_dec)
    return np.maximum((e.wbytes + n_dec * e.kvs + chunk_bytes) / e.W, (n_dec * e.f + chunk_flops) / e.P)


def memory_bound(e: Engine, n_dec) -> bool:
    """True when the decode step at n_dec sequences is set by reading memory, not by the FLOPs."""
    return (e.wbytes + n_dec * e.kvs) / e.W >= (n_dec * e.f) / e.P


def prefill_time(e: Engine, prompts) -> float:
    """One prefill pass over a batch of prompts (token counts): the weights and the prompts' KV on the
    memory side, the weights' products and causal attention on the compute side."""
    import numpy as np
    prompts = np.asarray(prompts, float)
    return float(max((e.wbytes + e.akv * prompts.sum()) / e.W,
                     (e.kNa * prompts.sum() + e.att * (prompts * (prompts + 1) / 2).sum()) / e.P))


def trace(n: int, mean_prompt: float, mean_output: float, context: int, seed: int):
    """n requests' prompt and reply lengths (tokens), exponential with the given means, a reply at least
    two tokens (a TPOT needs two); a pair that does not fit the context is drawn again."""
    import numpy as np
    rng = np.random.default_rng(int(seed))
    p_, o_ = np.empty(0, int), np.empty(0, int)
    while len(p_) < n:
        a = np.ceil(rng.exponential(mean_prompt, n)).astype(int)
        b = np.maximum(np.ceil(rng.exponential(mean_output, n)).astype(int), 2)
        fits = a + b <= context
        p_, o_ = np.concatenate([p_, a[fits]]), np.concatenate([o_, b[fits]])
    return p_[:n], o_[:n]


def static(prompts, outputs, B: int, e: Engine) -> dict:
    """Static batching: batches of B in arrival order, one prefill pass, then decode steps at t(B) until
    the batch's longest reply ends. Tokens per second, the p95 TPOT, and the share of slot-steps that
    produce a token."""
    import numpy as np
    pb, ob = prompts.reshape(-1, B), outputs.reshape(-1, B)
    t_pf = np.array([prefill_time(e, row) for row in pb])
    t_d = float(step_time(e, B))
    total = (t_pf + (ob.max(1) - 1) * t_d).sum()
    return dict(throughput=float(outputs.sum() / total), tpot_p95=t_d,
                slot_use=float(outputs.sum() / (ob.max(1).sum() * B)))


def continuous(prompts, outputs, B: int, chunk: int, e: Engine, warm: float = 0.125) -> dict:
    """Continuous batching over a saturated queue: B slots; each step gives up to `chunk` prompt tokens
    to the oldest requests still prefilling, one token to every slot decoding, the first token to a
    request whose last chunk ran, and refills every slot whose reply ended. Throughput is counted from
    the moment a share `warm` of the requests has been admitted to the moment the queue empties; a
    request's TPOT is (last token - first token) / (o - 1)."""
    import numpy as np
    N = len(prompts)
    req = np.arange(B)
    rem_pf, done_pf, rem_out = prompts[:B].astype(float), np.zeros(B), outputs[:B].astype(int).copy()
    dec, queue, nxt = np.zeros(B, bool), deque(range(B)), B
    first, finish = np.full(N, np.nan), np.full(N, np.nan)
    t, tokens, mark0, mark1, steps = 0.0, 0, None, None, []
    while queue or dec.any():
        budget, cb, cf, completed = chunk, 0.0, 0.0, []
        while budget > 0 and queue:                 # the chunk: oldest prefilling requests first
            s = queue[0]
            x, d = min(rem_pf[s], budget), done_pf[s]
            cf += e.kNa * x + e.att * x * (d + x / 2)
            cb += e.akv * (d + x)
            rem_pf[s] -= x
            done_pf[s] += x
            budget -= x
            if rem_pf[s] == 0:
                queue.popleft()
                completed.append(s)
        nd = int(dec.sum())
        dt = float(step_time(e, nd, cb, cf))
        t += dt
        rem_out[dec] -= 1
        tokens += nd
        for s in completed:                         # the step that ends a prompt samples its first token
            first[req[s]] = t
            rem_out[s] -= 1
            dec[s] = True
            tokens += 1
        if mark0 is not None and mark1 is None:
            steps.append((dt, cf > 0, nd))
        for s in np.flatnonzero(dec & (rem_out == 0)):
            finish[req[s]] = t
            dec[s] = False
            if nxt < N:                             # refill the slot from the admission queue
                req[s], rem_pf[s], done_pf[s], rem_out[s] = nxt, prompts[nxt], 0, outputs[nxt]
                queue.append(s)
                nxt += 1
        if mark0 is None and nxt >= warm * N:
            mark0 = (t, tokens)
        if mark1 is None and nxt >= N:
            mark1 = (t, tokens)
    st = np.array(steps)
    tpot = ((finish - first) / (outputs - 1))[int(warm * N):]
    return dict(throughput=(mark1[1] - mark0[1]) / (mark1[0] - mark0[0]), tpot_p95=float(np.quantile(tpot, 0.95)),
                step_p95=float(np.quantile(st[:, 0], 0.95)), chunk_share=float(st[:, 1].mean()),
                mean_decoding=float(st[:, 2].mean()))


def requests_for(B: int, at_least: int = 400, batches: int = 8) -> int:
    """A trace of whole static batches: at least `batches` of them and `at_least` requests."""
    return B * max(batches, -(-at_least // B))


def serve(e: Engine, B: int, context: int, mean_prompt: float, mean_output: float, chunk: int, seed: int) -> dict:
    """The same seeded trace served by static and by continuous batching at batch B."""
    n = requests_for(B)
    p, o = trace(n, mean_prompt, mean_output, context, seed)
    s, c = static(p, o, B, e), continuous(p, o, B, chunk, e)
    return dict(static=s, continuous=c, ratio=c["throughput"] / s["throughput"], n=n)


def capped_replies(mean_prompt: float, mean_output: float, context: int):
    """The trace's reply lengths as a distribution: (lengths, probabilities), exponential replies of at
    least two tokens, a pair whose prompt and reply overflow the context drawn again."""
    import numpy as np
    j = np.arange(2, context)
    pmf_o = np.where(j == 2, 1 - np.exp(-2 / mean_output), np.exp(-(j - 1) / mean_output) - np.exp(-j / mean_output))
    pmf = pmf_o * (1 - np.exp(-(context - j) / mean_prompt))
    return j, pmf / pmf.sum()


def expected_longest(lengths, pmf, B: int) -> float:
    """E[max of B draws] of a distribution on consecutive whole numbers: first + sum_k P(max > k)."""
    import numpy as np
    cdf = np.cumsum(pmf)
    return float(lengths[0] + (1 - cdf[:-1] ** B).sum())


def static_closed_form(e: Engine, B: int, mean_prompt: float, mean_output: float, context: int) -> dict:
    """Static batching's tokens per second in closed form: one prefill pass at the mean prompt, then as
    many steps as the expected longest of B capped replies."""
    j, pmf = capped_replies(mean_prompt, mean_output, context)
    mean_o, e_max = float((j * pmf).sum()), expected_longest(j, pmf, B)
    t_pf = max((e.wbytes + e.akv * B * mean_prompt) / e.W, B * (e.kNa * mean_prompt + e.att * mean_prompt ** 2) / e.P)
    return dict(mean_o=mean_o, e_max=e_max, t_pf=t_pf, slot_use=mean_o / e_max,
                throughput=B * mean_o / (t_pf + (e_max - 1) * float(step_time(e, B))))


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + ... + 1/n: the expected longest of n exponential replies, in mean replies."""
    import numpy as np
    return float(np.sum(1.0 / np.arange(1, int(n) + 1)))


# --- a replica with arrivals: the queue, TTFT and TPOT, goodput ------------------------------------
WARMUP = 0.1          # share of the requests, in arrival order, left out while the replica fills up


def workload(n_requests: int, mean_prompt: float, mean_output: float, max_context: int, seed: int):
    """Arrival times at unit rate (Poisson) and exponential lengths, a reply at least two tokens; a pair
    that does not fit the context is drawn again. Drawn once per seed: every arrival rate scales the
    same arrival times, so a sweep sees the same requests in the same order."""
    import numpy as np
    rng = np.random.default_rng(int(seed))
    unit = np.cumsum(rng.exponential(1.0, n_requests))
    prompt, output = np.empty(0, int), np.empty(0, int)
    while len(prompt) < n_requests:
        p_ = np.ceil(rng.exponential(mean_prompt, n_requests)).astype(int)
        o_ = np.maximum(np.ceil(rng.exponential(mean_output, n_requests)).astype(int), 2)
        fits = p_ + o_ <= max_context
        prompt, output = np.concatenate([prompt, p_[fits]]), np.concatenate([output, o_[fits]])
    return unit, prompt[:n_requests], output[:n_requests]


@dataclass(frozen=True)
class QueueEngine:
    """An iteration-level scheduler's costs, as plain floats: the roofline of a pass (weights read, KV
    bytes per token, bandwidth and rate already scaled by the engine's share of the floor, FLOPs per
    token through the weights, attention FLOPs per token per cached token), the KV budget in tokens,
    the running-sequence cap, a prefill pass's token budget."""
    wbytes: float
    akv: float
    W: float
    P: float
    kNa: float
    att: float
    cap: int
    bmax: int
    budget: int


QUEUE_RESULT = ("arrival", "first", "finish", "output", "window", "tokens", "batch_time", "work")


def simulate_queue(rate: float, wl, e: QueueEngine, max_work: float = float("inf")) -> dict:
    """One replica, first come first served, no chunked prefill (vLLM V0's default). At each iteration,
    if the oldest waiting request can be admitted (a slot free and its whole cache within the KV
    budget), a prefill pass admits as many waiting requests in order as the caps and the pass's token
    budget allow, each getting its first token at the pass's end; otherwise one decode step runs for
    every running sequence. Returns arrival, first- and last-token times, the window and the tokens
    counted at its ends, the time-integral of the batch (Little's law) and the run's work (see
    simulate_faulty; past max_work it raises TooLong). `simulate` picks the way: the loop, or one_at_a_time."""
    r = simulate(rate, wl, e, max_work=max_work, itl=False)
    return {key: r[key] for key in QUEUE_RESULT}


def simulate(rate: float, wl, e: QueueEngine, faults: Faults | None = None, max_work: float = float("inf"),
             itl: bool = True) -> dict:
    """simulate_faulty's run, by the quickest way that gives it: a replica that runs one sequence at a time, with
    no host stalls and room for every request alone, is a single-server queue (one_at_a_time, its results to
    rounding; no sequence can be preempted, so optimistic admission changes nothing); any other, the loop."""
    faults = faults or Faults()
    if e.bmax == 1 and not faults.stall_every and int((wl[1] + wl[2]).max()) <= e.cap:
        return one_at_a_time(rate, wl, e, max_work, itl)
    # One loop serves the rest: simulate_faulty with no faults is simulate_queue exactly (tests/serving/test_batching.py).
    return simulate_faulty(rate, wl, e, faults, max_work=max_work, itl=itl)


def one_at_a_time(rate: float, wl, e: QueueEngine, max_work: float = float("inf"), itl: bool = False) -> dict:
    """simulate_faulty for a replica that runs one sequence at a time (bmax 1): a single-server first-come queue.
    A request's prefill pass and decode steps run alone, so their times depend on neither the rate nor the
    other requests: the pass is the loop's own expression, and the steps' sum is closed (decode_sums). The
    queue is Lindley's recursion: a request starts at its arrival or at the previous one's finish, whichever
    is later. Each gap between decode steps (itl) is the step itself, weighted by the one sequence it serves.
    The loop's results to rounding (the steps summed in another order: a part in 10^15 of a time), a
    microsecond a request where the loop spends a run of quiet steps on each (tests/serving/test_batching.py)."""
    import numpy as np
    unit, prompt, output = wl
    n = len(unit)
    work = n * REQUEST_COST
    if work > max_work:
        raise TooLong(f"past {max_work:,.0f} steps of work")
    arr = (unit / rate).tolist()
    passes, steps = alone(e, prompt, output)
    first, finish, t = [0.0] * n, [0.0] * n, 0.0
    for i, (a, pass_, dec) in enumerate(zip(arr, passes.tolist(), steps.tolist())):
        t = (a if a > t else t) + pass_            # the loop idles to an arrival it has not reached
        first[i] = t
        t += dec
        finish[i] = t
    marks = (arr[int(n * WARMUP)], arr[-1])
    before = np.concatenate([[0], np.cumsum(output)]).tolist()      # tokens made before each request starts
    seen = []
    for mark in marks:          # the loop notes (tokens, clock) at the end of the first pass, step or idle past it
        r = int(np.searchsorted(finish, mark))
        if arr[r] >= mark and (r == 0 or arr[r] > finish[r - 1]):   # it idled to this arrival
            seen.append((before[r], arr[r]))
            continue
        clock = first[r] + np.concatenate([[0.0], np.cumsum(decode_times(e, prompt[r:r + 1], output[r:r + 1]))])
        k = min(int(np.searchsorted(clock, mark)), len(clock) - 1)
        seen.append((before[r] + k + 1, float(clock[k])))
    gaps = decode_times(e, prompt, output) if itl else None
    return dict(arrival=np.array(arr), first=np.array(first), finish=np.array(finish), output=output.copy(),
                window=marks, tokens=seen, batch_time=float(steps.sum()),
                itl=(gaps, np.ones(len(gaps), dtype=int)) if itl else None,
                longest_pass=float(max(0.0, passes.max())), preemptions=0, stall_idle=0.0,
                peak_kv=int((prompt + output - 1).max()), work=work)


def prefill_flops(e: QueueEngine, prompt):
    """Each prompt's prefill FLOPs (an array of token counts): through the weights, and causal attention."""
    return e.kNa * prompt + e.att * prompt * (prompt + 1) / 2


def alone(e: QueueEngine, prompt, output):
    """Each request served alone: its prefill pass (the loop's expression) and the sum of its decode steps
    (seconds, arrays): its service time in a single-server queue is their sum."""
    import numpy as np
    return (np.maximum(prefill_flops(e, prompt) / e.P, (e.wbytes + e.akv * prompt) / e.W),
            decode_sums(e, prompt, output))


def decode_times(e: QueueEngine, prompt, output):
    """The decode steps of requests served alone, one after another (arrays of prompt and reply lengths): the
    loop's step at batch 1, the cached tokens running from p to p + o - 2 for each."""
    import numpy as np
    counts = output - 1
    s = np.arange(int(counts.sum()), dtype=float) + np.repeat(prompt - (np.cumsum(counts) - counts), counts)
    return _step_times(s, int(prompt.min()), int((prompt + counts).max()) - 1, 1, e)


def decode_sums(e: QueueEngine, prompt, output):
    """Each request's decode steps alone, summed in closed form: the step at batch 1 is the larger of two lines
    in the cached tokens S (bytes / W and FLOPs / P), S runs from p to p + o - 2, and the lines cross at most
    once, so the sum is an arithmetic series either side of the crossing."""
    import numpy as np
    lines = {"bytes": (e.wbytes / e.W, e.akv / e.W), "flops": (e.kNa / e.P, e.att / e.P)}
    (cb, sb), (cf, sf) = lines["bytes"], lines["flops"]
    lo, hi = prompt.astype(float), (prompt + output - 2).astype(float)
    if sb == sf:                                    # parallel: one side binds throughout
        low = high = lines["bytes"] if cb >= cf else lines["flops"]
        cross = lo
    else:
        cut = (cf - cb) / (sb - sf)                 # where the lines meet
        low, high = (lines["flops"], lines["bytes"]) if sb > sf else (lines["bytes"], lines["flops"])
        cross = np.clip(np.ceil(cut) if sb > sf else np.floor(cut) + 1, lo, hi + 1)     # first S of the high side

    def series(line, a, b):
        count = np.maximum(b - a + 1, 0)
        return line[0] * count + line[1] * (a + b) * count / 2
    return series(low, lo, cross - 1) + series(high, cross, hi)


class Overloaded(ValueError):
    """Every request arrived within one engine pass: the benchmark window holds no decode step."""


class TooLong(ValueError):
    """A run reached its budget of work (a caller's bound on what a simulation may cost)."""


def quantile(x, f: float) -> float:
    """The smallest value that at least a share f of the requests do not exceed."""
    import numpy as np
    return float(np.quantile(x, f, method="inverted_cdf"))


def measure(r: dict, slo_ttft: float, slo_tpot: float, p: float) -> dict:
    """A benchmark's numbers over its window: medians and percentiles of TTFT and TPOT, the shares
    within each objective and within both (attainment), goodput and throughput."""
    t0, t1 = r["window"]
    (k0, s0), (k1, s1) = r["tokens"]
    if s1 <= s0:
        raise Overloaded("every request arrives within one engine pass")
    sel = r["arrival"] >= t0
    ttft = (r["first"] - r["arrival"])[sel]
    tpot = ((r["finish"] - r["first"]) / (r["output"] - 1))[sel]
    m, good = latencies(ttft, tpot, slo_ttft, slo_tpot, p)
    return dict(m, rate=sel.sum() / (t1 - t0), throughput=(k1 - k0) / (s1 - s0), goodput=good / (t1 - t0))


def latencies(ttft, tpot, slo_ttft: float, slo_tpot: float, p: float) -> tuple[dict, int]:
    """The requests' TTFT and TPOT against the objectives: the shares within each and within both (attainment),
    the medians and the percentiles; and how many requests meet both."""
    ok_ttft, ok_tpot = ttft <= slo_ttft, tpot <= slo_tpot
    good = ok_ttft & ok_tpot
    return dict(attainment=float(good.mean()), att_ttft=float(ok_ttft.mean()), att_tpot=float(ok_tpot.mean()),
                ttft_50=quantile(ttft, 0.5), ttft_p=quantile(ttft, p), tpot_50=quantile(tpot, 0.5),
                tpot_p=quantile(tpot, p), n=int(len(ttft))), good.sum()


_RUNS: dict = {}
# The lowest rate a search for the highest good rate tries, as a fraction of the saturation rate: 1/FLOOR. Low
# enough that a replica serving one sequence at a time (a request that arrives while another decodes waits
# seconds, and a share of them equal to the utilization do) finds the rate where 99% still meet a TTFT objective.
FLOOR = 1024


class Replica:
    """One engine, one workload, one pair of objectives at a percentile; runs cached by arrival rate.
    `key` names the engine and workload (runs are shared between replicas with the same key);
    `saturation` (request/s) centres the bisection's first bracket."""

    def __init__(self, key, wl, engine: QueueEngine, slo_ttft: float, slo_tpot: float, percentile: float,
                 saturation: float):
        self.key, self.wl, self.engine = key, wl, engine
        self.slo, self.p, self.lam = (slo_ttft, slo_tpot), percentile, saturation
        self.tried: set[float] = set()
        self.budget, self.work = float("inf"), 0.0   # work its new runs may do, all together (TooLong)

    def run(self, rate: float) -> dict:
        k = (self.key, float(rate))
        if k not in _RUNS:
            _RUNS[k] = simulate_queue(float(rate), self.wl, self.engine, self.budget - self.work)
            self.work += _RUNS[k]["work"]
        return _RUNS[k]

    def at(self, rate: float) -> dict:
        """The benchmark at an arrival rate; at rate 0, its limit: each request alone (alone_latencies)."""
        if rate == 0:
            return self.alone_latencies()
        self.tried.add(float(rate))
        return measure(self.run(rate), *self.slo, self.p)

    def alone_latencies(self) -> dict:
        """The window's requests each served alone, a batch of one with nothing queued before it: no rate does
        better, for with company a pass carries other prompts too, a step reads other caches, and a prefill pass
        can pause the decode (the judgement of a rate, with no simulation)."""
        unit, prompt, output = self.wl
        k = int(len(unit) * WARMUP)                 # the window: the requests after the warm-up (measure)
        passes, steps = alone(self.engine, prompt[k:], output[k:])
        return latencies(passes, steps / (output[k:] - 1), *self.slo, self.p)[0]

    def joint(self, rate: float) -> bool:
        """A share p of requests meet both objectives (the fraction that meets both)."""
        return self.at(rate)["attainment"] >= self.p

    def separate(self, rate: float) -> bool:
        """Each latency's percentile within its objective (MLPerf's server check)."""
        m = self.at(rate)
        return m["ttft_p"] <= self.slo[0] and m["tpot_p"] <= self.slo[1]

    def max_rate(self, ok, iters: int = 10) -> tuple[float, float]:
        """The highest arrival rate at which ok holds, to within 2^-iters of the bracket: (lo, hi)."""
        def ok_(rate):
            try:
                return ok(rate)
            except Overloaded:
                return False
        lo, hi = 0.5 * self.lam, 1.5 * self.lam
        if not ok_(0.0):                             # fails with every request alone: at every rate (see at)
            return 0.0, lo
        for _ in range(6):
            if not ok_(hi):
                break
            lo, hi = hi, 1.5 * hi
        else:
            return hi, hi                            # never failed in the range tried
        while not ok_(lo):
            lo, hi = lo / 2, lo
            if lo < self.lam / FLOOR:
                return 0.0, hi                       # fails even at the lowest rate tried
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if ok_(mid) else (lo, mid)
        return lo, hi

    def sweep(self, fractions):
        import numpy as np
        rates = self.lam * np.asarray(fractions)
        return rates, [self.at(r) for r in rates]

    def curve(self):
        """Every rate this replica has measured (a sweep, the bisections), in order."""
        import numpy as np
        rates = np.array(sorted(self.tried))
        return rates, [measure(self.run(r), *self.slo, self.p) for r in rates]

    def peak_goodput(self):
        import numpy as np
        rates, ms = self.curve()
        i = int(np.argmax([m["goodput"] for m in ms]))
        return float(rates[i]), ms[i]

    def fails_first(self, rate: float) -> str:
        """Which objective more requests miss at `rate`."""
        m = self.at(rate)
        return "TTFT" if m["att_ttft"] < m["att_tpot"] else "TPOT"

    def tpot_misses(self, rate: float) -> tuple[float, float]:
        """Median reply of the window's requests that miss the TPOT objective, and of all of them."""
        import numpy as np
        r = self.run(rate)
        sel = r["arrival"] >= r["window"][0]
        miss = ((r["finish"] - r["first"]) / (r["output"] - 1))[sel] > self.slo[1]
        return float(np.median(r["output"][sel][miss])), float(np.median(r["output"][sel]))


# --- fault injection: the same replica with one thing gone wrong (the tail-latency chapter) ---------
@dataclass(frozen=True)
class Faults:
    """What to break in `simulate_faulty`; the defaults break nothing (simulate_queue is that case).
    stall_every, stall_s: the host stops the engine loop for stall_s seconds every stall_every seconds
    (a garbage collection, a tokenizer on a starved CPU, a blocking log write): no pass runs, the GPU
    idles with work in flight. optimistic: admit a request on its prompt's KV alone (vLLM's scheduler,
    which does not reserve the reply) and, when the next decode step would not fit the KV budget,
    preempt the newest running sequence and later recompute its prompt and generated tokens in a
    prefill pass of their own (vLLM's recompute preemption), ahead of any new admission."""
    stall_every: float = 0.0
    stall_s: float = 0.0
    optimistic: bool = False


QUIET = 32     # decode steps in a row with nothing else to do, past which they run as arrays (_quiet_steps)
# What a run costs, in the loop's steps (its unit of work, half a microsecond to one on this book's CI machine),
# fitted to runs' process times over batch caps from one to unbounded, engines from a hundredth of the shares, and
# loads from light to twice saturating: a step run as arrays costs a sixty-fourth of one in the loop, a run of them
# 16 steps besides (a handful of numpy calls), and each request 3 (its admission and its finish). Where the run
# records inter-token gaps (itl), a step's gap is kept, joined and later sorted: a sixteenth, and 32 a run.
QUIET_COST, RUN_COST = 64, 16
ITL_QUIET_COST, ITL_RUN_COST = 16, 32
REQUEST_COST = 3


def simulate_faulty(rate: float, wl, e: QueueEngine, faults: Faults = Faults(),
                    max_work: float = float("inf"), itl: bool = True) -> dict:
    """The replica's queue simulation (simulate_queue's admission, passes and bookkeeping; it calls this
    with no faults) with the hooks of `Faults`. Adds to simulate_queue's result: the gap before each
    decode step since the previous one, weighted by the sequences it served (the inter-token latency, ITL),
    the longest prefill pass, the preemptions, the time the GPU sat idle in host stalls with requests in the
    replica, the most KV tokens any decode step held, and the run's work in loop steps (its decode steps, those run as
    arrays at 1/QUIET_COST each and RUN_COST a run of them (the ITL_ costs where it records gaps), REQUEST_COST a
    request: about what they cost; past max_work: TooLong).
    itl=False leaves the gaps unrecorded (itl None): simulate_queue's callers read none, and a run is faster."""
    import numpy as np
    unit, prompt, output = wl
    n = len(unit)
    arr, p, o = (unit / rate).tolist(), prompt.tolist(), output.tolist()
    po = (prompt + output).tolist()                 # a request's whole cache, in tokens
    pf = prefill_flops(e, prompt).tolist()          # its prefill FLOPs
    wbytes, akv, W, P, kNa, att = e.wbytes, e.akv, e.W, e.P, e.kNa, e.att
    cap, bmax, budget = e.cap, e.bmax, e.budget
    every, stall, opt = float(faults.stall_every), float(faults.stall_s), bool(faults.optimistic)
    first, finish = [0.0] * n, [0.0] * n
    t = 0.0
    a = w = 0
    B = S = R = D = 0
    ends, done = [], 0
    batch_time = 0.0
    marks, seen, tokens = (arr[int(n * WARMUP)], arr[-1]), [None, None], 0
    gaps, weights, t_dec, longest, preempted, idle, peak_kv = [], [], None, 0.0, 0, 0.0, 0
    chunks = []                                     # (gaps, weights) arrays of the steps before the lists' own
    quiet = runs = 0                                # decode steps run as arrays, in how many runs
    inf = float("inf")
    fixed = n * REQUEST_COST                        # the requests' share of the work, known from the start
    quiet_cost, run_cost = (ITL_QUIET_COST, ITL_RUN_COST) if itl else (QUIET_COST, RUN_COST)
    next_mark, work_limit = marks[0], max_work - fixed    # the first unseen mark; D at which the work reaches max_work
    next_stall = every if every > 0 else inf
    no_quiet_before = 0.0      # a clock before which the quiet check says no again, unless a sequence joins or leaves
    heappush, heappop = heapq.heappush, heapq.heappop
    end_of, d0, running, redo = [0] * n, [0] * n, [], deque()    # only the optimistic scheduler uses these
    while done < n:
        while a < n and arr[a] <= t:
            a += 1
        if opt and redo and B < bmax and S + p[redo[0][0]] + redo[0][1] <= cap:
            i, k = redo.popleft()                   # recompute a preempted sequence: prompt + tokens so far
            x = p[i] + k
            dt = max((kNa * x + att * x * (x + 1) / 2) / P, (wbytes + akv * x) / W)
            longest = max(longest, dt)
            batch_time += B * dt
            t += dt
            S += x
            B += 1
            d0[i], end_of[i] = D - k, D - k + o[i] - 1
            running.append(i)
            heappush(ends, (end_of[i], i))
            no_quiet_before = 0.0
        elif not (opt and redo) and w < a and B < bmax and (S + p[w] <= cap if opt else R + po[w] <= cap):
            j, pass_tokens, flops = w, 0, 0.0
            while (j < a and B + j - w < bmax
                   and (S + pass_tokens + p[j] <= cap if opt else R + po[j] <= cap)
                   and (j == w or pass_tokens + p[j] <= budget)):
                R += po[j]
                pass_tokens += p[j]
                flops += pf[j]
                j += 1
            dt, dt_m = flops / P, (wbytes + akv * pass_tokens) / W     # max() of the two, inline (a pass a request)
            if dt_m > dt:
                dt = dt_m
            if dt > longest:
                longest = dt
            batch_time += B * dt
            t += dt
            for i in range(w, j):
                first[i] = t
                d0[i], end_of[i] = D, D + o[i] - 1
                heappush(ends, (end_of[i], i))
            if opt:
                running.extend(range(w, j))
            S += pass_tokens
            B += j - w
            tokens += j - w
            w = j
            no_quiet_before = 0.0
        elif B:
            if D >= work_limit:
                raise TooLong(f"past {max_work:,.0f} steps of work")
            if t >= no_quiet_before and ends[0][0] - D > QUIET:      # a run of quiet steps: _quiet_steps
                room = ends[0][0] - 1 - D                   # steps before a sequence's last one
                if opt:                                     # and before the KV overflows (a preemption)
                    room = min(room, (cap - S) // B)
                stop = min(next_stall, marks[0] if seen[0] is None else inf, marks[1] if seen[1] is None else inf,
                           arr[w] if w == a < n and B < bmax and (S + p[w] <= cap if opt else R + po[w] <= cap)
                           else inf)
                most = (stop - t) / max((wbytes + akv * S) / W, (kNa * B + att * S) / P)    # steps only lengthen
                if most > QUIET and room >= QUIET:
                    D_ = D
                    peak_kv, batch_time, t, t_dec, D, S, tokens = _quiet_steps(
                        D + int(min(most, room)), stop, B, S, D, t, t_dec, peak_kv,
                        batch_time, tokens, gaps, weights, chunks if itl else None, e)
                    quiet += D - D_
                    runs += 1
                    work_limit = max_work - fixed + quiet * (1 - 1 / quiet_cost) - runs * run_cost
                else:          # and says so until `stop` (steps only lengthen), or until the batch changes
                    no_quiet_before = stop
            while opt and S + B > cap and B > 1:     # the step would overflow the KV: preempt the newest
                i = running.pop()
                S -= p[i] + D - d0[i]
                B -= 1
                end_of[i] = -1
                redo.append((i, D - d0[i]))
                preempted += 1
                no_quiet_before = 0.0
            if S + B > peak_kv:
                peak_kv = S + B
            dt, dt_c = (wbytes + akv * S) / W, (kNa * B + att * S) / P     # max() of the two, inline (the hot loop)
            if dt_c > dt:
                dt = dt_c
            batch_time += B * dt
            t += dt
            if itl:
                gaps.append(t - (t_dec if t_dec is not None else t - dt))
                weights.append(B)
            t_dec = t
            D += 1
            S += B
            tokens += B
            while ends and ends[0][0] <= D:
                d, i = heappop(ends)
                if d != end_of[i]:
                    continue                        # a preempted sequence's old end (a later one is queued)
                finish[i] = t
                no_quiet_before = 0.0
                B -= 1
                S -= p[i] + o[i] - 1
                R -= po[i]
                done += 1
                if opt:
                    running.remove(i)
        else:
            t = arr[a]
            if t >= next_stall:                     # a stall while idle costs nobody anything
                next_stall += every * np.ceil((t - next_stall) / every + 1e-12)
        if t >= next_stall:                         # the host stops the loop
            if B or w < a or redo:
                idle += stall
            t += stall
            next_stall += every
        if B == 0:
            t_dec = None
        if t >= next_mark:
            for k in (0, 1):
                if seen[k] is None and t >= marks[k]:
                    seen[k] = (tokens, t)
            next_mark = marks[1] if seen[1] is None else inf
    return dict(arrival=np.array(arr), first=np.array(first), finish=np.array(finish), output=np.array(o),
                window=marks, tokens=seen, batch_time=batch_time, itl=_itl(chunks, gaps, weights) if itl else None,
                longest_pass=longest, preemptions=preempted, stall_idle=idle, peak_kv=peak_kv,
                work=D - quiet * (1 - 1 / quiet_cost) + runs * run_cost + fixed)


def _itl(chunks, gaps, weights):
    """The run's (gap, weight) arrays: the quiet steps' chunks, then the loop's lists, in order."""
    import numpy as np
    if not chunks:
        return np.array(gaps), np.array(weights)
    chunks.append((np.array(gaps, dtype=float), np.array(weights, dtype=int)))
    return tuple(np.concatenate(c) for c in zip(*chunks))


def _quiet_steps(last_D, stop, B, S, D, t, t_dec, peak_kv, batch_time, tokens, gaps, weights, chunks, e):
    """simulate_faulty's decode steps, with the fair scheduler, while nothing else can happen: no sequence
    finishes (D stays at most last_D) and the clock stays below `stop` (the next stall, an unseen window mark,
    or the next arrival when it could be admitted). The loop's own step as arrays: each step's time is the same
    expression on the same numbers, and the clock and the batch's time integral are running sums in the same
    order (np.add.accumulate adds one term at a time), so a run's results are the loop's to the last bit; a
    request decoding alone for hundreds of steps costs one array pass. The step that crosses a line is left to
    the loop. A run is a handful of numpy calls: its fixed cost is most of what it costs."""
    import numpy as np
    n = last_D - D
    s = np.arange(S, S + B * n, B, dtype=float)               # cached tokens before each step (whole numbers)
    dt = _step_times(s, S, S + B * (n - 1), B, e)
    first = dt[0]
    dt[0] += t                                                 # t + dt[0], then one step at a time: the clock
    clock = np.add.accumulate(dt)
    dt[0] = first
    m = n if clock[-1] < stop else int(clock.searchsorted(stop))    # steps that end before `stop`
    if m == 0:
        return peak_kv, batch_time, t, t_dec, D, S, tokens
    if m < n:
        dt, clock = dt[:m], clock[:m]
    if chunks is not None:                                     # the gaps, where the run records them (itl)
        if gaps:                                               # the loop's steps since the last run
            chunks.append((np.array(gaps, dtype=float), np.array(weights, dtype=int)))
            gaps.clear()
            weights.clear()
        gap = np.empty(m)
        gap[0] = clock[0] - (t_dec if t_dec is not None else clock[0] - dt[0])
        np.subtract(clock[1:], clock[:-1], out=gap[1:])        # np.diff, without its Python wrapper
        chunks.append((gap, np.full(m, B)))
    area = B * dt if B != 1 else dt                            # 1 * x is x: the loop's B * dt, one call fewer
    area[0] += batch_time
    batch_time = float(np.add.accumulate(area)[-1])
    t = float(clock[-1])
    return max(peak_kv, S + B * m), batch_time, t, t, D + m, S + B * m, tokens + B * m


def _step_times(s, s0, s1, B, e):
    """The loop's step time, max(bytes / W, FLOPs / P), at each cached-token count of s (from s0 up to s1). Both
    sides grow linearly in s, so a side ahead at both ends by more than rounding is ahead throughout: only it
    is computed (the same expression, so the same bits); otherwise both, and the larger."""
    import numpy as np
    kb = e.kNa * B
    m0, c0 = (e.wbytes + e.akv * s0) / e.W, (kb + e.att * s0) / e.P
    m1, c1 = (e.wbytes + e.akv * s1) / e.W, (kb + e.att * s1) / e.P
    margin = 1e-9 * max(m1, c1)                                # far above the ulps of rounding, far below any gap
    if m0 - c0 > margin and m1 - c1 > margin:
        return (e.wbytes + e.akv * s) / e.W
    if c0 - m0 > margin and c1 - m1 > margin:
        return (kb + e.att * s) / e.P
    return np.maximum((e.wbytes + e.akv * s) / e.W, (kb + e.att * s) / e.P)


def weighted_quantile(x, w, f: float) -> float:
    """The smallest x such that at least a share f of the total weight lies at or below it. Equal weights (one
    sequence at a time: a million gaps, each weighing one) need no sort: the rank is known, and a partition finds it."""
    import numpy as np
    w = np.asarray(w)
    if len(w) and w.min() == w.max():
        ranks = float(w[0]) * np.arange(1, len(w) + 1, dtype=float)      # the sorted weights' running sums
        k = int(np.searchsorted(ranks, f * ranks[-1] - 1e-9 * ranks[-1]))
        return float(np.partition(np.asarray(x), k)[k])
    order = np.argsort(x, kind="stable")
    c = np.cumsum(np.asarray(w, float)[order])
    return float(np.asarray(x)[order][np.searchsorted(c, f * c[-1] - 1e-9 * c[-1])])
