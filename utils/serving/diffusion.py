"""Video diffusion: the latent a video becomes, a DiT pass over it, and the job queue minute-long requests need.

The arithmetic. A causal video VAE compresses time by s_t and each side by s_s: 81 frames of 720 x 1280
become 1 + (81 - 1)/4 = 21 latent frames of 90 x 160 with 16 channels (Wan 2.1: stride (4, 8, 8)). The
DiT patchifies the latent (1 x 2 x 2 per token), so it sees 21 x 45 x 80 = 75,600 tokens, every one
attending to every other, at every one of the sampler's steps, twice per step under classifier-free
guidance (a pass with the prompt and one without). One pass is 2 x params x tokens FLOPs for the matrix
products plus 4 x tokens^2 x width per layer for QK^T and AV.

The queue. A request that takes minutes is a job, not a call: the client submits and gets a job id at
once (the same id again for a retried submission with the same idempotency key), watches progress events
(one per denoising step, each with a sequence number, so a reconnecting client asks for the events after
the last it saw), and may cancel. A queued job is cancelled by removing it; a running one stops at the
next step boundary, because a step is the unit the GPU cannot interrupt, and the GPU goes to the next
job. `JobQueue` is that design, single-worker and clock-injected so tests run it on a fake clock.

Chapters: video-diffusion.
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field


class LatentShapeError(ValueError):
    """A video size the VAE and the patchifier cannot take whole."""


def latent_shape(frames: int, height: int, width: int, stride=(4, 8, 8), channels: int = 16,
                 patch=(1, 2, 2)) -> dict:
    """The latent of a causal video VAE and the DiT tokens over it. The first frame is encoded alone and
    each later group of s_t frames becomes one latent frame, so frames must be 1 + a multiple of s_t; each
    side must divide by the spatial stride times the patch, or the patchifier would drop a border."""
    s_t, s_h, s_w = stride
    p_t, p_h, p_w = patch
    if frames < 1 or (frames - 1) % s_t:
        raise LatentShapeError(f"frames must be 1 + a multiple of {s_t}, got {frames}")
    if height % (s_h * p_h) or width % (s_w * p_w) or height <= 0 or width <= 0:
        raise LatentShapeError(f"height and width must be positive multiples of {s_h * p_h}, got {height} x {width}")
    t, h, w = 1 + (frames - 1) // s_t, height // s_h, width // s_w
    if t % p_t:
        raise LatentShapeError(f"{t} latent frames do not divide by the temporal patch {p_t}")
    return dict(t=t, h=h, w=w, channels=channels, elements=t * h * w * channels,
                tokens=(t // p_t) * (h // p_h) * (w // p_w), pixels=frames * height * width)


def dit_pass_flops(params: float, tokens: float, layers: int, width: int) -> dict:
    """One DiT forward pass over `tokens`: 2 x params x tokens (every weight, every token) plus full
    self-attention, 4 x tokens^2 x width per layer (QK^T and AV, 2 T^2 d each; no causal mask in a DiT)."""
    linear = 2.0 * params * tokens
    attention = 4.0 * tokens ** 2 * width * layers
    return dict(linear=linear, attention=attention, total=linear + attention)


@dataclass(frozen=True)
class DiT:
    """A video diffusion transformer as the arithmetic needs it (Wan 2.1's layout: each block has self-
    attention, cross-attention to the text, and a two-matrix GELU FFN). Only the query and output
    projections of the cross-attention act on video tokens; its K and V act on the text's tokens."""
    key: str
    name: str
    layers: int
    width: int
    ffn_width: int
    heads: int
    stride: tuple = (4, 8, 8)
    patch: tuple = (1, 2, 2)
    channels: int = 16
    text_tokens: int = 512
    default_steps: int = 50
    cfg: bool = True
    source: str = ""

    def params(self) -> int:
        """Weight-matrix parameters: self-attention 4 d^2, cross-attention 4 d^2, FFN 2 d f, per block."""
        return self.layers * (8 * self.width ** 2 + 2 * self.width * self.ffn_width)

    def params_per_video_token(self) -> int:
        """The parameters each video token is multiplied by: all but the cross-attention's K and V."""
        return self.layers * (6 * self.width ** 2 + 2 * self.width * self.ffn_width)


_WAN_SRC = ("Wan 2.1 configs (wan/configs/wan_t2v_14B.py, wan_t2v_1_3B.py, shared_config.py: vae_stride (4, 8, 8), "
            "patch_size (1, 2, 2), text_len 512, sample_fps 16) in the MLX port of Wan-Video/Wan2.1, "
            "https://github.com/ml-explore/mlx-examples/tree/main/video/Wan2.1/wan/configs; Wan VAE z_dim 16; "
            "generate.py defaults: 50 sampling steps for text-to-video, guide scale 5.0 (two passes a step), "
            "read 2026-12-01")
DITS = {
    "wan2.1-t2v-14b": DiT("wan2.1-t2v-14b", "Wan 2.1 T2V 14B", layers=40, width=5120, ffn_width=13824, heads=40,
                          source=_WAN_SRC),
    "wan2.1-t2v-1.3b": DiT("wan2.1-t2v-1.3b", "Wan 2.1 T2V 1.3B", layers=30, width=1536, ffn_width=8960, heads=12,
                           source=_WAN_SRC),
}


def dit(key: str) -> DiT:
    if key not in DITS:
        raise KeyError(f"unknown DiT {key!r}; valid: {', '.join(DITS)}")
    return DITS[key]


# --- the job queue -----------------------------------------------------------------------------------
QUEUED, RUNNING, DONE, CANCELLED, FAILED = "queued", "running", "done", "cancelled", "failed"
FINAL = (DONE, CANCELLED, FAILED)


@dataclass
class Job:
    id: str
    steps: int
    key: str | None = None
    state: str = QUEUED
    done_steps: int = 0
    cancel_requested: bool = False
    submitted_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    events: list = field(default_factory=list)   # (seq, kind, payload), seq increasing per job


class JobQueue:
    """A FIFO of video jobs served one step at a time by one GPU worker.

    submit(steps, key) -> job id (a retried submit with the same key returns the first id; nothing is
    queued twice); events(job_id, after=seq) -> the events a client has not seen; cancel(job_id);
    position(job_id) and eta(job_id) from the measured seconds per step; work() runs one step of the job
    at the head (the worker's loop calls it; `step_fn(job)` does the GPU's work for one step)."""

    def __init__(self, clock, step_seconds: float):
        if step_seconds <= 0:
            raise ValueError(f"step_seconds must be > 0, got {step_seconds!r}")
        self.clock, self.step_seconds = clock, float(step_seconds)
        self.jobs: dict[str, Job] = {}
        self._by_key: dict[str, str] = {}
        self._queue: deque[str] = deque()
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)

    def _emit(self, job: Job, kind: str, **payload) -> None:
        job.events.append((next(self._seq), kind, dict(payload, at=self.clock())))

    def submit(self, steps: int, key: str | None = None) -> str:
        if key is not None and key in self._by_key:
            return self._by_key[key]       # a retried POST: same job, no second GPU-minute
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps!r}")
        job = Job(f"job-{next(self._ids)}", int(steps), key, submitted_at=self.clock())
        self.jobs[job.id] = job
        if key is not None:
            self._by_key[key] = job.id
        self._queue.append(job.id)
        self._emit(job, "queued", position=len(self._queue))
        return job.id

    def events(self, job_id: str, after: int = 0) -> list:
        return [e for e in self.jobs[job_id].events if e[0] > after]

    def position(self, job_id: str) -> int:
        """Jobs ahead of this one (0: running or next); -1 once it is finished."""
        job = self.jobs[job_id]
        return -1 if job.state in FINAL else list(self._queue).index(job_id)

    def eta(self, job_id: str) -> float:
        """Seconds until this job finishes: the steps left of every job ahead of it and its own."""
        job = self.jobs[job_id]
        if job.state in FINAL:
            return 0.0
        ahead = list(self._queue)[:list(self._queue).index(job_id) + 1]
        return self.step_seconds * sum(self.jobs[j].steps - self.jobs[j].done_steps for j in ahead)

    def cancel(self, job_id: str) -> str:
        """Queued: removed now. Running: flagged, and stopped at the next step boundary by work().
        Finished: nothing changes (cancelling twice, or after the result, is not an error)."""
        job = self.jobs[job_id]
        if job.state == QUEUED:
            self._queue.remove(job_id)
            self._finish(job, CANCELLED)
        elif job.state == RUNNING:
            job.cancel_requested = True
        return job.state

    def _finish(self, job: Job, state: str, **payload) -> None:
        job.state, job.finished_at = state, self.clock()
        self._emit(job, state, steps=job.done_steps, **payload)

    def work(self, step_fn=None) -> str | None:
        """One denoising step of the job at the head of the queue; returns its id (None: queue empty).
        Cancellation is honoured here, between steps, so a cancelled job costs at most one more step."""
        if not self._queue:
            return None
        job = self.jobs[self._queue[0]]
        if job.cancel_requested:
            self._queue.popleft()
            self._finish(job, CANCELLED)
            return job.id
        if job.state == QUEUED:
            job.state, job.started_at = RUNNING, self.clock()
            self._emit(job, "started")
        try:
            if step_fn is not None:
                step_fn(job)
        except Exception as e:  # a failed step fails the job, never the worker: the next job still runs
            self._queue.popleft()
            self._finish(job, FAILED, error=type(e).__name__)
            return job.id
        job.done_steps += 1
        self._emit(job, "progress", step=job.done_steps, of=job.steps)
        if job.done_steps == job.steps:
            self._queue.popleft()
            self._finish(job, DONE)
        return job.id
