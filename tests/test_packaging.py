"""The product as a user installs it (issue 11's acceptance): `pip wheel . --no-deps` on a clean copy
of the sources gives a wheel whose only top-level package is `lowprec` and which holds every lesson;
installed (not editable) into a fresh virtualenv and run from another folder, the installed copy —
not the checkout — serves every lesson, `import app` fails, `import lowprec.formats` does not import
torch, `lowprec cast --json` is strict JSON, and the installed package's import graph has no cycle
and points down.

The fresh virtualenv gets the wheel only (`pip install --no-deps`); the third-party dependencies are
the ones already installed for the tests, reached through one `.pth` line naming their
site-packages folder. Such a line puts the folder on sys.path after the virtualenv's own
site-packages and does not run the `.pth` hooks inside it, so the editable install of the checkout
that lives there is not activated: the test asserts `lowprec.__file__` lies in the virtualenv.
Takes about a minute (marker `packaging`).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest

from lowprec import LAYERS, strictjson

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "content" / "lessons").glob("*.md"))
TOP_LEVEL_FOLDERS = LAYERS  # each installs as lowprec.<name> only


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       check=False)
    return r


def _clean_copy(dst: Path) -> Path:
    """The sources as a clone has them: no virtualenv, build output, caches or egg-info."""
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "build", "dist",
                                    ".mypy_cache", ".pytest_cache", ".hypothesis", "out", "*.pyc")
    shutil.copytree(ROOT, dst, symlinks=True, ignore=ignore)
    return dst


def _lesson_titles() -> dict[str, str]:
    """slug → title, read from the lesson files' front matter (the checkout's content/)."""
    titles = {}
    for path in LESSONS:
        m = re.search(r"^title:\s*(.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
        assert m, path
        slug = re.sub(r"^\d+-", "", path.stem)
        titles[slug] = m.group(1).strip()
    return titles


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("packaging")
    src = _clean_copy(base / "src")
    dist = base / "dist"
    r = _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
              "--no-index", "-q", "-w", str(dist)], cwd=src)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = list(dist.glob("lowprec-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    r = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    r = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
              "--no-index", "-q", str(wheels[0])], cwd=base)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=base).stdout.strip())
    deps = os.path.realpath(sysconfig.get_paths()["purelib"])  # numpy, ml_dtypes, panel, torch …
    (site / "zz_lowprec_test_dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return {"wheel": wheels[0], "venv": venv, "python": py, "site": site, "cwd": elsewhere, "src": src}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _py(installed: dict[str, Path], code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return _run([str(installed["python"]), "-c", code], cwd=installed["cwd"], env=_env(),
                timeout=timeout)


def expected_wheel_files(src: Path) -> set[str]:
    """The files the wheel must hold, derived from the source tree `src` by the rule the wheel of
    the linked lowprec/ followed (main on 2026-12-04: 254 entries with the dist-info, the same
    list): every .py of `lowprec/` and of each layer, and the files that pyproject.toml's
    package-data globs name (`glob` semantics, `**` recursive, as setuptools reads them); a file of
    the package `lowprec.X.Y` at `src/X/Y/` lies at `lowprec/X/Y/` in the wheel."""
    def folder(package: str) -> Path:
        parts = package.split(".")[1:]
        return src.joinpath(*parts) if parts else src / "lowprec"

    out = {f"lowprec/{p.name}" for p in folder("lowprec").glob("*.py")}
    for name in LAYERS:
        out |= {f"lowprec/{p.relative_to(src).as_posix()}" for p in (src / name).rglob("*.py")
                if "__pycache__" not in p.parts}
    data = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, patterns in data.items():
        here = folder(package)
        for pattern in patterns:
            out |= {f"{package.replace('.', '/')}/{Path(name).as_posix()}"
                    for name in glob.glob(pattern, root_dir=here, recursive=True) if (here / name).is_file()}
    return out


def wheel_files(wheel: Path) -> set[str]:
    """The wheel's files, its .dist-info left out."""
    return {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}


def test_wheel_holds_the_tree(installed: dict[str, Path]) -> None:
    """Every module and data file the linked package's wheel held, and nothing else."""
    expected = expected_wheel_files(installed["src"])
    assert len(expected) > 200 and "lowprec/simulations/quant/__init__.py" in expected
    assert wheel_files(installed["wheel"]) == expected


def test_wheel_holds_only_lowprec_and_every_lesson(installed: dict[str, Path]) -> None:
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    top = {n.split("/")[0] for n in names}
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert top == {"lowprec", f"lowprec-{version}.dist-info"}
    assert LESSONS
    for lesson in LESSONS:
        assert f"lowprec/content/lessons/{lesson.name}" in names
    assert "lowprec/gpu/reports/ml_dtypes.json" in names and "lowprec/py.typed" in names
    assert "lowprec/content/lesson-records.json" in names  # the course's computed records (issue 33)
    assert not any("/tests/" in n or n.endswith(".pyc") for n in names)


def test_installed_copy_is_the_one_imported(installed: dict[str, Path]) -> None:
    r = _py(installed, "import lowprec, lowprec.formats; print(lowprec.__file__); "
                       "print(lowprec.formats.__file__); print(lowprec.__version__)")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    for path in lines[:2]:
        assert Path(path).resolve().is_relative_to(installed["site"].resolve()), path
        assert not Path(path).resolve().is_relative_to(ROOT)
    assert lines[2] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.mark.parametrize("name", TOP_LEVEL_FOLDERS)
def test_no_other_top_level_package(installed: dict[str, Path], name: str) -> None:
    r = _py(installed, f"import {name}")
    assert r.returncode != 0 and f"No module named '{name}'" in r.stderr


def test_formats_import_without_torch(installed: dict[str, Path]) -> None:
    r = _py(installed, "import lowprec.formats, sys; assert 'torch' not in sys.modules; print('ok')")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_the_first_lesson_listing_after_install_computes_nothing(installed: dict[str, Path]) -> None:
    """Issue 33: the first `lowprec lessons --json` of a fresh install (an empty record cache) reads
    the records shipped in the wheel: their module files are found in the installed layout
    (lowprec/formats/…, not the checkout's formats/), so nothing is parsed or computed (no numpy),
    and the listing is the shipped one."""
    cache = installed["cwd"].parent / "empty-cache"
    code = ("import contextlib, io, sys\nfrom lowprec.app.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n    rc = main(['lessons', '--json'])\n"
            "print(rc, sorted(m for m in ('numpy', 'lowprec.course.lessons', 'torch') if m in sys.modules))\n"
            "print(out.getvalue(), end='')\n")
    r = _run([str(installed["python"]), "-c", code], cwd=installed["cwd"],
             env={**_env(), "LOWPREC_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    head, _, listing = r.stdout.partition("\n")
    assert head == "0 []", head
    shipped = strictjson.loads((ROOT / "content" / "lesson-records.json").read_text(encoding="utf-8"))["records"]
    assert strictjson.loads(listing) == sorted((e["record"] for e in shipped.values()), key=lambda x: x["order"])
    assert not (cache / "lessons").exists()


def test_console_script_cast_json(installed: dict[str, Path]) -> None:
    r = _run([str(installed["venv"] / "bin" / "lowprec"), "cast", "E5M2", "--json", "--", "-70000"],
             cwd=installed["cwd"], env=_env())
    assert r.returncode == 0, r.stderr
    assert strictjson.loads(r.stdout)[0]["value"] == "-inf"


def test_serve_lists_every_lesson(installed: dict[str, Path]) -> None:
    lowprec_bin = str(installed["venv"] / "bin" / "lowprec")
    r = _run([lowprec_bin, "serve", "--list"], cwd=installed["cwd"], env=_env())
    assert r.returncode == 0, r.stderr
    titles = _lesson_titles()
    for slug, title in titles.items():
        assert f"\n/lesson/{slug}\t{title} · lowprec\n" in r.stdout
    # and the running server serves them (the page title names the lesson): the first, the last and
    # one with many widgets here; every lesson is built in the checkout by tests/test_pages.py and
    # served from the installed copy by the slow test below
    _serve_installed_lessons(installed, {s: t for i, (s, t) in enumerate(titles.items())
                                         if i in (0, len(titles) - 1) or s == "scale-grouping"})


@pytest.mark.slow
def test_installed_server_serves_every_lesson(installed: dict[str, Path]) -> None:
    _serve_installed_lessons(installed, _lesson_titles())


def _serve_installed_lessons(installed: dict[str, Path], titles: dict[str, str]) -> None:
    from lowprec.app.serving import serve_and_wait

    lowprec_bin = str(installed["venv"] / "bin" / "lowprec")
    assert titles
    # no spare widgets (nor the recipe lab's warm-up they need: a minute of kernel compiling in a
    # fresh install, test_serve and test_offline cover spares): this test is about the installed pages
    with serve_and_wait([lowprec_bin, "serve", "--no-show", "--port", "{port}"], cwd=installed["cwd"],
                        env=dict(_env(), LOWPREC_APP_SPARES="0"), timeout_s=90) as app:
        # 180 s a page: the first pages share two cores with the server's start-up warm-up (worker
        # processes importing the simulations, the recompute warm-up) and the other test worker
        for slug, title in titles.items():
            with urllib.request.urlopen(f"{app.url}/lesson/{slug}", timeout=180) as resp:
                html = resp.read().decode("utf-8")
            assert resp.status == 200 and f"<title>{title} · lowprec</title>" in html, slug


def test_installed_import_graph(installed: dict[str, Path]) -> None:
    """The import graph of the installed package (the layers inside lowprec/, as the wheel puts
    them): no cycle beyond the allow-list, layers pointing down."""
    from tests.test_import_graph import check_graph

    pkg = installed["site"] / "lowprec"
    assert not pkg.is_symlink() and (pkg / "formats" / "__init__.py").is_file()
    cycles, problems = check_graph(pkg)
    assert cycles == [] and problems == []
