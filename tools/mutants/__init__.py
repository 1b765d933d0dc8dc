"""Mutation testing for lowprec: seeded bugs that the test suite must catch.

A mutant is data (`Mutant`): one file, one exact snippet of it (which must occur exactly once), the
snippet that replaces it, what bug that models, and the tests that should notice. `run` applies each
mutant, one at a time, to a scratch copy of the tree (never to the working tree), runs its tests
with `-x`, and reports it caught (a test failed, with the first failing test), survived (all
passed) or timed out (counted as caught: the bug hangs the code). The catalogue lives in
`tools.mutants.catalogue` and grows with the code; `./dev mutants` runs it
(`python -m tools.mutants --help`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Mutant", "apply_mutant", "snippet_count"]


@dataclass(frozen=True)
class Mutant:
    """One seeded bug: `original` (exactly once in `path`) becomes `replacement`."""

    name: str  # short unique id, e.g. "delayed-clip-decode-scale"
    path: str  # file relative to the repository root
    original: str  # exact snippet, occurring once in the file
    replacement: str  # the bug
    description: str  # the realistic mistake this models
    tests: tuple[str, ...]  # pytest arguments selecting the tests that should catch it
    keyword: str = ""  # optional `-k` expression narrowing the selection
    env: tuple[tuple[str, str], ...] = ()  # extra environment, e.g. (("LOWPREC_CODEC", "numpy"),)
    slow: bool = False  # its tests are marked slow (left out of `./dev test`): run them with --slow


def snippet_count(root: Path, m: Mutant) -> int:
    """How often the mutant's original snippet occurs in its file under `root`."""
    return (root / m.path).read_text(encoding="utf-8").count(m.original)


def apply_mutant(root: Path, m: Mutant) -> str:
    """Write the mutant into `root` (a scratch copy); return the file's original text to restore."""
    f = root / m.path
    text = f.read_text(encoding="utf-8")
    n = text.count(m.original)
    if n != 1:
        raise ValueError(f"mutant {m.name}: its snippet occurs {n} times in {m.path} (must be once)")
    f.write_text(text.replace(m.original, m.replacement), encoding="utf-8")
    return text
