"""lowprec's optional dependencies, and the one-line message when one is missing.

torch is needed only where autograd or a torch backend is the point: the recompute simulation and
widget, the torch cross-check backends, the GPU kernels and benchmarks. `pip install lowprec` works
without it; `pip install 'lowprec[torch]'` (or `[gpu]` for Triton, `[all]` for both) adds it.
`EXTRAS` maps each optional top-level module to the extra that installs it (the test suite checks
it against pyproject.toml; Dask, for `lowprec analyze --scheduler`, is the `cluster` extra);
`missing_dependency(exc)` turns the ModuleNotFoundError of a missing
optional module into the line every face prints, and returns None for anything else (a missing
module of lowprec itself is a bug, never tolerated).

This module is a leaf: it imports nothing of lowprec.
"""

from __future__ import annotations

__all__ = ["EXTRAS", "missing_dependency"]

#: optional top-level module → the extra of lowprec that installs it
EXTRAS: dict[str, str] = {"torch": "torch", "triton": "gpu", "dask": "cluster", "distributed": "cluster"}


def missing_dependency(exc: BaseException, what: str = "this") -> str | None:
    """'<what> needs torch, which is not installed: pip install 'lowprec[torch]'' when `exc` is the
    ModuleNotFoundError of an optional dependency; None otherwise."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    root = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(root)
    if extra is None:
        return None
    return f"{what} needs {root}, which is not installed: pip install 'lowprec[{extra}]'"
