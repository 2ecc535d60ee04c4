"""bill-of-materials-10k: a ten-thousand-GPU cluster, line by line, each line from one reason.

The FLOPs the model needs set the run length on the GPUs (6ND over G u R); the failure rate sets the spare
pool (Little's law and a Poisson quantile, utils.fleet.cluster); the switch radix sets the pod (k^2/4 ports) and
the fabric (a rail-optimised three-tier fat tree, core tapered s:1); the checkpoint sets the filesystem
(size over time, Young's interval); the parts set the power (servers, switches and optics, storage, PUE).
The model is one parameter: its counted parameters set the compute (those multiplied per token) and the
checkpoint (all of them).
"""
from __future__ import annotations

import math
from fractions import Fraction

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.fleet import cluster
from utils.measured import latest, metric_of
from utils.models import param_count
from utils.params import Param, ParameterError, Result, Spec
from utils.units import counted, fmt, pct, q, short
from utils.verdicts import HOLDS, READING, UNCHECKABLE, WRONG, Claim, rounds_to

PARAMETERS = (
    Param("n_gpus", 10000, "GPUs the training job runs on", unit="GPU", check="whole", source="the claim"),
    Param("gpus_per_node", 8, "GPUs per node (one HGX baseboard)", unit="GPU", check="whole",
          source="HGX H100: 8 GPUs per baseboard"),
    Param("nodes_per_pod", 128, "nodes per pod (a pod is bought, cabled and powered whole)", check="whole",
          source="k^2/4 ports of a radix-64 fat tree over 8 rails"),
    Param("switch_radix", 64, "ports per fabric switch (NDR InfiniBand, Quantum-2 class)", check="whole",
          source="catalog: ib-ndr.switch_ports"),
    Param("checkpoint_bytes", 5e12, "bytes in one checkpoint", unit="B", source="the claim (5 TB)"),
    Param("checkpoint_seconds", 60.0, "seconds allowed to write it", unit="s", source="the claim (under a minute)"),
    Param("model", "llama-3-405b", "the model the cluster trains: a catalog key or a config.json path",
          check="model", source="catalog: Llama-3.1-405B, the claim's model"),
    Param("n_tokens", 15.6e12, "training tokens", unit="token", source="catalog: llama-3-405b-pretraining.tokens"),
    Param("mfu", 0.4, "model FLOPs utilisation on the 6N basis (attention and recomputed FLOPs not counted; fleet-size "
          "converts other bases), a fraction of the per-GPU rate the chain uses", check="fraction",
          source="this book's assumption (the Llama 3 run reports 38 to 43%)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, the claim's GPU"),
    Param("core_oversubscription", 1.5, "spine-to-core taper, down:up ports (1 = full bisection)",
          source="this book's design choice"),
    Param("server_w_per_gpu", 575.0, "W per GPU, rest of the server (DGX H100 nameplate 10.2 kW / 8 - 700 W GPU)",
          unit="W/GPU", check="non_negative",
          source="catalog: h100-server.power_per_gpu (NVIDIA DGX H100 datasheet, 10.2 kW max) less the H100's TDP"),
    Param("pue", 1.2, "facility power / IT power", source="this book's assumption: a new AI hall"),
    Param("repair_days", 3.0, "days to return a failed node to service", unit="day",
          source="this book's assumption"),
    Param("spare_confidence", 0.99, "probability the spare pool covers the nodes out of service", check="share",
          source="this book's assumption"),
)

RESULTS = (
    Result("nodes", "", "Nodes provisioned (whole pods)", of="n"),
    Result("pods", "", "Pods", of="P"),
    Result("gpus_provisioned", "GPU", "GPUs provisioned", of="G_prov"),
    Result("spare_nodes", "", "Spare nodes the failure rate demands", of="S_n"),
    Result("spare_gpus", "GPU", "Spare GPUs (whole nodes)", of="S_g"),
    Result("nics", "", "Fabric NICs (one per GPU)", of="E_n"),
    Result("switches", "", "Fabric switches at the chosen core taper", of="N_sw"),
    Result("switches_full_bisection", "", "Fabric switches at full bisection", of="N_fb"),
    Result("transceivers", "", "Transceivers, one per link end", of="X"),
    Result("optical_modules", "", "Optical modules (twin-port on the switch side)", of="M"),
    Result("checkpoint_write_bandwidth", "B/s", "Checkpoint write bandwidth", of="W"),
    Result("checkpoint_interval", "minute", "Checkpoint interval (Young)", of="tau"),
    Result("it_power", "W", "Critical IT power", of="P_IT"),
    Result("facility_power", "W", "Facility power (IT x PUE)", of="P_fac"),
    Result("power_per_gpu", "W/GPU", "All-in facility power per provisioned GPU", of="p_all"),
    Result("train_days", "day", "Training time on the job's GPUs", of="T"),
)

SWITCH_W = 750.0            # this book's assumption: a 1U 51.2 Tb/s switch without optics
STORAGE_SERVER_W = 1000.0   # this book's assumption: one NVMe storage server
CKPT_BYTES_PER_PARAM = 12   # fp32 master weights + Adam first and second moments, 4 bytes each
SUPERPOD_COLUMNS = ("nodes", "leaf_switches", "spine_switches", "core_switches", "cables_node_leaf",
                    "cables_leaf_spine", "cables_spine_core")


def superpod_table() -> dict[int, tuple]:
    """NVIDIA's DGX SuperPOD (B200) table from the catalog (superpods.toml): {SUs of 32 nodes: (nodes, leaf, spine,
    core, node-leaf, leaf-spine, spine-core cables)}, smallest first."""
    rows = sorted((catalog.entry("superpod", key) for key in catalog.keys("superpod")),
                  key=lambda e: as_float(e.q("scalable_units")))
    return {int(as_float(e.q("scalable_units"))): tuple(int(as_float(e.q(c))) for c in SUPERPOD_COLUMNS) for e in rows}


SUPERPOD = superpod_table()


def cited(kind: str, key: str, field: str) -> str:
    """A chain row's source for a catalog value: the entry and field, then the document and the date it was read."""
    return f"catalog {kind} {key}.{field}: {catalog.entry(kind, key)[field].cite}"


def dgx_h100_w() -> dict:
    """DGX H100 system power in W (8 GPUs), from the catalog's per-GPU figures: the datasheet's maximum, and the
    low and high ends of its typical draw (the maximum's alternatives)."""
    v = catalog.price("h100-server")["power_per_gpu"]
    node = lambda x: as_float(x * q(8, "GPU"), "W")
    typical = sorted(node(a.q) for a in v.alternatives)
    return dict(max=node(v.q), typical=(typical[0], typical[-1]))


def reference_run() -> dict:
    """The Llama 3 405B pre-training run (the Llama 3 paper, sec. 3.3.1 and 3.3.4), from the catalog."""
    run = catalog.run("llama-3-405b-pretraining")
    return dict(entry=run, interruptions=int(as_float(run.q("interruptions"))),
                unexpected=int(as_float(run.q("interruptions_unexpected"))),
                gpus=int(as_float(run.q("gpus"), "GPU")), days=int(as_float(run.q("snapshot_days"), "day")),
                hardware_share=as_float(run.q("unexpected_hardware_share")))


def hardware_rate() -> float:
    """Hardware failures per GPU-day in the reference run."""
    r = reference_run()
    return r["hardware_share"] * r["unexpected"] / (r["gpus"] * r["days"])


def rate_used(gpu) -> tuple:
    """The per-GPU bf16 rate the chain divides by: the measured matmul rate if recorded, else the datasheet."""
    record = latest("matmul-rate", gpu.key)
    if record is not None:
        return metric_of(record, "bf16_rate").to("FLOP/s"), "measured", f"book/measurements/{record['_file']}"
    return gpu.q("bf16_dense"), "spec", gpu["bf16_dense"].cite


def layout(n_gpus, gpus_per_node, nodes_per_pod, repair_days, spare_confidence) -> dict:
    """Nodes, spares and pods in plain integers (the chain's first lines, for checks and sweeps)."""
    n_job = math.ceil(n_gpus / gpus_per_node)
    spares = cluster.poisson_quantile(hardware_rate() * n_gpus * repair_days, spare_confidence)
    return dict(n_job=n_job, spares=spares, pods=math.ceil((n_job + spares) / nodes_per_pod))


MAX_DOWN = 200_000       # failures one repair window may expect: cluster.poisson_quantile sums a term for each


def validate(p) -> None:
    k = p.switch_radix
    if k < 4 or k % 2:
        raise ParameterError(f"switch_radix must be an even number >= 4, got {k!r}")
    if p.core_oversubscription < 1 or p.pue < 1:
        name = "core_oversubscription" if p.core_oversubscription < 1 else "pue"
        raise ParameterError(f"{name} must be >= 1, got {p[name]!r}")
    if (down := hardware_rate() * p.n_gpus * p.repair_days) > MAX_DOWN:
        raise ParameterError(f"n_gpus x repair_days expects {fmt(down)} hardware failures in one repair window; the "
                             f"spare pool's Poisson sum takes a term each, and above {MAX_DOWN:,} (a million GPUs "
                             f"with a year-long repair expect {fmt(hardware_rate() * 1e6 * 365)}) it runs past a second")
    pods = layout(p.n_gpus, p.gpus_per_node, p.nodes_per_pod, p.repair_days, p.spare_confidence)["pods"]
    ports = p.gpus_per_node * p.nodes_per_pod
    if pods > 1 and ports > cluster.pod_limit(k):
        raise ParameterError(f"nodes_per_pod: with the spare pool the cluster needs {pods} pods, and a pod of {ports} "
                             f"ports is more than the {cluster.pod_limit(k)} a radix-{k} pod can join below a core tier")
    if pods == 1 and ports > k ** 2 // 2:
        raise ParameterError(f"nodes_per_pod: {ports} ports is more than the {k ** 2 // 2} a two-tier radix-{k} "
                             "fabric can join")
    if pods > k:
        raise ParameterError(f"n_gpus: {pods} pods is more than the {k} a three-tier radix-{k} fat tree can join; "
                             "raise switch_radix or nodes_per_pod")


def bill(n_gpus, gpus_per_node, nodes_per_pod, switch_radix, checkpoint_bytes, checkpoint_seconds, *,
         model, n_tokens, mfu, gpu, core_oversubscription, server_w_per_gpu, pue, repair_days,
         spare_confidence, source="parameters cell") -> Chain:
    """The whole bill as one chain. model and gpu are catalog Entries; source is one source for every input
    the caller set, or a function of the parameter's name (compute passes the spec's, so a default cites its own)."""
    src = source if callable(source) else (lambda name: source)
    fabric = catalog.interconnect("ib-ndr")
    run = reference_run()["entry"]
    counts = param_count(model)
    ch = Chain(f"Bill of materials: {fmt(q(n_gpus, 'GPU'))}, {gpu.name}")
    # --- compute: the FLOPs set the run length on n_gpus --------------------------------------------
    ch.given("N", counts["active"], "parameters multiplied per token", kind="spec",
             source=f"{model.name}, counted from its configuration")
    ch.given("D", q(n_tokens, "token"), "training tokens", source=src("n_tokens"),
             kind="spec" if src("n_tokens").startswith("catalog") else "assumption")
    ch.given("k_6", q(6, "FLOP/parameter/token"), "training FLOPs per parameter per token",
             kind="derived", source="the 6ND chapter")
    ch.step("C", "k_6*N*D", "FLOP", "training compute")
    rate, rate_kind, rate_src = rate_used(gpu)
    ch.given("R", rate / q(1, "GPU"), "bf16 dense rate per GPU", kind=rate_kind, source=rate_src)
    ch.given("u", mfu, "MFU (fraction of R sustained)", kind="assumption", source=src("mfu"))
    ch.given("G", q(n_gpus, "GPU"), "GPUs the job runs on", kind="assumption", source=src("n_gpus"))
    ch.solve("T", "C = G*u*R*T", "day", "training time on G GPUs")
    # --- nodes, spare pool, pods ----------------------------------------------------------------
    ch.given("g", q(gpus_per_node, "GPU"), "GPUs per node", kind="assumption", source=src("gpus_per_node"))
    ch.step("n_job", "ceiling(G/g)", "", "nodes the job needs")
    ch.given("I_u", run["interruptions_unexpected"], "unexpected interruptions in the reference run")
    ch.given("f_hw", run["unexpected_hardware_share"], "share of them that was hardware")
    ch.given("G_ref", run["gpus"], "GPUs in the reference run")
    ch.given("T_ref", run["snapshot_days"], "length of its snapshot")
    ch.step("lambda_hw", "f_hw*I_u/(G_ref*T_ref)", "1/GPU/day", "hardware failure rate per GPU")
    ch.step("F", "lambda_hw*G", "1/day", "hardware failures per day in the job")
    ch.given("t_r", q(repair_days, "day"), "time to return a failed node to service", kind="assumption",
             source=src("repair_days"))
    ch.step("L_out", "F*t_r", "", "nodes out of service on average (Little's law)")
    spares = cluster.poisson_quantile(as_float(ch["L_out"], ""), spare_confidence)
    ch.given("p_s", spare_confidence, "confidence the pool covers the nodes out", kind="assumption",
             source=src("spare_confidence"))
    ch.given("S_n", spares, "spare nodes: Poisson(L_out) quantile at p_s", kind="derived",
             source="utils.fleet.cluster.poisson_quantile")
    ch.step("S_g", "S_n*g", "GPU", "spare GPUs (whole nodes)")
    ch.step("n_req", "n_job + S_n", "", "nodes with the spare pool")
    ch.given("n_pod", nodes_per_pod, "nodes per pod", kind="assumption", source=src("nodes_per_pod"))
    ch.step("P", "ceiling(n_req/n_pod)", "", "pods (bought whole)")
    ch.step("n", "P*n_pod", "", "nodes provisioned")
    ch.step("G_prov", "n*g", "GPU", "GPUs provisioned")
    ch.step("n_extra", "n - n_job", "", "nodes beyond the job's (spares and rounding)")
    # --- fabric ----------------------------------------------------------------------------------
    ch.given("m", q(1, "1/GPU"), "NIC ports per GPU, one rail each", kind="assumption",
             source="rail-optimised design: one NIC per GPU")
    ch.step("E_n", "m*G_prov", "", "NICs (fabric endpoints)")
    ch.step("r", "m*g", "", "rails per node")
    catalog_radix = switch_radix == as_float(fabric.q("switch_ports"))
    ch.given("k", switch_radix, "switch radix (ports)", kind="spec" if catalog_radix else "assumption",
             source=fabric["switch_ports"].cite if catalog_radix else src("switch_radix"))
    ch.step("E_p", "r*n_pod", "", "endpoints per pod")
    ch.step("L_p", "r*ceiling(2*n_pod/k)", "", "leaves per pod (one rail, k/2 nodes each)")
    ch.given("x", 1 if round(as_float(ch["P"], "")) > 1 else 0, "core tier present (1 with more than one pod)",
             kind="derived", source="the pod count")
    ch.given("s", core_oversubscription, "core-tier oversubscription (spine ports down:up)",
             kind="assumption", source=src("core_oversubscription"))
    ch.step("U_p", "x*ceiling(E_p/s)", "", "links from each pod up to the core")
    ch.step("S_p", "ceiling((E_p + U_p)/k)", "", "spines per pod")
    ch.step("N_leaf", "P*L_p", "", "leaf switches")
    ch.step("N_spine", "P*S_p", "", "spine switches")
    ch.step("N_core", "ceiling(P*U_p/k)", "", "core switches")
    ch.step("N_sw", "N_leaf + N_spine + N_core", "", "switches")
    ch.step("N_fb", "P*L_p + P*ceiling((1 + x)*E_p/k) + ceiling(P*x*E_p/k)", "", "switches at full bisection")
    ch.step("K", "P*(2*E_p + U_p)", "", "links: node-leaf, leaf-spine, spine-core")
    ch.step("X", "2*K", "", "transceivers (one per link end)")
    ch.step("M_sw", "ceiling(P*(3*E_p + 2*U_p)/2)", "", "switch-side twin-port modules")
    ch.step("M", "E_n + M_sw", "", "optical modules (one per NIC, plus the switch side)")
    ch.given("b", fabric.q("bandwidth_unidirectional"), "port rate, one direction", kind="spec",
             source=fabric["bandwidth_unidirectional"].cite)
    ch.step("b_core", "b/s", "GB/s", "per-GPU bandwidth between pods")
    # --- checkpoint ------------------------------------------------------------------------------
    ch.given("B", q(checkpoint_bytes, "B"), "checkpoint size", kind="assumption", source=src("checkpoint_bytes"))
    ch.given("delta", q(checkpoint_seconds, "s"), "time allowed to write it", kind="assumption", source=src("checkpoint_seconds"))
    ch.step("W", "B/delta", "GB/s", "checkpoint write bandwidth")
    ch.given("N_all", counts["total"], "all the model's parameters", kind="spec",
             source=f"{model.name}, counted from its configuration")
    ch.given("beta", q(CKPT_BYTES_PER_PARAM, "B/parameter"), "checkpoint bytes per parameter",
             kind="assumption", source="fp32 master weights and two Adam moments, 4 bytes each")
    ch.step("B_N", "beta*N_all", "TB", "the model's checkpoint")
    ch.step("B_GPU", "B/G", "MB/GPU", "checkpoint shard per GPU")
    sustained, peak = run["storage_sustained"], run["storage_peak"]
    ch.given("W_T", sustained.q.to("B/s"), "Tectonic sustained throughput", kind=sustained.kind, source=sustained.cite)
    ch.given("n_T", run["storage_servers"], "Tectonic SSD servers")
    ch.step("w_srv", "W_T/n_T", "GB/s", "sustained write rate per storage server")
    ch.step("N_st", "ceiling(W/w_srv)", "", "storage servers for the checkpoint rate, sustained")
    ch.given("W_pk", peak.q.to("B/s"), "Tectonic peak throughput", kind=peak.kind, source=peak.cite)
    ch.step("w_pk", "W_pk/n_T", "GB/s", "peak write rate per storage server")
    ch.step("N_pk", "ceiling(W/w_pk)", "", "storage servers if the peak rate held (optimistic)")
    ch.step("lambda_job", "I_u/(G_ref*T_ref)", "1/GPU/day", "interruption rate per GPU (all unexpected)")
    ch.step("M_job", "1/(lambda_job*G)", "hour", "job's mean time between interruptions")
    ch.step("tau", "sqrt(2*delta*M_job)", "minute", "checkpoint interval (Young)")
    ch.step("o", "delta/tau + tau/(2*M_job)", "", "time lost to checkpoints and rework")
    # --- power -----------------------------------------------------------------------------------
    ch.given("p_gpu", gpu.q("tdp") / q(1, "GPU"), "GPU TDP", kind="spec", source=gpu["tdp"].cite)
    ch.given("p_srv", q(server_w_per_gpu, "W/GPU"), "rest of the server, per GPU", kind="assumption",
             source=src("server_w_per_gpu"))
    ch.step("P_nodes", "G_prov*(p_gpu + p_srv)", "MW", "servers")
    ch.given("p_sw", q(SWITCH_W, "W"), "switch without optics", kind="assumption", source="this book's assumption")
    ch.given("p_tw", fabric["twin_port_module_power"], "twin-port switch-side module",
             source=cited("interconnect", "ib-ndr", "twin_port_module_power"))
    ch.step("P_net", "N_sw*p_sw + M_sw*p_tw", "kW", "network")
    ch.given("p_st", q(STORAGE_SERVER_W, "W"), "storage server", kind="assumption", source="this book's assumption")
    ch.step("P_st", "N_st*p_st", "kW", "storage")
    ch.step("P_IT", "P_nodes + P_net + P_st", "MW", "critical IT power")
    ch.given("PUE", pue, "power usage effectiveness", kind="assumption", source=src("pue"))
    ch.step("P_fac", "PUE*P_IT", "MW", "facility power")
    ch.step("p_all", "P_fac/G_prov", "W/GPU", "all-in facility power per provisioned GPU")
    return ch


SIZING = ("n_gpus", "gpus_per_node", "nodes_per_pod", "switch_radix", "checkpoint_bytes", "checkpoint_seconds")


def _args(p) -> tuple[tuple, dict]:
    return tuple(p[n] for n in SIZING), {n: p[n] for n in p if n not in SIZING}


def compute(p) -> Chain:
    args, kw = _args(p)
    return bill(*args, **kw, source=lambda name: SPEC.source(p, name))


def count(ch, name) -> int:
    return int(round(as_float(ch[name], "")))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Ten thousand GPUs is 1,280 nodes, ten pods, about 700 switches, a filesystem that swallows a 5 TB "
         "checkpoint in under a minute and a 14 MW feed. The bill of materials with a reason on every line, "
         "from the FLOPs the model needs to the spare pool the failure rate demands.")
SOURCE = "spec/000, paragraph on the ten-thousand-GPU bill of materials"
CLAIM = dict(n_gpus=10_000, nodes=1280, pods=10, switches=700, checkpoint_bytes=5e12, checkpoint_seconds=60,
             power_w=14e6)


def radix() -> int:
    return int(as_float(catalog.interconnect("ib-ndr").q("switch_ports")))


def book_inputs() -> dict:
    """The claim's cluster: the claim's model and GPU, DGX H100 nameplate, and this book's assumptions."""
    h100 = catalog.accelerator("h100-sxm")
    return dict(model=catalog.model("llama-3-405b"),
                n_tokens=as_float(reference_run()["entry"].q("tokens"), "token"), mfu=0.4, gpu=h100,
                server_w_per_gpu=dgx_h100_w()["max"] / 8 - as_float(h100.q("tdp"), "W"), pue=1.2, repair_days=3.0,
                spare_confidence=0.99)


def claim_args() -> tuple:
    k = radix()
    return (CLAIM["n_gpus"], 8, cluster.pod_limit(k) // 8, k, CLAIM["checkpoint_bytes"], CLAIM["checkpoint_seconds"])


def feed_chain(tapered) -> Chain:
    """The other reading of the power: what a 14 MW feed allows per server at the claim's PUE."""
    feed = Chain("What a 14 MW feed allows per server at PUE 1.2")
    feed.given("P_14", q(CLAIM["power_w"], "W").to("MW"), "the claim's feed", kind="spec", source=SOURCE)
    feed.given("PUE", tapered["PUE"], "power usage effectiveness", kind="assumption", source="this book")
    for name in ("G_prov", "p_gpu", "P_net", "P_st"):
        feed.given(name, tapered[name], next(r.label for r in tapered.rows if r.name == name),
                   kind="derived", source="the claim's chain")
    feed.given("g", q(8, "GPU"), "GPUs per node", kind="spec", source="the claim")
    feed.solve("p_srv", "P_14 = PUE*(G_prov*(p_gpu + p_srv) + P_net + P_st)", "W/GPU", "rest of the server per GPU")
    feed.step("P_node", "(p_gpu + p_srv)*g", "kW", "draw per node")
    return feed


@memoised
def checks() -> dict:
    """The claim's chains: tapered 3:2 and at full bisection, the feed reading, the taper for 700."""
    book = book_inputs()
    tapered = bill(*claim_args(), **book, core_oversubscription=1.5, source="the claim")
    full = bill(*claim_args(), **book, core_oversubscription=1.0, source="the claim")
    feed = feed_chain(tapered)
    w = as_float(tapered["W"], "B/s")
    return dict(tapered=tapered, full=full, feed=feed,
                s_700=cluster.taper_for(CLAIM["switches"], count(tapered, "E_n"), radix()),
                t_write_405=as_float(tapered["B_N"], "B") / w,
                t_write_16=16 * as_float(tapered["N_all"], "parameter") / w,
                pue_at_14=CLAIM["power_w"] / as_float(tapered["P_IT"], "W"),
                node_at_14=as_float(feed["P_node"], "W"))


def superpod_route() -> list[tuple]:
    """Second route for the switch counts: NVIDIA's DGX SuperPOD table, row by row, against utils.fleet.cluster."""
    k, rows = radix(), []
    for su, (nodes, leaf, spine, core, c1, c2, c3) in SUPERPOD.items():
        pod = nodes if nodes * 8 <= k ** 2 // 2 else cluster.pod_limit(k) // 8
        got = cluster.fat_tree(nodes // pod, pod, 8, k, 1.0)
        rows.append((su, (got["leaf"], got["spine"], got["core"], got["cables"]), (leaf, spine, core, (c1, c2, c3))))
    return rows


def taper_text(s: float) -> str:
    """A taper as a ratio of ports: 1.45:1."""
    return f"{s:.2f}:1"


def claims() -> list[Claim]:
    ck = checks()
    t, f, k = ck["tapered"], ck["full"], radix()
    nodes_ok = count(t, "n") == CLAIM["nodes"] and count(t, "P") == CLAIM["pods"]
    fb = count(f, "N_fb")
    # each figure rounded to the claim's own figures (14 MW: two; about 700: one)
    it_ok, fac_ok = (rounds_to(t[k], q(CLAIM["power_w"], "W"), 2) for k in ("P_IT", "P_fac"))
    return [
        Claim("nodes", quote="Ten thousand GPUs is 1,280 nodes, ten pods", source=SOURCE,
              claimed=f"{fmt(CLAIM['nodes'])} nodes, {CLAIM['pods']} pods",
              derived=f"{fmt(count(t, 'n'))} nodes, {count(t, 'P')} pods", verdict=HOLDS if nodes_ok else WRONG,
              nearest_true="" if nodes_ok else f"{fmt(count(t, 'n'))} nodes in {count(t, 'P')} pods",
              reason=f"{fmt(CLAIM['n_gpus'])} GPUs are {fmt(count(t, 'n_job'))} nodes; pods of "
                     f"{fmt(cluster.pod_limit(k) // 8)} (the k-squared-over-four ports of a radix-{k} fat tree) round "
                     f"that up to {count(t, 'P')} pods, {fmt(count(t, 'n'))} nodes, whose {count(t, 'n_extra')} extra "
                     f"nodes hold the {count(t, 'S_n')}-node spare pool"),
        Claim("switches", quote="about 700 switches", source=SOURCE, claimed=f"about {fmt(CLAIM['switches'])}",
              derived=f"{fmt(fb)} at full bisection", verdict=HOLDS if rounds_to(fb, CLAIM["switches"], 1) else WRONG,
              nearest_true=(f"{fmt(CLAIM['n_gpus'])} GPUs on radix-{k} switches need {fmt(fb)} switches at full "
                            f"bisection; about {fmt(CLAIM['switches'])} only with the core tier tapered about "
                            f"{taper_text(ck['s_700'])}"),
              reason=f"a rail-optimised three-tier fat tree of radix-{k} switches needs {fmt(fb)} at full bisection, "
                     f"{pct(fb / CLAIM['switches'] - 1)} more than claimed; the claim needs a core taper of "
                     f"{taper_text(ck['s_700'])} that the sentence never states, and a taper chosen to land is not a reading"),
        Claim("checkpoint", quote="a filesystem that swallows a 5 TB checkpoint in under a minute", source=SOURCE,
              claimed="5 TB in under a minute", derived=f"{fmt(t['W'])} sustained writes",
              verdict=UNCHECKABLE,
              reason=f"the sentence sets a requirement, and {fmt(t['B'], 'TB')} in {fmt(t['delta'])} is "
                     f"{fmt(t['W'])} of writes; the source names no model, so that a checkpoint weighs "
                     f"{fmt(t['B'], 'TB')} is the book's figure: a {short(as_float(t['N_all'], 'parameter'))}-parameter "
                     f"model's fp32 master weights and Adam moments are {fmt(t['B_N'])}, written in "
                     f"{fmt(q(ck['t_write_405'], 's'), digits=2)}"),
        Claim("power", quote="a 14 MW feed", source=SOURCE, claimed=fmt(q(CLAIM["power_w"], "W"), style="eng"),
              derived=f"{fmt(t['P_IT'])} IT at nameplate; {fmt(t['P_fac'])} with PUE {fmt(t['PUE'])}",
              verdict=READING if it_ok and not fac_ok else (HOLDS if fac_ok else WRONG),
              reading=(f"'a {fmt(q(CLAIM['power_w'], 'W'), style='eng')} feed' read as the critical IT power "
                       "delivered to the racks (what a data hall is sold by), not the utility's intake, which also "
                       "runs the cooling"),
              reason=f"the critical IT load of {fmt(t['G_prov'])} at DGX H100 nameplate is {fmt(t['P_IT'])}; a "
                     f"utility feed that also cools them at PUE {fmt(t['PUE'])} needs {fmt(t['P_fac'])}, or servers "
                     f"held to {fmt(ck['feed']['P_node'])} each"),
    ]


# --- the page's numbers, figures and exercises ------------------------------------------------------
def closed_forms() -> dict:
    """The switch count without ceilings as a closed form in the taper, and Young's interval, by sympy."""
    import sympy as sp
    N, k, s, n_sw = sp.symbols("N k s N_sw", positive=True)
    closed = sp.simplify(N / (k / 2) + (N + N / s) / k + (N / s) / k)
    tau, delta, M = sp.symbols("tau delta M", positive=True)
    overhead = delta / tau + tau / (2 * M)
    tau_opt = sp.solve(sp.diff(overhead, tau), tau)[0]
    return dict(switches=closed, taper=sp.solve(sp.Eq(n_sw, closed), s)[0], overhead=overhead, tau_opt=tau_opt,
                overhead_opt=sp.simplify(overhead.subs(tau, tau_opt)))


def bill_rows(p, ch) -> list[tuple[str, str, str]]:
    """The bill as a table: line, quantity, reason."""
    c = lambda name: count(ch, name)
    line = lambda name, unit=None: fmt(ch[name], unit)
    s_frac = Fraction(p.core_oversubscription).limit_denominator(12)
    return [
        ("Training compute", line("C"), f"6ND for {short(as_float(ch['N'], 'parameter'))} parameters on "
                                        f"{short(p.n_tokens)} tokens"),
        ("Rate per GPU", line("R", "TFLOP/s/GPU"),
         f"{'measured matmul rate' if rate_used(p.gpu)[1] == 'measured' else 'datasheet dense bf16'}, used at "
         f"{pct(p.mfu)} MFU"),
        ("Training time", line("T"), f"C / (G u R) on {fmt(ch['G'])}"),
        ("Nodes for the job", fmt(c("n_job")), f"{fmt(ch['G'])} / {fmt(ch['g'])} per node, rounded up"),
        ("Spare nodes", fmt(c("S_n")), f"{fmt(ch['F'])} hardware failures at {fmt(ch['t_r'])} each keep "
                                       f"{fmt(ch['L_out'])} nodes out on average; Poisson quantile at {pct(p.spare_confidence)}"),
        ("Pods", fmt(c("P")), f"{fmt(c('n_req'))} nodes in pods of {p.nodes_per_pod}, rounded up"),
        ("Nodes", fmt(c("n")), f"whole pods; {fmt(c('n_extra'))} beyond the job's, of which {fmt(c('S_n'))} are "
                               "the spare pool"),
        ("GPUs", line("G_prov"), f"{fmt(c('n'))} nodes x {p.gpus_per_node}"),
        ("NICs", fmt(c("E_n")), "one per GPU, each on its own rail"),
        ("Leaf switches", fmt(c("N_leaf")), f"{fmt(c('L_p'))} per pod: {fmt(c('r'))} rails x {p.nodes_per_pod} "
                                            f"nodes / {p.switch_radix // 2} per leaf"),
        ("Spine switches", fmt(c("N_spine")), f"{fmt(c('S_p'))} per pod carry {fmt(c('E_p'))} ports down and "
                                              f"{fmt(c('U_p'))} up"),
        ("Core switches", fmt(c("N_core")), f"{fmt(c('P'))} pods x {fmt(c('U_p'))} uplinks / {p.switch_radix} ports"),
        ("Switches", fmt(c("N_sw")), f"core taper {s_frac.numerator}:{s_frac.denominator}; {fmt(c('N_fb'))} at "
                                     "full bisection"),
        ("Links", fmt(c("K")), "node-leaf and leaf-spine at full rate, spine-core tapered"),
        ("Transceivers", fmt(c("X")), "one per link end"),
        ("Optical modules", fmt(c("M")), f"{fmt(c('E_n'))} single-port at the NICs, {fmt(c('M_sw'))} twin-port at "
                                         "the switches"),
        ("Checkpoint write bandwidth", line("W"), f"{fmt(ch['B'], 'TB')} in {fmt(ch['delta'])}"),
        ("Storage servers", fmt(c("N_st")), f"at the {line('w_srv')} per server Meta's Tectonic sustains "
                                            f"({fmt(c('N_pk'))} at its peak rate, which a sustained write cannot count on)"),
        ("Checkpoint interval", line("tau"), f"Young's interval with a job MTBF of {line('M_job')}; "
                                             f"{pct(ch['o'])} of the time lost"),
        ("Critical IT power", line("P_IT"), f"servers {line('P_nodes')}, network {line('P_net')}, storage "
                                            f"{line('P_st')}"),
        ("Facility power", line("P_fac"), f"IT x PUE {fmt(p.pue)}; {line('p_all')} all-in"),
    ]


def chain_texts(p, ch) -> dict:
    r, k = reference_run(), radix()
    return {"ref-interruptions": fmt(r["interruptions"]), "ref-days": fmt(q(r["days"], "day")),
            "ref-gpus": fmt(q(r["gpus"], "GPU")), "ref-unexpected": fmt(r["unexpected"]),
            "ref-hw-share": pct(r["hardware_share"]), "radix-catalog": fmt(k),
            "pod-max-ports": counted(cluster.pod_limit(k), "ports"), "pod-max-nodes": fmt(cluster.pod_limit(k) // 8),
            "gpn-text": fmt(8), "intro-gpus": counted(p.n_gpus, "training GPUs"),
            "nodes-n": counted(count(ch, "n"), "nodes"), "switches-n": counted(count(ch, "N_sw"), "switches"),
            "sw-fb-n": counted(count(ch, "N_fb"), "switches"), "nics-n": counted(count(ch, "E_n"), "NICs"),
            "transceivers-n": counted(count(ch, "X"), "transceivers"), "modules-n": counted(count(ch, "M"), "modules"),
            "intro-gpus-2": fmt(q(p.n_gpus, "GPU")), "train-flops": fmt(ch["C"]), "mfu-text": pct(p.mfu),
            "nodes-job": counted(count(ch, "n_job"), "nodes"), "nodes-out": fmt(ch["L_out"])}


def check_texts(ck) -> dict:
    t, f, feed, dgx = ck["tapered"], ck["full"], ck["feed"], dgx_h100_w()
    c = lambda name, ch=t: fmt(count(ch, name))
    return {
        "claim-gpus": fmt(q(CLAIM["n_gpus"], "GPU")), "claim-nodes": counted(CLAIM["nodes"], "nodes"),
        "claim-pods": fmt(CLAIM["pods"]), "claim-switches": fmt(CLAIM["switches"]),
        "claim-power": fmt(q(CLAIM["power_w"], "W"), style="eng"),
        "claim-ckpt": fmt(q(CLAIM["checkpoint_bytes"], "B"), style="eng"),
        "c-nodes-job": counted(count(t, "n_job"), "nodes"), "c-spares": c("S_n"), "c-extra": c("n_extra"),
        "c-gpus-prov": fmt(t["G_prov"]), "c-fb": c("N_fb", f), "c-fb-leaf": c("N_leaf", f),
        "c-fb-spine": c("N_spine", f), "c-fb-core": c("N_core", f), "c-fb-over": pct(count(f, "N_fb") / CLAIM["switches"] - 1),
        "c-taper-sw": c("N_sw"), "c-taper-spine": c("N_spine"), "c-taper-core": c("N_core"),
        "c-s700": taper_text(ck["s_700"]), "c-bcore": fmt(t["b_core"]), "c-b": fmt(t["b"].to("GB/s")),
        "c-W": fmt(t["W"]), "c-sus": fmt(t["W_T"], "TB/s"), "c-nT": counted(count(t, "n_T"), "servers"),
        "c-wsrv": fmt(t["w_srv"]), "c-Nst": counted(count(t, "N_st"), "storage servers"), "c-Pst": fmt(t["P_st"]),
        "c-pk": fmt(t["W_pk"], "TB/s"), "c-Npk": counted(count(t, "N_pk"), "servers"),
        "c-overhead": pct(t["o"]), "c-params": short(as_float(t["N_all"], "parameter")), "c-BN": fmt(t["B_N"]),
        "c-t405": fmt(q(ck["t_write_405"], "s"), digits=2),
        "c-N-at-5": short(CLAIM["checkpoint_bytes"] / CKPT_BYTES_PER_PARAM),
        "c-B16": fmt(q(16, "B/parameter") * t["N_all"], "TB"), "c-t16": fmt(q(ck["t_write_16"], "s"), digits=2),
        "c-N-at-16": short(CLAIM["checkpoint_bytes"] / 16), "c-pit": fmt(t["P_IT"]),
        "c-pit-gpu": fmt(t["P_IT"] / t["G_prov"], "W/GPU"), "c-claim-gpu": fmt(q(CLAIM["power_w"], "W") / t["G_prov"], "W/GPU"),
        "c-pfac": fmt(t["P_fac"]), "c-pue14": f"{ck['pue_at_14']:.3f}", "c-pue": fmt(t["PUE"]),
        "c-node-max": fmt(q(dgx["max"], "W"), "kW"), "c-node-14": fmt(feed["P_node"]),
        "c-typ-lo": fmt(q(dgx["typical"][0], "W"), "kW"), "c-typ-hi": fmt(q(dgx["typical"][1], "W"), "kW"),
        "c-srv": fmt(t["p_srv"]), "c-su-max": fmt(max(SUPERPOD)), "c-su-gpus": fmt(q(SUPERPOD[max(SUPERPOD)][0] * 8, "GPU")),
    }


def taper_sweep(p, ch, tapers) -> dict:
    """Switches against the core taper for this run's pods: whole switches and the closed form."""
    import numpy as np
    P, r = count(ch, "P"), count(ch, "r")
    stepwise = np.array([cluster.fat_tree(P, p.nodes_per_pod, r, p.switch_radix, s)["total"] for s in tapers])
    closed = np.array([cluster.switches_closed_form(count(ch, "E_n"), p.switch_radix, s) for s in tapers])
    marks = {name: (s, cluster.fat_tree(P, p.nodes_per_pod, r, p.switch_radix, s)["total"])
             for s, name in ((1.0, "full bisection"), (p.core_oversubscription, "this page"), (7.0, "Meta, 7:1"))}
    # For the claim's cluster: the tapers at which the count is "about" the claim's.
    k = radix()
    claim_counts = np.array([cluster.fat_tree(10, cluster.pod_limit(k) // 8, 8, k, s)["total"] for s in tapers])
    band = np.asarray(tapers)[[rounds_to(c, CLAIM["switches"], 1) for c in claim_counts]]   # "about": one figure
    return dict(stepwise=stepwise, closed=closed, marks=marks, pods=P, band=(float(band.min()), float(band.max())))


def power_stacks(ch, ck) -> dict:
    """All-in watts per provisioned GPU, by part, for this run, the claim at nameplate and held to 14 MW."""
    def stack(c, p_srv=None):
        g = c["G_prov"]
        parts = {"GPU (TDP)": as_float(c["p_gpu"], "W/GPU"),
                 "rest of server": as_float(p_srv if p_srv is not None else c["p_srv"], "W/GPU"),
                 "network": as_float(c["P_net"] / g, "W/GPU"), "storage": as_float(c["P_st"] / g, "W/GPU")}
        parts["cooling and losses (PUE)"] = sum(parts.values()) * (as_float(c["PUE"], "") - 1)
        return parts
    return {"this page's\nparameters": stack(ch), "claim at\nnameplate": stack(ck["tapered"]),
            "claim, servers held\nto a 14 MW feed": stack(ck["tapered"], ck["feed"]["p_srv"])}


def claim_per_gpu() -> float:
    return CLAIM["power_w"] / (CLAIM["nodes"] * 8)


def variant(p, **changes) -> Chain:
    return compute(p.replace(**changes))


def headroom(p, ch) -> int:
    """The most GPUs beyond n_gpus that the same pods hold (spares grow with the job, so step and re-check)."""
    job = p.n_gpus
    while layout(job + p.gpus_per_node, p.gpus_per_node, p.nodes_per_pod, p.repair_days,
                 p.spare_confidence)["pods"] <= count(ch, "P"):
        job += p.gpus_per_node
    return job - p.n_gpus


def what_changes(p, ch) -> dict:
    P, r = count(ch, "P"), count(ch, "r")
    srv_typ = dgx_h100_w()["typical"][1] / 8 - as_float(catalog.accelerator("h100-sxm").q("tdp"), "W")
    return {"wc-sw-1": counted(cluster.fat_tree(P, p.nodes_per_pod, r, p.switch_radix, 1.0)["total"], "switches"),
            "wc-sw-now": counted(count(ch, "N_sw"), "switches"),
            "wc-sw-7": counted(cluster.fat_tree(P, p.nodes_per_pod, r, p.switch_radix, 7.0)["total"], "switches"),
            "wc-pue-lo": "1.1", "wc-fac-lo": fmt(ch["P_IT"] * 1.1, "MW"), "wc-pue-hi": "1.4",
            "wc-fac-hi": fmt(ch["P_IT"] * 1.4, "MW"), "wc-srv-typ": fmt(q(srv_typ, "W/GPU")),
            "wc-fac-typ": fmt(variant(p, server_w_per_gpu=srv_typ)["P_fac"]),
            "wc-rep-1": fmt(q(1, "day")), "wc-rep-now": fmt(q(p.repair_days, "day")), "wc-rep-7": fmt(q(7, "day")),
            "wc-spare-1": fmt(count(variant(p, repair_days=1.0), "S_n")),
            "wc-spare-7": fmt(count(variant(p, repair_days=7.0), "S_n")),
            "wc-headroom": counted(headroom(p, ch), "GPUs"), "wc-next-nodes": counted((P + 1) * p.nodes_per_pod, "nodes")}


EX1_DAYS = 90


def exercises(p, ch) -> dict:
    """Worked answers: GPUs for a fixed run length, a slower filesystem, a bigger switch."""
    fleet = Chain("GPUs for a fixed run length")
    fleet.given("C", ch["C"], "training compute", kind="derived", source="the chain")
    fleet.given("R", ch["R"], "rate per GPU", kind="derived", source="the chain")
    fleet.given("u", ch["u"], "MFU", kind="assumption", source=SPEC.source(p, "mfu"))
    fleet.given("T", q(EX1_DAYS, "day"), "run length", kind="assumption", source="the exercise")
    fleet.solve("G", "C = G*u*R*T", "GPU", "GPUs the run needs")
    g1 = math.ceil(as_float(fleet["G"], "GPU"))
    ex1 = compute(p.replace(n_gpus=g1))
    ex2 = compute(p.replace(checkpoint_seconds=p.checkpoint_seconds * 10))
    k3 = int(as_float(catalog.interconnect("ib-xdr").q("switch_ports")))
    pod3 = cluster.pod_limit(k3) // 8
    ex3 = bill(CLAIM["n_gpus"], 8, pod3, k3, CLAIM["checkpoint_bytes"], CLAIM["checkpoint_seconds"], **book_inputs(),
               core_oversubscription=1.0)
    return {"ex1-days": counted(EX1_DAYS, "days"), "ex1-gpus": fmt(q(g1, "GPU")), "ex1-pods": fmt(count(ex1, "P")),
            "ex1-nodes": counted(count(ex1, "n"), "nodes"), "ex2-delta": fmt(ex2["delta"].to("minute")),
            "ex2-tau": fmt(ex2["tau"]), "ex2-o": pct(ex2["o"]), "ex2-o-now": pct(ch["o"]), "ex3-radix": fmt(k3),
            "ex3-pod": fmt(pod3), "ex3-pods": fmt(count(ex3, "P")), "ex3-nodes": counted(count(ex3, "n"), "nodes"),
            "ex3-sw": fmt(count(ex3, "N_sw")), "ex3-extra": fmt(count(ex3, "n_extra"))}


SPEC = Spec("bill-of-materials-10k", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
