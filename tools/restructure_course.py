"""Issue 27 item 7: the course layer (`course/`, imported as `lowprec.course`) — move the worked
examples, the lesson parsing and the bin challenge into it and rewrite every reference.

Idempotent: run it again after every `git merge main` (a file that main edited at its old path
comes back through git's rename detection; a new mention of an old name is rewritten).

    .venv/bin/python tools/restructure_course.py [--dry-run]

What it does, in order:

1. `git mv` each file of `MOVES` whose old path still exists (and whose new path does not).
2. In each moved file, every relative import is made absolute, resolved against the package the
   file came from (`from .cliffs import x` in a former `simulations/` module becomes
   `from lowprec.simulations.cliffs import x`), then mapped through `MODULES`.
3. Repo-wide (Python, Markdown, TOML, JS, shell, notebooks): dotted module names
   (`lowprec.simulations.examples_course`, `simulations.examples`, `app.lessons` …), the
   `from lowprec.PKG import MODULE` form, and file paths (`simulations/examples_transfer.py`,
   the mutant catalogue's) are rewritten through the map.

`lowprec.course` is one name in `lowprec.LAYERS` (the package maps each top-level folder; no links).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: old file → new file (paths relative to the repository root)
MOVES: dict[str, str] = {
    **{f"simulations/{n}.py": f"course/{n}.py" for n in (
        "example_record", "examples", "examples_blocks", "examples_ckpt", "examples_course", "examples_extra",
        "examples_gemm", "examples_stateful", "examples_transfer")},
    "app/lessons.py": "course/lessons.py",
    "app/lesson_blocks.py": "course/lesson_blocks.py",
    "app/lesson_files.py": "course/lesson_files.py",
    "app/lesson_labs.py": "course/lesson_labs.py",
    "formats/challenge.py": "course/challenge.py",
}


def _module(path: str) -> str:
    return "lowprec." + path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


#: old module → new module
MODULES: dict[str, str] = {_module(old): _module(new) for old, new in MOVES.items()}

#: (old module, name) → new module: records taken out of a module that stays (widget records out of formats/)
NAME_MOVES: dict[tuple[str, str], str] = {
    ("lowprec.formats.explain", "ExplainConfig"): "lowprec.simulations.format_records",
    ("lowprec.formats.conventions", "ConventionsConfig"): "lowprec.simulations.format_records",
}

SUFFIXES = {".py", ".md", ".toml", ".js", ".sh", ".ipynb", ".cfg", ".txt", ".yml", ".yaml", ".json"}
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", "build", "dist", "screenshots"}
SKIP_FILES = {"tools/restructure_course.py"}


def _run(cmd: list[str], dry: bool) -> None:
    print(" ".join(cmd))
    if not dry:
        subprocess.run(cmd, cwd=ROOT, check=True)


def move_files(dry: bool) -> list[str]:
    """git mv what is still at its old path; the new paths of every moved file that exists."""
    (ROOT / "course").mkdir(exist_ok=True)
    for old, new in MOVES.items():
        if (ROOT / old).exists() and not (ROOT / new).exists():
            _run(["git", "mv", old, new], dry)
        elif (ROOT / old).exists():
            print(f"warning: both {old} and {new} exist; merge them by hand", file=sys.stderr)
    return [new for new in MOVES.values() if (ROOT / new).exists()]


def _map(name: str) -> str:
    """A dotted module name through MODULES (longest matching prefix)."""
    for old in sorted(MODULES, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return MODULES[old] + name[len(old):]
    return name


_REL_RE = re.compile(r"^(\s*from\s+)(\.+)([\w.]*)(\s+import\s+)", re.M)


def absolute_imports(new: str, old: str, text: str) -> str:
    """Relative imports of a moved file made absolute against its old package, then mapped."""
    old_pkg = _module(old).rpartition(".")[0]

    def sub(m: re.Match[str]) -> str:
        dots, rest = m.group(2), m.group(3)
        parts = old_pkg.split(".")
        base = ".".join(parts[: len(parts) - (len(dots) - 1)])
        if rest:
            return f"{m.group(1)}{_map(base + '.' + rest)}{m.group(4)}"
        return m.group(0)  # `from . import a, b`: handled below

    text = _REL_RE.sub(sub, text)

    # `from . import (a, b)` in a moved file: each name is a sibling module of the old package
    def sub_pkg(m: re.Match[str]) -> str:
        names = [n.strip() for n in m.group(2).replace("(", "").replace(")", "").split(",") if n.strip()]
        by_pkg: dict[str, list[str]] = {}
        for n in names:
            target = _map(f"{old_pkg}.{n}")
            pkg, _, leaf = target.rpartition(".")
            by_pkg.setdefault(pkg, []).append(leaf)
        return m.group(1) + "\n".join(f"from {pkg} import ({', '.join(ns)})" if len(ns) > 3
                                      else f"from {pkg} import {', '.join(ns)}" for pkg, ns in by_pkg.items())

    return re.sub(r"^(\s*)from\s+\.\s+import\s+(\([^)]*\)|[^\n]+)", sub_pkg, text, flags=re.M)


def _dotted_patterns() -> list[tuple[re.Pattern[str], str]]:
    out = []
    for old in sorted(MODULES, key=len, reverse=True):
        new = MODULES[old]
        # lowprec.simulations.examples → lowprec.course.examples; also without the `lowprec.` prefix
        # (`simulations.examples.example`), never inside a longer name
        short_old, short_new = old.removeprefix("lowprec."), new.removeprefix("lowprec.")
        out.append((re.compile(r"(?<![\w.])(lowprec\.)?" + re.escape(short_old) + r"(?!\w)"),
                    r"\g<1>" + short_new))
    return out


def _paths_patterns() -> list[tuple[re.Pattern[str], str]]:
    out = []
    for old in sorted(MOVES, key=len, reverse=True):
        out.append((re.compile(r"(?<![\w/.])" + re.escape(old) + r"(?!\w)"), MOVES[old]))
    return out


_FROM_PKG_RE = re.compile(r"^(\s*)from\s+(lowprec\.(?:simulations|app|formats))\s+import\s+"
                          r"(\([^)]*\)|[^\n#]+)", re.M)


def _from_pkg(text: str) -> str:
    """`from lowprec.simulations import examples as ex, knobs` → the moved names from lowprec.course."""

    def sub(m: re.Match[str]) -> str:
        indent, pkg, body = m.group(1), m.group(2), m.group(3)
        items = [x.strip() for x in body.strip().strip("()").split(",") if x.strip()]
        moved, kept = [], []
        for item in items:
            name = item.split()[0]
            (moved if f"{pkg}.{name}" in MODULES else kept).append(item)
        if not moved:
            return m.group(0)
        lines = []
        if kept:
            lines.append(f"{indent}from {pkg} import {', '.join(kept)}")
        groups: dict[str, list[str]] = {}
        for item in moved:
            name, *alias = item.split()
            new_pkg, _, leaf = MODULES[f"{pkg}.{name}"].rpartition(".")
            groups.setdefault(new_pkg, []).append(" ".join([leaf, *alias]))
        for new_pkg, names in groups.items():
            lines.append(f"{indent}from {new_pkg} import {', '.join(names)}")
        return "\n".join(lines)

    return _FROM_PKG_RE.sub(sub, text)


def _names(text: str) -> str:
    """NAME_MOVES in `from OLD import a, NAME` (split into two imports), in "OLD:NAME" registry
    strings and in dotted mentions `OLD.NAME` (with or without the `lowprec.` prefix)."""
    for (old, name), new in NAME_MOVES.items():
        pat = re.compile(r"^(\s*)from\s+" + re.escape(old) + r"\s+import\s+(\([^)]*\)|[^\n#]+)", re.M)

        def sub(m: re.Match[str]) -> str:
            items = [x.strip() for x in m.group(2).strip().strip("()").split(",") if x.strip()]
            moved = [i for i in items if i.split()[0] == name]
            if not moved:
                return m.group(0)
            kept = [i for i in items if i.split()[0] != name]
            lines = [f"{m.group(1)}from {old} import {', '.join(kept)}"] if kept else []
            lines.append(f"{m.group(1)}from {new} import {', '.join(moved)}")
            return "\n".join(lines)

        text = pat.sub(sub, text)
        short_old, short_new = old.removeprefix("lowprec."), new.removeprefix("lowprec.")
        text = re.sub(r"(?<![\w.])(lowprec\.)?" + re.escape(short_old) + r"([.:])" + name + r"(?!\w)",
                      r"\g<1>" + short_new + r"\g<2>" + name, text)
    return text


def rewrite_text(text: str) -> str:
    text = _from_pkg(text)
    text = _names(text)
    for pat, repl in _dotted_patterns():
        text = pat.sub(repl, text)
    for pat, repl in _paths_patterns():
        text = pat.sub(repl, text)
    return text


def files() -> list[Path]:
    out = []
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
    for rel in tracked:
        p = ROOT / rel
        if rel in SKIP_FILES or set(Path(rel).parts) & SKIP_DIRS or p.suffix not in SUFFIXES:
            continue
        if p.is_file() and not p.is_symlink():
            out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    move_files(args.dry_run)
    if args.dry_run:
        return 0
    old_of = {new: old for old, new in MOVES.items()}
    changed = 0
    for p in files():
        rel = p.relative_to(ROOT).as_posix()
        text = p.read_text(encoding="utf-8")
        new = text
        if rel in old_of:
            new = absolute_imports(rel, old_of[rel], new)
        new = rewrite_text(new)
        if new != text:
            p.write_text(new, encoding="utf-8")
            changed += 1
            print(f"rewrote {rel}")
    print(f"{changed} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
