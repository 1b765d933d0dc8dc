"""lowprec: a bit-exact simulator and visual explorer of low-precision number formats for ML.

One import name for the whole project. The subpackages live at the repository's top level and are
installed beneath this package (`lowprec.formats`, `lowprec.simulations`, `lowprec.gpu`,
`lowprec.app`, `lowprec.benchmarks`); the lessons travel with it as package data
(`lowprec/content/lessons/*.md`, read through `importlib.resources`). In a checkout, the folder
`lowprec/` holds this file and one symbolic link per subpackage, so the same import names work
there, in an editable install, under mypy and in the built wheel (which copies the files).

Importing `lowprec` imports nothing else: `import lowprec.formats` needs only numpy and ml_dtypes.
`lowprec.__version__` is read from the installed distribution's metadata on first use (importing
`importlib.metadata` costs tens of milliseconds that a command's start-up should not pay).
"""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


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
