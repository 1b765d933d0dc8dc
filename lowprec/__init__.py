"""lowprec: a bit-exact simulator and visual explorer of low-precision number formats for ML.

One import name for the whole project. The subpackages live at the repository's top level and are
installed beneath this package (`lowprec.formats`, `lowprec.simulations`, `lowprec.gpu`,
`lowprec.app`, `lowprec.benchmarks`); the lessons travel with it as package data
(`lowprec/content/lessons/*.md`, read through `importlib.resources`). In a checkout, the folder
`lowprec/` holds this file and one symbolic link per subpackage, so the same import names work
there, in an editable install, under mypy and in the built wheel (which copies the files).

Importing `lowprec` imports nothing else: `import lowprec.formats` needs only numpy and ml_dtypes.
"""

from __future__ import annotations

from importlib import metadata as _metadata

try:
    __version__: str = _metadata.version("lowprec")
except _metadata.PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
