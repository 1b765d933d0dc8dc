"""The progress bar of long `lowprec` commands (simulate, crosscheck, export), drawn by tqdm.

Simulations and exporters take an optional `progress(done, total)` callback (`ProgressFn`);
`ProgressBar` is one: it draws on stderr only when that is a terminal, only once a run has taken
`delay_s` seconds, and never with --quiet. tqdm is imported when the first bar is made, so a
command that never shows one does not pay for it.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, TextIO

ProgressFn = Callable[[int, int], None]

__all__ = ["ProgressBar", "ProgressFn"]


class ProgressBar:
    """Callable `bar(done, total)`: moves a tqdm bar to `done` of `total`; `close()` ends it."""

    def __init__(self, label: str, quiet: bool = False, stream: TextIO | None = None,
                 delay_s: float = 1.0) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay_s = delay_s
        self._bar: Any = None
        if self.enabled:
            from tqdm import tqdm

            self._bar = tqdm(desc=self.label, total=None, file=self.stream, delay=delay_s,
                             leave=True, dynamic_ncols=True, unit="step")

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            return
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
