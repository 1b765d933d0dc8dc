"""lowprec: a bit-exact simulator and visual explorer of low-precision number formats for ML.

One import name for the whole project. Its layers are the repository's top-level folders, named in
`LAYERS` (`formats/` is `lowprec.formats`, `simulations/` is `lowprec.simulations` …); this folder
holds only this file and the leaf modules (`lowprec.strictjson`, `lowprec.config`, …). The same
`lowprec.*` names hold everywhere, without links:

- the wheel installs each layer inside this package (setup.py maps `lowprec.X` to the folder `X/`
  for every name of `LAYERS`); the lessons are package data (`lowprec/content/lessons/*.md`);
- the editable install (`pip install -e .`, `./dev setup`) maps the same names to the checkout's
  folders through setuptools' import hook;
- a checkout imported from its root without an install (`PYTHONPATH=.`, a mutation test's scratch
  copy, a benchmark's reference tree) gets the repository root appended to this package's
  `__path__` below, so `lowprec.formats` is the checkout's `formats/` (there the root's other
  folders and files are importable under `lowprec.` too: import only the layers);
- mypy cannot follow either mapping, so `./dev typecheck` (tools/typecheck.py) gives it each file
  with its module name.

Adding a top-level folder (say `course/` as `lowprec.course`) is one name in `LAYERS`.

Importing `lowprec` imports nothing else: `import lowprec.formats` needs only numpy and ml_dtypes.
`lowprec.__version__` is read from the installed distribution's metadata on first use (importing
`importlib.metadata` costs tens of milliseconds that a command's start-up should not pay).
"""

from __future__ import annotations

import os as _os  # imported at interpreter start-up already: free
from typing import Any

__all__ = ["LAYERS", "__version__"]

#: The subpackages that are top-level folders of the repository, each under its own name. The one
#: list: setup.py (wheel and editable install), tools/typecheck.py (mypy), tests/importgraph.py and
#: the lesson cache's source key read it.
LAYERS = ("app", "benchmarks", "content", "formats", "gpu", "simulations")

_HERE = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_HERE, "formats")):
    # a source checkout: the layers are this folder's siblings (in a wheel they are inside it)
    __path__.append(_os.path.dirname(_HERE))


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib import metadata

        try:
            version = metadata.version("lowprec")
        except metadata.PackageNotFoundError:  # a checkout that was never installed
            version = "0+unknown"
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module 'lowprec' has no attribute {name!r}")
