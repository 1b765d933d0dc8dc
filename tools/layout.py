"""Where the modules of the `lowprec` package are, read from the files (nothing of it is imported
but `lowprec` itself, for `LAYERS`).

`lowprec/` holds the package's own modules; each layer named in `lowprec.LAYERS` is a folder of the
same name: inside the package folder in an installed wheel, beside it (the repository's top-level
folders) in a checkout. `package_modules(folder)` walks both layouts the same way. Used by
tools/typecheck.py (mypy) and tests/importgraph.py; setup.py maps the same names for the wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

from lowprec import LAYERS

__all__ = ["ROOT", "layer_folders", "package_modules"]

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "lowprec"


def layer_folders(folder: str | Path = ROOT / PACKAGE) -> dict[str, Path]:
    """`lowprec.<layer>` → its folder, for the `lowprec` package folder `folder` (a checkout's
    `lowprec/` or an installed one); a layer found in neither place is left out."""
    folder = Path(folder)
    out = {}
    for name in LAYERS:
        for candidate in (folder / name, folder.parent / name):
            if candidate.is_dir():
                out[f"{PACKAGE}.{name}"] = candidate
                break
    return out


def package_modules(folder: str | Path = ROOT / PACKAGE) -> dict[str, Path]:
    """Module name → file, for every .py of the `lowprec` package whose folder is `folder`: its own
    modules (`lowprec`, `lowprec.strictjson` …) and every module of every layer, each once."""
    folder = Path(folder)
    mods = {PACKAGE if p.stem == "__init__" else f"{PACKAGE}.{p.stem}": p for p in sorted(folder.glob("*.py"))}
    for package, root in layer_folders(folder).items():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            rel = Path(dirpath).relative_to(root)
            for name in sorted(filenames):
                if name.endswith(".py"):
                    parts = [package, *rel.parts] + ([] if name == "__init__.py" else [name[:-3]])
                    mods[".".join(parts)] = Path(dirpath) / name
    return mods
