"""A stand-in simulation for the worker-process tests of `lowprec.app.work`: `work.run_simulation`
imports a simulation's module by name inside the worker and calls its `SIMULATION.run`, so what a
test wants to happen in the worker must live in an importable module. The config is a word."""

from __future__ import annotations

import os
import time
from typing import Any, Callable


class _Simulation:
    name = "worker-test"
    module = __name__

    @staticmethod
    def run(config: str, progress: Callable[[int, int], None] | None) -> Any:
        if config == "pid":  # where and how nicely it ran
            return os.getpid(), os.getpriority(os.PRIO_PROCESS, 0)
        if config == "wait":  # reports progress until a newer request stops it (work.Superseded)
            assert progress is not None
            for step in range(3000):
                progress(step, 3000)
                time.sleep(0.01)
            return "not superseded"
        if config == "bad":
            raise ValueError("config must be one of 'pid', 'wait', 'bad', 'die', got 'bad'")
        if config == "die":  # what the kernel's OOM killer does to a worker
            os._exit(3)
        raise AssertionError(config)


SIMULATION = _Simulation()
