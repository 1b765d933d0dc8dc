"""A checkout without symbolic links (issue 27 item 7): `git clone -c core.symlinks=false` of this
repository's HEAD — what a Windows checkout without symlink support gets — has the same `lowprec.*`
import names everywhere, with no link in it:

- git holds no symbolic link (`git ls-files -s`: no mode 120000), and `lowprec/` holds only the
  package's own modules; the layers (`lowprec.LAYERS`) are the clone's top-level folders;
- run from a checkout without an install (PYTHONPATH, as a mutation test's scratch copy or a
  benchmark's reference tree is) — this working tree and the clone — `lowprec.formats`,
  `lowprec.app.cli` and the lessons are that checkout's files, and `python -m lowprec.app.cli` runs;
- `tools.layout.package_modules` (what `./dev typecheck` gives mypy) names every .py of the package
  once, and setup.py lists every folder of every layer as a package;
- installed editable into a fresh virtualenv (what `./dev setup` makes) and run from another
  folder, the same names are the clone's files (marker `packaging`);
- the wheel built from the clone holds exactly the files `expected_wheel_files` derives from the
  tree, the list the linked package's wheel held (marker `packaging`).

The clone is of HEAD (commit before relying on it); the `worktree` cases check the tree the tests
run from, which is what a mutation test's scratch copy changes. The fresh virtualenv reaches the
third-party dependencies the way tests/test_packaging.py's does (one `.pth` line; this checkout's
editable install is not activated there).
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from lowprec import LAYERS, strictjson
from tests.test_packaging import expected_wheel_files, wheel_files
from tools.layout import package_modules

ROOT = Path(__file__).resolve().parents[1]
#: what a checkout's `lowprec` resolves a few names to (relative to the checkout), printed one a line
PROBE = ("import lowprec, lowprec.formats, lowprec.app.cli, lowprec.simulations.quant\n"
         "from lowprec.app.lesson_files import DEFAULT_ROOT\n"
         "from lowprec.app.pages import GLOSSARY_PATH\n"
         "for m in (lowprec, lowprec.formats, lowprec.app.cli, lowprec.simulations.quant): print(m.__file__)\n"
         "print(DEFAULT_ROOT)\nprint(GLOSSARY_PATH)\n")
PROBED = ("lowprec/__init__.py", "formats/__init__.py", "app/cli.py", "simulations/quant/__init__.py",
          "content/lessons", "content/glossary.md")


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return dict(env, PYTHONNOUSERSITE="1", **extra)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if _run(["git", "rev-parse", "--git-dir"], cwd=ROOT).returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout")
    dst = tmp_path_factory.mktemp("nolinks") / "clone"
    r = _run(["git", "clone", "-q", "-c", "core.symlinks=false", str(ROOT), str(dst)], cwd=dst.parent)
    assert r.returncode == 0, r.stderr
    assert _run(["git", "config", "core.symlinks"], cwd=dst).stdout.strip() == "false"
    return dst


@pytest.fixture(params=["worktree", "clone"])
def tree(request: pytest.FixtureRequest) -> Path:
    return ROOT if request.param == "worktree" else request.getfixturevalue("clone")


def test_git_holds_no_symbolic_link(clone: Path) -> None:
    entries = _run(["git", "ls-files", "-s"], cwd=clone).stdout.splitlines()
    assert len(entries) > 300
    assert [e for e in entries if e.startswith("120000 ")] == []
    # lowprec/ holds the package's own files only: nothing named after a layer, file or folder
    own = sorted(p.name for p in (clone / "lowprec").iterdir())
    assert own and not set(own) & set(LAYERS)
    assert all((clone / "lowprec" / name).is_file() for name in own)
    assert all((clone / name / "__init__.py").is_file() or name == "content" for name in LAYERS)


def test_checkout_imports_its_own_files(tree: Path) -> None:
    r = _run([sys.executable, "-c", PROBE], cwd=tree, env=_env(PYTHONPATH=str(tree)))
    assert r.returncode == 0, r.stderr
    assert [Path(line) for line in r.stdout.split()] == [tree / p for p in PROBED]


def test_checkout_runs_a_module(tree: Path) -> None:
    r = _run([sys.executable, "-m", "lowprec.app.cli", "cast", "E5M2", "--json", "--", "-70000"], cwd=tree,
             env=_env(PYTHONPATH=str(tree)))
    assert r.returncode == 0, r.stderr
    assert strictjson.loads(r.stdout)[0]["value"] == "-inf"
    r = _run([sys.executable, "-m", "lowprec.app.cli", "simulate", "spike", "--help"], cwd=tree,
             env=_env(PYTHONPATH=str(tree)))
    assert r.returncode == 0 and "--spike" in r.stdout, r.stderr


def test_typecheck_sources_are_every_file_once(tree: Path) -> None:
    """What tools/typecheck.py gives mypy: each .py of lowprec/ and of every layer, under the name
    its path gives it below `lowprec`."""
    mods = package_modules(tree / "lowprec")
    files = {*(tree / "lowprec").glob("*.py"),
             *(p for name in LAYERS for p in (tree / name).rglob("*.py") if "__pycache__" not in p.parts)}
    assert sorted(mods.values()) == sorted(files)
    for name, path in mods.items():
        rel = path.relative_to(tree).with_suffix("")
        parts = rel.parts[1:] if rel.parts[0] == "lowprec" else rel.parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        assert name == ".".join(("lowprec", *parts)), (name, path)
    assert {"lowprec", "lowprec.strictjson", "lowprec.formats.codec", "lowprec.app.cli",
            "lowprec.simulations.quant.recipes"} <= set(mods)
    # plain mypy has no target, so it stops instead of checking lowprec/ alone
    config = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["mypy"]
    assert not {"files", "packages", "modules"} & set(config)


def test_setup_lists_every_package(tree: Path) -> None:
    """setup.py's packages: lowprec and every folder of every layer (data-only folders too, as
    namespace packages that carry package data), each mapped below its layer's top-level folder."""
    setup = runpy.run_path(str(tree / "setup.py"))  # not as __main__: defines, does not build
    layers = setup["layers"]()
    assert layers == LAYERS
    folders = {"lowprec"} | {
        ".".join(("lowprec", *p.relative_to(tree).parts))
        for name in layers for p in [tree / name, *(tree / name).rglob("*")]
        if p.is_dir() and all(part.isidentifier() for part in p.relative_to(tree).parts)
        and "__pycache__" not in p.parts}
    assert sorted(setup["packages"](layers)) == sorted(folders)
    assert {"lowprec.simulations.quant", "lowprec.content.lessons", "lowprec.app.static"} <= folders
    assert setup["package_dir"](layers) == {"lowprec": "lowprec", **{f"lowprec.{n}": n for n in layers}}


def _fresh_venv(base: Path) -> Path:
    venv = base / "venv"
    r = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=base).stdout.strip())
    deps = os.path.realpath(sysconfig.get_paths()["purelib"])  # numpy, setuptools, panel …
    (site / "zz_lowprec_test_dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    return py


@pytest.mark.packaging
def test_editable_install_of_the_checkout(clone: Path, tmp_path: Path) -> None:
    py = _fresh_venv(tmp_path)
    r = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-build-isolation",
              "--no-index", "-q", "-e", str(clone)], cwd=tmp_path, env=_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = _run([str(py), "-c", PROBE], cwd=elsewhere, env=_env())
    assert r.returncode == 0, r.stderr
    assert [Path(line) for line in r.stdout.split()] == [clone / p for p in PROBED]
    r = _run([str(py.parent / "lowprec"), "cast", "E5M2", "--json", "--", "-70000"], cwd=elsewhere, env=_env())
    assert r.returncode == 0, r.stderr
    assert strictjson.loads(r.stdout)[0]["value"] == "-inf"


@pytest.mark.packaging
def test_wheel_of_the_checkout(clone: Path, tmp_path: Path) -> None:
    r = _run([sys.executable, "-m", "pip", "wheel", str(clone), "--no-deps", "--no-build-isolation", "--no-index",
              "-q", "-w", str(tmp_path)], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = tmp_path.glob("lowprec-*.whl")
    assert wheel_files(wheel) == expected_wheel_files(clone)
