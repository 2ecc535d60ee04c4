"""playground-abuse: a free chat playground at scale. What its transport costs per connection (SSE against
WebSocket), where session state lives so that a refresh loses nothing while no GPU holds it, the quotas
per user and per fleet (utils.components.token_bucket), and the abuse controls, each priced by what it saves on a
day of free-tier traffic (GPU-hours at a catalog rental rate, through utils.fleet.money).

The transport's difference is what stays open: a WebSocket is held for the whole session, idle or not,
while an SSE response is open only while an answer streams (the next prompt is an ordinary POST). Session
state is the conversation's text in a database keyed by the session id; the KV cache is rebuilt from it
(prefill) on the next turn, so an idle session costs kilobytes of storage, not gigabytes of HBM.
"""
from __future__ import annotations

from utils import catalog
from utils.chain import Chain
from utils.components.token_bucket import FakeClock, TokenBucket, drive, max_admitted
from utils.fleet.money import cost_per_gpu_hour
from utils.models import kv_bytes_per_token
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, q
from utils.verdicts import UNCHECKABLE, Claim

_CAT = "catalog (utils/catalog/prices.toml): "
WS_MEMORY = catalog.entry("software", "websockets")["server_memory_per_connection"]   # the default (a test holds it)

PARAMETERS = (
    Param("model", "llama-3-70b", "the model served: a catalog key or a config.json path", check="model",
          source="catalog: Llama-3-70B, this book's playground model"),
    Param("open_sessions", 200000.0, "browser tabs with the playground open at the peak", unit="",
          source="this book's assumption"),
    Param("streams_in_flight", 20000.0, "answers streaming at the peak", unit="",
          source="this book's assumption: a tenth of the open tabs are waiting on an answer"),
    Param("ws_kib_per_conn", 70.0, "server memory per idle WebSocket connection", unit="KiB",
          source=WS_MEMORY.cite),
    Param("sse_kib_per_conn", 16.0, "server memory per open SSE response (socket, HTTP state, no compression "
          "context)", unit="KiB", source="this book's assumption, below the WebSocket figure: no per-message "
          "deflate state"),
    Param("history_tokens", 4000, "tokens of conversation a session keeps", check="whole", unit="token",
          source="this book's assumption"),
    Param("bytes_per_token_text", 4.0, "bytes of UTF-8 text per token", unit="B/token",
          source="this book's assumption: about four characters of English per token"),
    Param("free_requests_per_day", 5e6, "free-tier requests a day", unit="request",
          source="this book's assumption"),
    Param("answer_tokens", 500, "output tokens of an ordinary free answer", check="whole", unit="token",
          source="this book's assumption"),
    Param("abusive_share", 0.3, "share of free requests that are scripted or abusive", check="share",
          source="this book's assumption"),
    Param("abusive_answer_tokens", 2000, "output tokens an abusive request asks for", check="whole", unit="token",
          source="this book's assumption: scripts ask for the longest answers"),
    Param("signup_block", 0.5, "share of abusive traffic that signup friction (a verified phone) stops",
          check="share", source="this book's assumption"),
    Param("ip_block", 0.4, "share of what is left that per-IP and per-device limits stop", check="share",
          source="this book's assumption"),
    Param("captcha_block", 0.6, "share of what is left that a CAPTCHA on anomalies stops", check="share",
          source="this book's assumption"),
    Param("output_cap", 1000, "most output tokens a free answer may have", check="whole", unit="token",
          source="this book's assumption"),
    Param("tokens_per_gpu_second", 1500.0, "output tokens one GPU decodes a second, batched", unit="token/s",
          source="this book's assumption: a 70B model at a few dozen streams per H100"),
    Param("rent_usd_per_gpu_hour", 3.99, "USD per GPU-hour", unit="USD/GPU/hour",
          source=_CAT + "h100-rental.lambda_on_demand"),
    Param("utilization", 0.6, "share of the fleet's GPU-hours that decode", check="fraction",
          source="this book's assumption"),
    Param("user_burst", 10, "a free user's burst, requests (token bucket capacity)", check="whole",
          source="this book's assumption"),
    Param("user_per_hour", 5.0, "a free user's sustained requests an hour (token bucket rate)", unit="1/hour",
          source="this book's assumption"),
)

RESULTS = (
    Result("ws_memory", "GiB", "Server memory of the WebSockets at the peak", of="M_ws"),
    Result("sse_memory", "GiB", "Server memory of the SSE responses at the peak", of="M_sse"),
    Result("ws_fds", "", "File descriptors the WebSockets hold", of="F_ws"),
    Result("session_bytes", "KiB", "Session state per session, as text", of="s_txt"),
    Result("session_kv", "GiB", "The same session as KV cache on a GPU", of="s_kv"),
    Result("user_max_per_day", "request", "Most requests one free user gets a day", of="U_day"),
    Result("gpu_hours_undefended", "GPU*hour", "Free-tier GPU-hours a day, no controls", of="H_0"),
    Result("gpu_hours_defended", "GPU*hour", "Free-tier GPU-hours a day, all controls", of="H_1"),
    Result("saved_signup", "USD", "Saved a day by signup friction", of="V_su"),
    Result("saved_ip", "USD", "Saved a day by per-IP and device limits", of="V_ip"),
    Result("saved_captcha", "USD", "Saved a day by CAPTCHA on anomalies", of="V_ca"),
    Result("saved_cap", "USD", "Saved a day by the output cap", of="V_cap"),
    Result("saved_total", "USD", "Saved a day by all four", of="V_all"),
)


def validate(p):
    if p.output_cap > p.abusive_answer_tokens:
        raise ParameterError(f"output_cap must be at most abusive_answer_tokens ({p.abusive_answer_tokens}), got "
                             f"{p.output_cap}: a cap above what is asked caps nothing")
    if p.answer_tokens > p.output_cap:
        raise ParameterError(f"answer_tokens must be at most output_cap ({p.output_cap}), got {p.answer_tokens}: "
                             "the cap would cut ordinary answers")


def gpu_price(rent: float, utilization: float) -> float:
    """USD per GPU-hour that decodes: the rental rate over the share of hours busy (utils.fleet.money)."""
    return cost_per_gpu_hour(rent, 1.0, utilization)


def abuse_chain(p) -> Chain:
    def a(name: str) -> dict:     # an assumption row: its parameter's source while it holds the default
        return dict(kind="assumption", source=SPEC.source(p, name))

    ch = Chain("A free playground: connections, sessions, quotas and a day of abuse")
    # transport
    ch.given("C", p.open_sessions, "open tabs at the peak", **a("open_sessions"))
    ch.given("A", p.streams_in_flight, "answers streaming at the peak", **a("streams_in_flight"))
    ch.given("m_ws", q(p.ws_kib_per_conn, "KiB"), "memory per idle WebSocket", kind="spec",
             source=SPEC.source(p, "ws_kib_per_conn"))
    ch.given("m_sse", q(p.sse_kib_per_conn, "KiB"), "memory per open SSE response", **a("sse_kib_per_conn"))
    ch.step("M_ws", "C*m_ws", "GiB", "WebSockets: one held per open tab")
    ch.step("M_sse", "A*m_sse", "GiB", "SSE: one open per streaming answer")
    ch.step("F_ws", "C", "", "file descriptors, WebSocket (one socket each)")
    ch.step("F_sse", "A", "", "file descriptors, SSE")
    # session state
    ch.given("T_h", q(p.history_tokens, "token"), "tokens a session keeps", **a("history_tokens"))
    ch.given("b_t", q(p.bytes_per_token_text, "B/token"), "bytes of text per token", **a("bytes_per_token_text"))
    ch.step("s_txt", "T_h*b_t", "KiB", "session as text in a database: survives a refresh")
    ch.given("k_kv", kv_bytes_per_token(p.model, 2), "KV bytes per token (bf16)", kind="spec",
             source=f"{p.model.name}, counted from its configuration")
    ch.step("s_kv", "T_h*k_kv", "GiB", "the same session held as KV on a GPU")
    ch.step("S_all", "C*s_kv", "TiB", "every open tab's session held as KV")
    # quotas (utils.components.token_bucket.max_admitted over a day)
    ch.given("c_u", q(p.user_burst, "request"), "a user's burst", **a("user_burst"))
    ch.given("r_u", q(p.user_per_hour, "request/hour"), "a user's sustained rate", **a("user_per_hour"))
    ch.given("T_d", q(24, "hour"), "a day", kind="spec", source="the calendar")
    ch.step("U_day", "c_u + r_u*T_d", "request", "most one user gets a day (burst plus refill)")
    # a day of free traffic
    ch.given("N", q(p.free_requests_per_day, "request"), "free requests a day", **a("free_requests_per_day"))
    ch.given("a", p.abusive_share, "abusive share", **a("abusive_share"))
    ch.given("L", q(p.answer_tokens, "token/request"), "tokens per ordinary answer", **a("answer_tokens"))
    ch.given("L_a", q(p.abusive_answer_tokens, "token/request"), "tokens per abusive request", **a("abusive_answer_tokens"))
    ch.given("x", q(p.tokens_per_gpu_second, "token/s/GPU"), "decode rate per GPU", **a("tokens_per_gpu_second"))
    ch.step("H_ok", "N*(1 - a)*L/x", "GPU*hour", "GPU-hours of ordinary free answers")
    ch.step("A_0", "N*a", "request", "abusive requests, no controls")
    ch.step("H_0", "H_ok + A_0*L_a/x", "GPU*hour", "free-tier GPU-hours, no controls")
    ch.given("e_su", p.signup_block, "stopped by signup friction", **a("signup_block"))
    ch.step("A_1", "A_0*(1 - e_su)", "request", "abusive requests after signup friction")
    ch.given("e_ip", p.ip_block, "stopped by per-IP and device limits", **a("ip_block"))
    ch.step("A_2", "A_1*(1 - e_ip)", "request", "after per-IP and device limits")
    ch.given("e_ca", p.captcha_block, "stopped by a CAPTCHA on anomalies", **a("captcha_block"))
    ch.step("A_3", "A_2*(1 - e_ca)", "request", "after the CAPTCHA")
    ch.given("L_c", q(p.output_cap, "token/request"), "output cap", **a("output_cap"))
    ch.step("H_1", "H_ok + A_3*L_c/x", "GPU*hour", "free-tier GPU-hours, all controls")
    ch.given("c_g", q(gpu_price(p.rent_usd_per_gpu_hour, p.utilization), "USD/GPU/hour"),
             "USD per decoding GPU-hour (rent / utilisation)", kind="derived", source="utils.fleet.money.cost_per_gpu_hour")
    ch.step("V_su", "(A_0 - A_1)*L_a/x*c_g", "USD", "saved by signup friction")
    ch.step("V_ip", "(A_1 - A_2)*L_a/x*c_g", "USD", "saved by per-IP and device limits")
    ch.step("V_ca", "(A_2 - A_3)*L_a/x*c_g", "USD", "saved by the CAPTCHA")
    ch.step("V_cap", "A_3*(L_a - L_c)/x*c_g", "USD", "saved by the output cap on what is left")
    ch.step("V_all", "(H_0 - H_1)*c_g", "USD", "saved a day by all four")
    return ch


def compute(p) -> Chain:
    return abuse_chain(p)


def bucket_day(burst: int, per_hour: float, every_s: float = 60.0) -> dict:
    """A second route to U_day: a real TokenBucket on a fake clock, offered one request every `every_s`
    seconds for a day (faster than the refill), counts what it admits."""
    clock = FakeClock()
    b = TokenBucket(burst, per_hour / 3600.0, clock=clock)
    n = int(86400 // every_s)
    admitted = sum(d.admitted for d in drive(b, clock, [i * every_s for i in range(n + 1)]))
    return dict(offered=n + 1, admitted=admitted, bound=max_admitted(burst, per_hour / 3600.0, 86400.0))


# --- the claim: priority for paid traffic, without losing in-flight generations -------------------
QUOTE = ("Instead, the expected design includes queueing mechanisms with priority weighting, where paid "
         "enterprise traffic bypasses the backlog of free-tier users without losing the state of the in-flight "
         "generation.")
CLAIM = dict(replicas=100, slots=64, answer_s=15.0, spike_excess=0.25, spike_s=600.0)


def priority_chain(replicas, slots, answer_s, spike_excess, spike_s) -> Chain:
    """A spike of free traffic above the fleet: the free backlog and its wait, against the wait of a paid
    request that jumps the queue (non-preemptive: in-flight answers keep their slots and their KV)."""
    ch = Chain("Paid traffic past a free backlog")
    a = dict(kind="assumption", source="this book's scenario for the claim")
    ch.given("R", replicas, "replicas", **a)
    ch.given("B", q(slots, "sequence"), "slots per replica", **a)
    ch.given("T_a", q(answer_s, "s"), "slot time of one answer", **a)
    ch.given("k", q(1, "request/sequence"), "one request per slot", kind="spec", source="counting")
    ch.step("mu", "k*R*B/T_a", "request/s", "fleet completion rate: slots free at this rate")
    ch.given("e", spike_excess, "free arrivals above the fleet's rate, as a share of it", **a)
    ch.given("D", q(spike_s, "s"), "spike length", **a)
    ch.step("Q", "e*mu*D", "request", "free backlog at the spike's end")
    ch.step("W_free", "Q/mu", "s", "wait of the last free request in it")
    ch.given("n_1", q(1, "request"), "one request", kind="spec", source="counting")
    ch.step("W_paid", "n_1/mu", "s", "mean wait of a paid request: the next slot to free")
    ch.step("X", "W_free/W_paid", "", "how much sooner paid traffic starts")
    return ch


def claims() -> list[Claim]:
    # Strict non-preemptive priority delivers "bypasses the backlog" by construction, and every figure of the
    # scenario (replicas, slots, answers, the spike) is the book's: the source gives no number to check.
    ch = priority_chain(**CLAIM)
    return [Claim(
        "priority-bypass", quote=QUOTE, source="spec/003 (the paragraph on load spikes and priority)",
        claimed="paid traffic bypasses the free backlog; in-flight generations keep their state",
        derived=(f"the book's figure: paid waits {fmt(ch['W_paid'].to('ms'))} for the next slot, the free backlog "
                 f"{fmt(ch['W_free'])}"),
        verdict=UNCHECKABLE,
        reason=(f"The source gives no fleet, spike or deadline, and strict priority without preemption puts a paid "
                f"request ahead of every queued free one by construction, so nothing of the source's is checked; in "
                f"the book's own scenario, {CLAIM['replicas']:,} replicas of {CLAIM['slots']:,} slots "
                f"({fmt(ch['R'] * ch['B'])}) and answers of {fmt(q(CLAIM['answer_s'], 's'))}, a slot frees every "
                f"{fmt(ch['W_paid'].to('ms'))}; a spike {fmt(CLAIM['spike_excess'] * 100)}% over the fleet for "
                f"{fmt(q(CLAIM['spike_s'], 's'))} queues {fmt(ch['Q'].m, style='plain')} free requests, whose last "
                f"waits {fmt(ch['W_free'])}: {fmt(ch['X'], style='plain')} times the paid wait."))]


# --- figure, what changes, exercises ---------------------------------------------------------------
def savings_bars(p) -> dict:
    ch = compute(p)
    return dict(labels=["signup friction", "per-IP / device limits", "CAPTCHA on anomalies", "output cap"],
                usd=[ch[k].to("USD").m for k in ("V_su", "V_ip", "V_ca", "V_cap")])


def what_changes(p, ch) -> dict:
    base = ch
    contract = catalog.price("h100-rental")["contract_1y"].q
    hi_ch = compute(p.replace(abusive_answer_tokens=2 * p.abusive_answer_tokens))
    cheap_ch = compute(p.replace(rent_usd_per_gpu_hour=contract.to("USD/GPU/hour").m))
    return {"wc-total": fmt(base["V_all"]), "wc-abuse-2x": f"{2 * p.abusive_answer_tokens:,}",
            "wc-total-abuse-2x": fmt(hi_ch["V_all"]), "wc-rent": fmt(contract),
            "wc-total-rent": fmt(cheap_ch["V_all"]), "wc-ws": fmt(base["M_ws"]), "wc-sse": fmt(base["M_sse"])}


def exercises(p, ch) -> dict:
    b = bucket_day(p.user_burst, p.user_per_hour)
    kv = kv_bytes_per_token(catalog.model("llama-3-70b"), 2)
    return {"ex1-burst": f"{p.user_burst:,}", "ex1-rate": f"{fmt(p.user_per_hour)} an hour",
            "ex1-max": f"{b['admitted']:,}",
            "ex2-tabs": fmt(p.open_sessions, style="plain"), "ex2-ws": fmt(ch["M_ws"]),
            "ex3-tokens": f"{p.history_tokens:,}", "ex3-kv": fmt((kv * q(p.history_tokens, "token")).to("GiB")),
            "ex3-txt": fmt(ch["s_txt"])}


SPEC = Spec("playground-abuse", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
