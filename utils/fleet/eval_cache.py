"""A content-addressed cache of eval completions: the key is a hash of everything that decides the output.

key = sha256(checkpoint id, prompt, sampling parameters), the parameters in a canonical form (sorted keys,
so a dict built in another order is the same key). A completion is worth caching only when the same key
gives the same text again: greedy decoding (temperature 0), or sampling at a fixed temperature with a
seed that is part of the key. Sampling without a seed is refused, because a cached sample would be served
as if it were a fresh draw, and a re-run would silently stop measuring the model's variance.

Chapters: eval-pipeline.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field


def canonical(sampling: dict) -> dict:
    """Sampling parameters as the key sees them: temperature 0 ignores top_p and the seed (greedy is greedy)."""
    s = dict(sampling)
    t = float(s.get("temperature", 0.0))
    if t < 0:
        raise ValueError(f"temperature must be >= 0, got {t!r}")
    if t == 0.0:
        keep = {k: v for k, v in s.items() if k in ("max_tokens", "stop")}
        return {"temperature": 0.0, **keep}
    if s.get("seed") is None:
        raise ValueError("sampling at temperature > 0 needs a seed to be cacheable (the key must fix the draw)")
    s["temperature"] = t
    return s


def key(checkpoint: str, prompt: str, sampling: dict) -> str:
    """The content address: a change in any byte of the three changes the key."""
    if not checkpoint:
        raise ValueError("checkpoint id must be non-empty (a hash of the weights, not 'latest')")
    blob = json.dumps([checkpoint, prompt, canonical(sampling)], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class EvalCache:
    """A dict from content address to completion, counting hits and misses."""
    store: dict = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def get_or_run(self, checkpoint: str, prompt: str, sampling: dict, run) -> str:
        """The cached completion, or run(prompt) stored under its key: the pipeline calls only this."""
        k = key(checkpoint, prompt, sampling)
        if k in self.store:
            self.hits += 1
            return self.store[k]
        self.misses += 1
        out = run(prompt)
        self.store[k] = out
        return out

    @property
    def hit_rate(self) -> float:
        n = self.hits + self.misses
        return self.hits / n if n else 0.0
