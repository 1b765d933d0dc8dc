"""The packages of the wheel and the editable install (pyproject.toml holds everything else).

`lowprec/` holds the package's own modules; each layer named in `lowprec.LAYERS` is a top-level
folder of the repository that installs as `lowprec.<name>` (`formats/` → `lowprec.formats`), with
its subpackages (`simulations/quant/` → `lowprec.simulations.quant`). pyproject.toml cannot say
"this folder and every package below it, under a prefix", so this file lists them: setuptools maps
each `lowprec.<name>` to its folder (`package_dir`), and the editable install's import hook serves
the same names from the checkout. Adding a layer is one name in `lowprec.LAYERS`, nothing here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).resolve().parent


def layers() -> tuple[str, ...]:
    """`LAYERS` of lowprec/__init__.py, read without importing lowprec."""
    tree = ast.parse((HERE / "lowprec" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "LAYERS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise SystemExit("setup.py: lowprec/__init__.py defines no LAYERS")


def packages(names: tuple[str, ...]) -> list[str]:
    """lowprec, each layer and every folder below it (as pyproject's `packages.find` does: data-only
    folders such as content/lessons/ and app/static/ are namespace packages that hold package data)."""
    out = ["lowprec"]
    for name in names:
        out.append(f"lowprec.{name}")
        found = find_namespace_packages(str(HERE / name), exclude=["__pycache__", "*.__pycache__"])
        out += [f"lowprec.{name}.{sub}" for sub in found]
    return out


def package_dir(names: tuple[str, ...]) -> dict[str, str]:
    """Each package's folder: `lowprec/`, and each layer's top-level folder (setuptools finds a
    subpackage in its layer's folder: `lowprec.simulations.quant` in simulations/quant/)."""
    return {"lowprec": "lowprec", **{f"lowprec.{name}": name for name in names}}


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import its functions
    LAYERS = layers()
    setup(packages=packages(LAYERS), package_dir=package_dir(LAYERS))
