"""lowprec's optional dependencies, and the one-line message when one is missing.

torch is needed only where autograd or a torch backend is the point: the recompute simulation and
widget, the torch cross-check backends, the GPU kernels and benchmarks. lowprec works without it;
its `torch` extra (or `gpu` for Triton, `all` for both) adds it. `EXTRAS` maps each optional
top-level module to the extra that installs it (the test suite checks it against pyproject.toml;
Dask, for `lowprec analyze --scheduler`, is the `cluster` extra); `missing_dependency(exc)` turns
the ModuleNotFoundError of a missing optional module into the line every face prints, and returns
None for anything else (a missing module of lowprec itself is a bug, never tolerated).

The command in that line is the one that works for *this* install (`install_command`): lowprec
records how it was installed (PEP 610's `direct_url.json`), so a package from an index gets
`pip install 'lowprec[torch]'`, an editable install of a checkout `pip install -e '/path/to/checkout[torch]'`,
one installed from a folder or a wheel file that path with the extra, one from a VCS or an URL
`pip install 'lowprec[torch] @ URL'`; code imported from a checkout that is not installed at all
(PYTHONPATH) gets the checkout's path.

This module is a leaf: it imports nothing of lowprec (only the standard library, lazily).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = ["EXTRAS", "install_command", "missing_dependency", "not_installed"]

#: optional top-level module → the extra of lowprec that installs it
EXTRAS: dict[str, str] = {"torch": "torch", "triton": "gpu", "dask": "cluster", "distributed": "cluster",
                          "playwright": "test"}
DIST = "lowprec"


def _package_root() -> Path:
    """The folder that holds the imported `lowprec` package: site-packages, or a checkout's root
    (which holds the layers too)."""
    return Path(__file__).resolve().parent.parent


def _installed() -> tuple[dict[str, Any] | None, bool]:
    """(the distribution's direct_url.json or None, whether the imported package is the
    installed distribution's)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return None, False
    text = dist.read_text("direct_url.json")
    try:
        direct = json.loads(text) if text else None
    except ValueError:
        direct = None
    here = _package_root()
    site = Path(str(dist.locate_file(""))).resolve()
    if direct is None and site == here and (here / "pyproject.toml").is_file():
        # the checkout's own `lowprec.egg-info` (an editable install writes it beside pyproject.toml,
        # and the checkout on sys.path finds it first): metadata of the source tree, not an install
        return None, False
    mine = here == site
    if not mine and isinstance(direct, dict) and direct.get("dir_info", {}).get("editable"):
        mine = _url_path(str(direct.get("url", ""))) == here
    return direct if isinstance(direct, dict) else None, mine


def _url_path(url: str) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path)).resolve()


def install_command(extra: str, *, direct_url: dict[str, Any] | None = None, installed: bool | None = None,
                    checkout: Path | None = None) -> str:
    """The pip command that adds lowprec's `extra` to this install (see the module docstring).

    The keyword arguments replace what is read from the environment (for tests): `direct_url`, the
    distribution's PEP 610 record (None: installed from an index); `installed`, whether the imported
    package is an installed distribution at all; `checkout`, the folder of an uninstalled checkout."""
    if installed is None:
        direct_url, installed = _installed()
    if not installed:
        root = checkout if checkout is not None else _package_root()
        if (root / "pyproject.toml").is_file():
            return f"pip install -e '{root}[{extra}]'"
        return f"pip install '{DIST}[{extra}]'"
    if not direct_url:
        return f"pip install '{DIST}[{extra}]'"
    url = str(direct_url.get("url", ""))
    path = _url_path(url)
    if "dir_info" in direct_url and path is not None:
        editable = bool(direct_url["dir_info"].get("editable"))
        return f"pip install {'-e ' if editable else ''}'{path}[{extra}]'"
    if "archive_info" in direct_url and path is not None:
        return f"pip install '{path}[{extra}]'"
    if "vcs_info" in direct_url:
        vcs = str(direct_url["vcs_info"].get("vcs", "git"))
        commit = direct_url["vcs_info"].get("requested_revision")
        return f"pip install '{DIST}[{extra}] @ {vcs}+{url}{'@' + str(commit) if commit else ''}'"
    return f"pip install '{DIST}[{extra}] @ {url}'" if url else f"pip install '{DIST}[{extra}]'"


def not_installed(module: str) -> str:
    """'torch is not installed (pip install …)': the reason a face gives for a missing optional
    module, with the command that installs it here."""
    extra = EXTRAS.get(module.split(".")[0])
    if extra is None:
        return f"{module} is not installed"
    return f"{module} is not installed: {install_command(extra)}"


def missing_dependency(exc: BaseException, what: str = "this") -> str | None:
    """'<what> needs torch, which is not installed: pip install …' (`install_command`) when `exc`
    is the ModuleNotFoundError of an optional dependency; None otherwise."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    root = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(root)
    if extra is None:
        return None
    return f"{what} needs {root}, which is not installed: {install_command(extra)}"
