"""Two workers, one delayed-scaling state: the shared-state hazard across threads, failing closed.

A separate experiment from the training run (torch-free): worker A enters a `DelayedScaleState`
and holds it mid-transition while worker B tries to enter. With one shared state, B is refused with
`ConcurrentStateError` (recorded as data) instead of racing; with one state per worker both commit.
The overlap is forced with events, so the outcome is deterministic.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lowprec.formats import FloatFormat

from .state import (ConcurrentStateError, DelayedScaleState, begin_logical_quantization, commit_quant_observation,
                    observe_for_future_state, resolve_format)

__all__ = ["ConcurrencyResult", "simulate_concurrent_entry"]


@dataclass
class ConcurrencyResult:
    """Outcome of two workers quantizing with shared or per-worker delayed state."""

    per_worker_state: bool
    outcomes: dict[str, str]  # worker → "ok" or "ConcurrentStateError: ..."
    commits: dict[str, int]  # state owner → commits

    @property
    def failed_closed(self) -> bool:
        return any(v != "ok" for v in self.outcomes.values())

    def to_dict(self) -> dict[str, Any]:
        return {"per_worker_state": self.per_worker_state, "outcomes": dict(self.outcomes),
                "commits": dict(self.commits), "failed_closed": self.failed_closed}


def simulate_concurrent_entry(per_worker_state: bool = False, fmt: str | FloatFormat = "E4M3FN",
                              seed: int = 0) -> ConcurrencyResult:
    """Worker A enters its state and holds it mid-transition; worker B then enters. With one
    shared state B is refused (`ConcurrentStateError`, recorded as data) and A finishes; with
    per-worker states both commit. The overlap is forced with events, so it is deterministic."""
    f = resolve_format(fmt)
    x = np.random.default_rng(seed).standard_normal((8, 16)).astype(np.float32)
    shared = DelayedScaleState("shared", f.max)
    states = ({"A": DelayedScaleState("workerA", f.max), "B": DelayedScaleState("workerB", f.max)}
              if per_worker_state else {"A": shared, "B": shared})
    inside, release = threading.Event(), threading.Event()
    outcomes: dict[str, str] = {}

    def transition(worker: str, hold: bool) -> None:
        state = states[worker]
        try:
            with state.exclusive(worker):
                if hold:
                    inside.set()
                    release.wait(timeout=10.0)
                snap = begin_logical_quantization(state, 0, 0)
                commit_quant_observation(state, replace(observe_for_future_state(x, snap),
                                                        layer_id=0 if worker == "A" else 1))
            outcomes[worker] = "ok"
        except ConcurrentStateError as exc:
            outcomes[worker] = f"{type(exc).__name__}: {exc}"
        finally:
            if not hold:
                release.set()

    a = threading.Thread(target=transition, args=("A", True))
    a.start()
    inside.wait(timeout=10.0)
    transition("B", False)
    a.join(timeout=10.0)
    owners = {s.owner: s.commits for s in states.values()}
    return ConcurrencyResult(per_worker_state, {k: outcomes[k] for k in sorted(outcomes)}, owners)
