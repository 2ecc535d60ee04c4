"""sandbox-isolation: containers, gVisor, Firecracker microVMs and full VMs, and 50,000 sessions on hosts.

Each isolation adds a fixed memory overhead per session and a start time; a host holds the smaller of
floor(usable memory / (session memory + overhead)) and floor(vCPUs x oversubscription / session CPU)
sessions (utils.fleet.sandbox_hosts), and the fleet is the ceiling of sessions over that. The figures are the
projects' own published ones where they exist (Firecracker's specification, gVisor's performance data),
a named measurement for a full VM's boot, and this book's assumption for a full VM's memory overhead.
"""
from __future__ import annotations

from utils.chain import Chain
from utils.fleet import sandbox_hosts
from utils.params import Param, ParameterError, Result, Spec
from utils.units import duration, fmt, pct, q
from utils.verdicts import HOLDS, WRONG, Claim

FC_SPEC = ("Firecracker SPECIFICATION.md (github.com/firecracker-microvm/firecracker, read 2026-12-01): for a "
           "microVM with 1 vCPU and 128 MiB, the VMM threads' memory overhead is '<= 5 MiB' and it takes "
           "'<= 125 ms' from InstanceStart to the guest's /sbin/init; the same figures as Agache et al., "
           "'Firecracker: Lightweight Virtualization for Serverless Applications', NSDI 2020")
GV_DENSITY = ("gVisor performance guide (gvisor.dev/docs/architecture_guide/performance, read 2026-12-01) and its "
              "data website/performance/density.csv (github.com/google/gvisor, read 2026-12-01): an empty container "
              "costs 4,092,150 bytes of host memory under runc and 23,695,032 under runsc (ptrace platform, "
              "n1-standard-4), measured as host memory before and after fifty containers")
GV_STARTUP = ("secondhand: gVisor's website/performance/startup.csv as copied in the fork Sandbox-gVisor/Sandbox "
              "(read 2026-12-01; the upstream file was not in the index): an empty alpine container through Docker "
              "starts in 1,193 ms under runc and 1,144 ms under runsc; the guide notes most of it is Docker's")
VM_BOOT = ("Depot, 'How we got microVMs booting in under a second' (depot.dev/blog/optimizing-microvm-boot-times, "
           "read 2026-12-01): a stock Ubuntu cloud image on Cloud Hypervisor, with cloud-init, takes 7 to 9 s to "
           "run its first command; the midpoint")
VM_MEM = ("this book's assumption (no published figure found): a general-purpose guest OS (its kernel, page "
          "cache and services) resident beside the session's own memory, a quarter of a GiB")
# gVisor's density figures are its team's measurements; Firecracker's bound is its specification's promise
OVERHEAD_KIND = {"container": "measured-by-others", "gvisor": "measured-by-others", "firecracker": "spec",
                 "vm": "assumption"}
SESSION = "this book's assumption: an agent's code sandbox (a Python kernel, its packages and data)"
HOST = ("this book's assumption: a two-socket CPU host with 192 vCPUs and 768 GiB, the class of a cloud "
        "provider's largest general-purpose metal instance")

KINDS = ("container", "gvisor", "firecracker", "vm")
NAMES = {"container": "container (runc)", "gvisor": "gVisor (runsc)", "firecracker": "Firecracker microVM",
         "vm": "full VM"}

PARAMETERS = (
    Param("sessions", 50000, "concurrent agent sessions, one sandbox each", check="whole", source="the claim"),
    Param("session_mem_gib", 2.0, "memory a session's sandbox holds", unit="GiB", source=SESSION),
    Param("session_vcpu", 0.25, "mean vCPUs a session uses (tools run, then wait on the model)", source=SESSION),
    Param("host_mem_gib", 768.0, "host memory", unit="GiB", source=HOST),
    Param("host_vcpus", 192, "host vCPUs", check="whole", source=HOST),
    Param("host_reserved", 0.08, "share of host memory kept for the host OS, agent and page cache", check="share",
          source="this book's assumption"),
    Param("oversubscription", 1.0, "vCPUs promised per vCPU present", source="this book's assumption: none"),
    Param("host_usd_per_hour", 8.0, "price of one host-hour", unit="USD/h",
          source="this book's assumption: a large metal instance on demand, order of magnitude"),
    Param("container_overhead_mib", 3.9, "memory overhead per session, container", unit="MiB", source=GV_DENSITY),
    Param("gvisor_overhead_mib", 22.6, "memory overhead per session, gVisor", unit="MiB", source=GV_DENSITY),
    Param("firecracker_overhead_mib", 5.0, "memory overhead per session, Firecracker (VMM threads)", unit="MiB",
          source=FC_SPEC),
    Param("vm_overhead_mib", 256.0, "memory overhead per session, full VM (guest OS)", unit="MiB", source=VM_MEM),
    Param("container_start_s", 1.193, "start time, container through Docker", unit="s", source=GV_STARTUP),
    Param("gvisor_start_s", 1.144, "start time, gVisor through Docker", unit="s", source=GV_STARTUP),
    Param("firecracker_start_s", 0.125, "start time, Firecracker to the guest's init", unit="s", source=FC_SPEC),
    Param("vm_start_s", 8.0, "start time, full VM to its first command", unit="s", source=VM_BOOT),
)

RESULTS = tuple(Result(f"per_host_{k}", "", f"Sessions per host, {NAMES[k]}", of=f"d_{k}") for k in KINDS) + \
    tuple(Result(f"hosts_{k}", "node", f"Hosts for the sessions, {NAMES[k]}", of=f"H_{k}") for k in KINDS) + (
    Result("monthly_cost_firecracker", "USD", "Hosts' cost per month, Firecracker", of="M_firecracker"),
    Result("monthly_cost_vm", "USD", "Hosts' cost per month, full VM", of="M_vm"),
    Result("vm_extra_hosts", "node", "Extra hosts a full VM needs over Firecracker", of="dH"),
)

MIB_PER_GIB = 1024.0
HOURS_PER_MONTH = 730.0


def validate(p):
    if p.session_vcpu <= 0:
        raise ParameterError(f"session_vcpu must be positive, got {p.session_vcpu!r}")
    usable = p.host_mem_gib * (1 - p.host_reserved)
    for k in KINDS:             # every kind must fit one session, or its hosts are a division by zero sessions
        if p.session_mem_gib + p[f"{k}_overhead_mib"] / MIB_PER_GIB > usable:
            raise ParameterError(f"session_mem_gib={p.session_mem_gib!r} with {k}_overhead_mib="
                                 f"{p[f'{k}_overhead_mib']!r} does not fit on a host with {usable:.0f} GiB usable")
    if p.session_vcpu > p.host_vcpus * p.oversubscription:
        raise ParameterError(f"session_vcpu={p.session_vcpu!r} is more than a host offers")


def densities(p) -> dict:
    usable = p.host_mem_gib * (1 - p.host_reserved)
    return {k: sandbox_hosts.density(usable, p.host_vcpus, p.session_mem_gib, p.session_vcpu,
                                     overhead_mem=getattr(p, f"{k}_overhead_mib") / MIB_PER_GIB,
                                     oversubscription=p.oversubscription) for k in KINDS}


def compute(p) -> Chain:
    d = densities(p)
    ch = Chain("Fifty thousand sandboxes on hosts")
    ch.given("S", float(p.sessions), "sessions", kind="assumption", source=SPEC.source(p, "sessions"))
    ch.given("m_s", q(p.session_mem_gib, "GiB"), "memory per session", kind="assumption",
             source=SPEC.source(p, "session_mem_gib"))
    ch.given("c_s", float(p.session_vcpu), "vCPUs per session", kind="assumption",
             source=SPEC.source(p, "session_vcpu"))
    ch.given("M_h", q(p.host_mem_gib, "GiB"), "host memory", kind="assumption", source=SPEC.source(p, "host_mem_gib"))
    ch.given("r", float(p.host_reserved), "share kept for the host", kind="assumption",
             source=SPEC.source(p, "host_reserved"))
    ch.step("M_u", "M_h*(1 - r)", "GiB", "usable host memory")
    ch.given("V", float(p.host_vcpus * p.oversubscription), "vCPUs on offer per host", kind="assumption", source=HOST)
    ch.step("d_cpu", "V/c_s", "", "sessions per host by CPU (before rounding down)")
    for k in KINDS:
        ch.given(f"o_{k}", q(getattr(p, f"{k}_overhead_mib"), "MiB"), f"overhead, {NAMES[k]}",
                 kind=OVERHEAD_KIND[k],
                 source=SPEC.source(p, f"{k}_overhead_mib"))
        ch.given(f"d_{k}", float(d[k]["per_host"]), f"sessions per host, {NAMES[k]} (binds: {d[k]['binds']})",
                 kind="derived", source="utils.fleet.sandbox_hosts.density: the smaller of the two floors")
        ch.given(f"H_{k}", q(sandbox_hosts.hosts_for(p.sessions, d[k]["per_host"]), "node"), f"hosts, {NAMES[k]}",
                 kind="derived", source="ceil(S / sessions per host)")
    ch.given("P", q(p.host_usd_per_hour, "USD/h/node"), "host price", kind="assumption",
             source=SPEC.source(p, "host_usd_per_hour"))
    ch.given("T_m", q(HOURS_PER_MONTH, "h"), "hours a month", kind="derived", source="a year over twelve")
    ch.step("M_firecracker", "H_firecracker*P*T_m", "USD", "monthly cost, Firecracker")
    ch.step("M_vm", "H_vm*P*T_m", "USD", "monthly cost, full VM")
    ch.step("dH", "H_vm - H_firecracker", "node", "extra hosts for full VMs")
    ch.data["densities"] = d
    return ch


# --- the claim ------------------------------------------------------------------------------------------
QUOTE = ("Containers share a kernel with the code they run, the wrong boundary for code you did not write. "
         "gVisor, Firecracker microVMs and full VMs each buy a stronger one at a cost in memory, start time and "
         "GPU access.")


def claims() -> list[Claim]:

    p = SPEC.check()
    mem = {k: getattr(p, f"{k}_overhead_mib") for k in KINDS}
    start = {k: getattr(p, f"{k}_start_s") for k in KINDS}
    stronger = ("gvisor", "firecracker", "vm")
    slower = [k for k in stronger if start[k] > start["container"]]
    heavier = [k for k in stronger if mem[k] > mem["container"]]
    ok = len(slower) == len(stronger) and len(heavier) == len(stronger)
    return [Claim(
        "cost", quote=QUOTE, source="spec/001, the paragraph on sandbox isolation",
        claimed="each stronger boundary costs memory, start time and GPU access",
        derived=f"memory: {len(heavier)} of {len(stronger)} cost more; start time: {len(slower)} of {len(stronger)}",
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else (
            "each buys a stronger boundary, and each costs memory per session (gVisor's Sentry, a full VM's guest "
            "OS) and GPU access (gVisor's nvproxy qualifies few drivers, Firecracker has no device passthrough); "
            "start time is a cost only for a full VM, since a microVM boots faster than Docker starts a container"),
        reason=f"per session a container costs {fmt(mem['container'])} MiB, gVisor {fmt(mem['gvisor'])}, Firecracker's VMM "
               f"up to {fmt(mem['firecracker'])} and a full VM {fmt(mem['vm'])}; but gVisor starts in "
               f"{duration(start['gvisor'])} against runc's {duration(start['container'])} in the same Docker harness, "
               f"and Firecracker reaches its guest's init in {duration(start['firecracker'])}, so only the full VM's "
               f"{duration(start['vm'])} is a cost in start time.")]


# --- the page's tables, figure, what changes, exercises --------------------------------------------------
def figure_rows(p) -> list[list[str]]:
    src = {"container": "gVisor's density and startup data (runc)", "gvisor": "gVisor's density and startup data",
           "firecracker": "Firecracker's specification (NSDI 2020)", "vm": "Depot's boot measurement; memory assumed"}
    return [[NAMES[k], f"{fmt(getattr(p, f'{k}_overhead_mib'))} MiB", duration(getattr(p, f"{k}_start_s")), src[k]]
            for k in KINDS]


def boundary_rows() -> list[list[str]]:
    return [[NAMES["container"], "the host kernel, shared: namespaces, cgroups, seccomp",
             "the host's whole system-call interface", "device files passed in (NVIDIA container toolkit)"],
            [NAMES["gvisor"], "a user-space kernel (the Sentry) between the code and the host",
             "the Sentry's own narrow set of host calls, under seccomp", "nvproxy: a few qualified drivers and GPUs"],
            [NAMES["firecracker"], "hardware virtualisation (KVM) with a minimal device model",
             "KVM and a few virtio devices, the VMM jailed", "none: no device passthrough"],
            [NAMES["vm"], "hardware virtualisation with a full device model",
             "KVM and a general-purpose VMM's devices", "whole GPUs by PCI passthrough (VFIO)"]]


def fleet_rows(ch) -> list[list[str]]:
    rows = []
    for k in KINDS:
        d = ch.data["densities"][k]
        rows.append([NAMES[k], fmt(d["by_mem"]), fmt(d["by_cpu"]), d["binds"], fmt(ch[f"H_{k}"].m)])
    return rows


def density_curves(p, mems=None) -> dict:
    import numpy as np
    mems = np.geomspace(0.125, 16.0, 60) if mems is None else np.asarray(mems, float)
    out = {}
    for k in KINDS:
        out[NAMES[k]] = np.array([sandbox_hosts.hosts_for(p.sessions, densities(p.replace(session_mem_gib=float(m)))[k]
                                                          ["per_host"]) for m in mems])
    return dict(mems=mems, curves=out)


def mixed_check(n=2000, seed=0) -> dict:
    """A seeded mix of session sizes, packed first-fit decreasing, against the closed form's mean session."""
    import numpy as np


    p = SPEC.check()
    rng = np.random.default_rng(seed)
    mem = rng.lognormal(np.log(p.session_mem_gib) - 0.5 * 0.6 ** 2, 0.6, n)
    cpu = np.full(n, p.session_vcpu)
    usable = p.host_mem_gib * (1 - p.host_reserved)
    loads = sandbox_hosts.place(mem, cpu, usable, p.host_vcpus, overhead_mem=p.firecracker_overhead_mib / MIB_PER_GIB)
    lb = sandbox_hosts.lower_bound(mem, cpu, usable, p.host_vcpus, overhead_mem=p.firecracker_overhead_mib / MIB_PER_GIB)
    return dict(n=n, hosts=len(loads), bound=lb, fill=float(loads[:, 0].sum() / (len(loads) * usable)))


def what_changes(p, ch: Chain) -> dict:
    small = SPEC.extract(compute(p.replace(session_mem_gib=0.25, session_vcpu=0.05)))
    cpu = SPEC.extract(compute(p.replace(session_mem_gib=0.25)))
    return {"wc-small-mem": fmt(0.25), "wc-small-cpu": fmt(0.05), "wc-small-c": fmt(small["hosts_container"].m),
            "wc-small-g": fmt(small["hosts_gvisor"].m), "wc-small-f": fmt(small["hosts_firecracker"].m),
            "wc-small-v": fmt(small["hosts_vm"].m), "wc-cpu-f": fmt(cpu["hosts_firecracker"].m),
            "wc-cpu-v": fmt(cpu["hosts_vm"].m), "wc-cpu-vcpu": fmt(0.25)}


def exercises(p, ch: Chain) -> dict:
    r1 = SPEC.extract(compute(p.replace(session_mem_gib=16.0)))
    starts = p.sessions / 3600.0      # every session restarted once an hour
    cpu_s = {k: starts * getattr(p, f"{k}_start_s") for k in KINDS}
    return {"ex1-mem": fmt(16), "ex1-f": fmt(r1["hosts_firecracker"].m), "ex1-v": fmt(r1["hosts_vm"].m),
            "ex2-rate": fmt(starts), "ex2-f": fmt(cpu_s["firecracker"]), "ex2-v": fmt(cpu_s["vm"]),
            "ex3-share": pct((p.vm_overhead_mib / MIB_PER_GIB) / (p.session_mem_gib + p.vm_overhead_mib / MIB_PER_GIB))}


def case_rows() -> list[list[str]]:
    """The cases tests/fleet/test_sandbox_hosts.py holds, run live."""
    import numpy as np
    d = sandbox_hosts.density(700.0, 192.0, 2.0, 0.25, overhead_mem=0.25)
    same = len(sandbox_hosts.place([2.0] * 1000, [0.5] * 1000, 64.0, 32.0, overhead_mem=0.25))
    closed = sandbox_hosts.hosts_for(1000, sandbox_hosts.density(64.0, 32.0, 2.0, 0.5, overhead_mem=0.25)["per_host"])
    rng = np.random.default_rng(0)
    mem, cpu = rng.uniform(0.25, 8.0, 400), rng.uniform(0.1, 2.0, 400)
    loads = sandbox_hosts.place(mem, cpu, 64.0, 32.0, overhead_mem=0.1)
    over = bool(np.any(loads[:, 0] > 64.0 + 1e-9) or np.any(loads[:, 1] > 32.0 + 1e-9))
    try:
        sandbox_hosts.place([100.0], [1.0], 64.0, 32.0)
        big = "placed"
    except ValueError:
        big = "refused"
    return [["two-GiB sessions with a quarter-GiB overhead on a memory-short host", "memory binds", d["binds"]],
            ["a thousand identical sessions, packed", "the closed form's host count", f"{fmt(same)} against {fmt(closed)}"],
            ["a seeded mix of sizes on both axes", "no host overfilled", "none overfilled" if not over else "overfilled"],
            ["a session larger than a host", "refused", big]]


SPEC = Spec("sandbox-isolation", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
