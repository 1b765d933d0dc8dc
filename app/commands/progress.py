"""A terminal progress bar for `lowprec simulate`: shown only on a TTY, after one second, and
never with --quiet. Simulations take an optional `progress(done, total)` callback; this is one."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


class ProgressBar:
    """Callable `bar(done, total)`; draws on stderr when it is a terminal and the run is slow."""

    def __init__(self, label: str, quiet: bool = False, stream: TextIO | None = None,
                 delay_s: float = 1.0) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.delay_s = delay_s
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or time.monotonic() - self.start < self.delay_s:
            return
        frac = done / total if total else 1.0
        width = 30
        fill = int(round(frac * width))
        self.stream.write(f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


ProgressFn = Callable[[int, int], None]
