"""Issue 27 item 7: `simulations/` into subpackages by concept. Idempotent: run it again after
`git merge main` to carry imports that arrived meanwhile (`python tools/restructure_simulations.py`).

It holds the old → new module map (MOVES) and, in this order:

1. rewrites every `from … import …` in the repository's Python files that names a moved module
   (relative imports are resolved against where the file was, mapped, and written relative to where
   the file now is; `from lowprec.simulations import recompute_state` becomes
   `from lowprec.simulations.recompute import state as recompute_state`);
2. rewrites dotted names (`lowprec.simulations.recompute_state`, `simulations._cli.Simulation`) and
   file paths (`simulations/recompute_state.py`) in every text file it reads (Python, Markdown,
   TOML, shell), except `python -m lowprec.simulations.NAME` of the simulations whose old module
   name is kept (ALIASES: it is their documented entry point);
3. `git mv`s each module to its new place, writes the subpackages' `__init__.py`/`__main__.py` where
   missing, and writes a small alias module at each old path in ALIASES (importing it gives the new
   module itself; `python -m` of it runs the simulation); DROPPED old modules are deleted;
4. removes stale `__pycache__` folders under simulations/.

A file holding the line `# restructure: keep old names` is left as it is (a test of the aliases), a
line holding `restructure: keep` keeps its names (an old `python -m` name a test expects).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "lowprec.simulations"
KEEP_MARK = "# restructure: keep old names"  # in a file: the file is left as it is
KEEP_LINE = "restructure: keep"  # in a line: the line keeps its names

#: old module (under lowprec.simulations) → new module; a new name that is a package's own module
#: ("recompute", "blocks", "scaling") is that package's __init__.py
MOVES: dict[str, str] = {
    # the simulation framework: the Simulation declaration and its command lines, output plumbing, shared knobs
    "_cli": "framework.cli",
    "_io": "framework.io",
    "knobs": "framework.knobs",
    # scaled casts and the pieces every study shares (who shares a scale, the scale, the error, delayed scaling)
    "scaling": "scaling",
    "granularity": "scaling.granularity",
    "scales": "scaling.scales",
    "metrics": "scaling.metrics",
    "delayed": "scaling.delayed",
    "streams": "scaling.streams",
    # the recompute simulation
    "recompute": "recompute",
    "recompute_cli": "recompute.cli",
    "recompute_concurrency": "recompute.concurrency",
    "recompute_config": "recompute.config",
    "recompute_harness": "recompute.harness",
    "recompute_state": "recompute.state",
    "recompute_telemetry": "recompute.telemetry",
    # the block-formats simulation
    "blocks": "blocks",
    "block_formats": "blocks.records",
    "block_comparison": "blocks.comparison",
    # single-module studies
    "attention": "studies.attention",
    "cliffs": "studies.cliffs",
    "grouping": "studies.grouping",
    "hadamard": "studies.hadamard",
    "spike": "studies.spike",
    "te_placement": "studies.te_placement",
    "defect_hunt": "studies.defect_hunt",
    # an undocumented alias of the quant wing's kernels: dropped, its users import the kernels
    "_block_kernels": "quant._mx_kernels",
}
#: old modules that were aliases already: deleted, not moved
DROPPED = {"_block_kernels"}
#: old names kept as alias modules: `python -m lowprec.simulations.NAME` of the four single-module
#: simulations (their `Simulation.module`, the README's entry point) and the names the README gives
PYTHON_M = {"attention", "grouping", "hadamard", "spike"}
ALIASES = PYTHON_M | {"delayed", "te_placement", "defect_hunt"}

NEW_PACKAGES = {
    "framework": '"""The simulation framework: one `Simulation` declaration per simulation and the command lines\n'
                 'generated from it (`framework.cli`), output plumbing (`framework.io`), knobs shared by\n'
                 'several simulations (`framework.knobs`)."""\n',
    "studies": '"""Single-module studies: attention rounding, precision cliffs, grouping, the Hadamard transform,\n'
               'the delayed-scaling spike, Transformer Engine\'s placement under recompute, the defect hunt.\n'
               'The simulations among them keep their `python -m lowprec.simulations.NAME` entry points as\n'
               'alias modules at the old paths."""\n',
}
MAINS = {  # guarded: walking the package (pkgutil.walk_packages) imports __main__ modules too
    "recompute": '"""`python -m lowprec.simulations.recompute`."""\n\nimport sys\n\n'
                 'from lowprec.simulations.recompute import main\n\nif __name__ == "__main__":\n    sys.exit(main())\n',
    "blocks": '"""`python -m lowprec.simulations.blocks`."""\n\n'
              'from lowprec.simulations.blocks import SIMULATION\nfrom lowprec.simulations.framework.cli import run_module\n\n'
              'if __name__ == "__main__":\n    run_module(SIMULATION)\n',
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".ini", ".yml", ".yaml"}
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", "reports", "screenshots"}
LAYERS = ("formats", "simulations", "gpu", "benchmarks", "app", "course")  # top-level folders of the package


def _path_of(new: str) -> Path:
    """The file of new module `new` (under simulations/)."""
    parts = new.split(".")
    if parts[-1] in {"recompute", "blocks", "scaling"} and len(parts) == 1:
        return ROOT / "simulations" / parts[0] / "__init__.py"
    return ROOT / "simulations" / Path(*parts[:-1]) / f"{parts[-1]}.py"


def _old_path(old: str) -> Path:
    return ROOT / "simulations" / f"{old}.py"


def map_module(name: str) -> str:
    """`name` (absolute) after the moves."""
    if not name.startswith(PKG + "."):
        return name
    rest = name[len(PKG) + 1:]
    head, _, tail = rest.partition(".")
    if head in MOVES:
        return f"{PKG}.{MOVES[head]}" + (f".{tail}" if tail else "")
    return name


def module_of(path: Path) -> tuple[str, bool] | None:
    """(module name, is package) of a file inside one of the layers, else None."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] not in LAYERS and rel.parts[:1] != ("lowprec",):
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[0] == "lowprec":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        return ".".join(["lowprec", *parts[:-1]]), True
    return ".".join(["lowprec", *parts]), False


def _package(module: str, is_pkg: bool) -> str:
    return module if is_pkg else module.rpartition(".")[0]


def _resolve(level: int, mod: str | None, package: str) -> str:
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([mod] if mod else []))


def _relative(target: str, package: str) -> tuple[int, str]:
    p, t = package.split("."), target.split(".")
    common = 0
    while common < min(len(p), len(t)) and p[common] == t[common]:
        common += 1
    return len(p) - common + 1, ".".join(t[common:])


def _existing_modules() -> set[str]:
    out = set()
    for f in (ROOT / "simulations").rglob("*.py"):
        m = module_of(f)
        if m:
            out.add(m[0])
    return out


def _reverse() -> dict[Path, str]:
    """new file → old module name (for files already moved)."""
    return {_path_of(new): old for old, new in MOVES.items() if old not in DROPPED}


def _fmt_import(indent: str, level: int, mod: str, names: list[tuple[str, str | None]]) -> str:
    head = "from " + "." * level + mod + " import "
    items = [n if a is None or a == n else f"{n} as {a}" for n, a in names]
    one = head + ", ".join(items)
    if len(indent) + len(one) <= 115:
        return one
    lines: list[str] = []
    cur = head + "("
    for i, it in enumerate(items):
        piece = it + (", " if i < len(items) - 1 else ")")
        if len(indent) + len(cur) + len(piece.rstrip()) > 115 and not cur.endswith("("):
            lines.append(cur.rstrip())
            cur = " " * len(head + "(") + piece
        else:
            cur += piece
    lines.append(cur)
    return ("\n" + indent).join(lines)


def rewrite_imports(path: Path, existing: set[str], reverse: dict[Path, str]) -> bool:
    text = path.read_text(encoding="utf-8")
    if KEEP_MARK in text:
        return False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    here = module_of(path)
    if here is None:  # tests/, tools/: absolute imports only
        cur_name, cur_pkg_flag = "", False
    else:
        cur_name, cur_pkg_flag = here
    # where the file will be (old file not moved yet) and where its relative imports were written from
    old_name = None
    if here and cur_name.startswith(PKG + ".") and cur_name[len(PKG) + 1:] in MOVES:
        old_short = cur_name[len(PKG) + 1:]
        if old_short not in ("recompute", "blocks", "scaling") or not cur_pkg_flag:
            old_name = cur_name
    if old_name is not None:
        short = old_name[len(PKG) + 1:]
        new_path = _path_of(MOVES[short])
        final = module_of(new_path)
        assert final is not None
        final_pkg = _package(*final)
        src_pkgs = [_package(cur_name, cur_pkg_flag)]
    else:
        final_pkg = _package(cur_name, cur_pkg_flag) if here else ""
        src_pkgs = [final_pkg]
        if path in reverse:  # moved already: an import merged in since may still be written from the old place
            src_pkgs.append(PKG)
    lines = text.split("\n")  # ast counts lines at \n (\r\n and \r do not occur in this repository)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if not here:
                continue
            target = _resolve(node.level, node.module, src_pkgs[0])
            if len(src_pkgs) > 1:
                alt = _resolve(node.level, node.module, src_pkgs[1])
                head_ok = target in existing or any(f"{target}.{a.name}" in existing for a in node.names)
                if not head_ok and map_module(alt) != alt:
                    target = alt
        elif node.module and (node.module == PKG or node.module.startswith(PKG + ".")):
            target = node.module
        else:
            continue
        groups: dict[str, list[tuple[str, str | None]]] = {}
        for a in node.names:
            full = f"{target}.{a.name}"
            if map_module(full) != full and full[len(PKG) + 1:] in MOVES:
                new_full = map_module(full)
                parent, _, leaf = new_full.rpartition(".")
                groups.setdefault(parent, []).append((leaf, a.asname or (a.name if leaf != a.name else None)))
            else:
                groups.setdefault(map_module(target), []).append((a.name, a.asname))
        relative = node.level > 0 and bool(final_pkg)
        stmts = []
        for mod, names in groups.items():
            if relative:
                lvl, rel = _relative(mod, final_pkg)
                stmts.append((lvl, rel, names))
            else:
                stmts.append((0, mod, names))
        if (len(stmts) == 1 and stmts[0][0] == node.level and stmts[0][1] == (node.module or "")
                and [n for n, _ in stmts[0][2]] == [a.name for a in node.names]):
            continue
        indent = " " * node.col_offset
        new = ("\n" + indent).join(_fmt_import(indent, lvl, mod, names) for lvl, mod, names in stmts)
        start = offsets[node.lineno - 1] + len(lines[node.lineno - 1].encode("utf-8")[:node.col_offset].decode("utf-8"))
        end_line = lines[node.end_lineno - 1]  # type: ignore[index]
        end = offsets[node.end_lineno - 1] + len(end_line.encode("utf-8")[:node.end_col_offset].decode("utf-8"))  # type: ignore[index]
        edits.append((start, end, new))
    if not edits:
        return False
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    path.write_text(text, encoding="utf-8")
    return True


def _text_patterns() -> list[tuple[re.Pattern[str], str]]:
    pats = []
    for old, new in MOVES.items():
        if old == new:
            continue
        keep_m = r"(?<!-m lowprec\.)" if old in PYTHON_M else ""
        pats.append((re.compile(rf"{keep_m}\bsimulations\.{re.escape(old)}\b"), f"simulations.{new}"))
        pats.append((re.compile(rf"\bsimulations/{re.escape(old)}\.py\b"),
                     "simulations/" + str(_path_of(new).relative_to(ROOT / "simulations"))))
    for old in ("recompute", "blocks", "scaling"):
        pats.append((re.compile(rf"\bsimulations/{old}\.py\b"), f"simulations/{old}/__init__.py"))
    return pats


def _text_files() -> list[Path]:
    out = []
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    for rel in listed:
        if not rel:
            continue
        p = ROOT / rel
        if p.suffix not in TEXT_SUFFIXES or not p.is_file() or p.is_symlink():
            continue
        # the restructure scripts (this one, tools/restructure_course.py) hold old names as their maps
        if set(Path(rel).parts) & SKIP_DIRS or (p.parent.name == "tools" and p.name.startswith("restructure_")):
            continue
        out.append(p)
    return out


def _alias_text(old: str) -> str:
    new = MOVES[old]
    parent, _, leaf = new.rpartition(".")
    head = (f'"""Alias of `lowprec.simulations.{new}`, which moved in the restructure of `simulations/` (issue 27):\n'
            f"importing `lowprec.simulations.{old}` gives that module itself, so the README's name keeps working")
    if old in PYTHON_M:
        return (head + f",\nand `python -m lowprec.simulations.{old}` runs the simulation.\n"
                f'{KEEP_MARK}\n"""\n\nimport sys\n\nfrom .{parent} import {leaf} as _module\n\n'
                'if __name__ == "__main__":\n    sys.exit(_module.SIMULATION.main())\n'
                "sys.modules[__name__] = _module\n")
    return head + f'.\n{KEEP_MARK}\n"""\n\nimport sys\n\nfrom .{parent} import {leaf} as _module\n\nsys.modules[__name__] = _module\n'


def move_files() -> None:
    for pkg in {new.split(".")[0] for new in MOVES.values()} - {"quant"}:
        d = ROOT / "simulations" / pkg
        d.mkdir(exist_ok=True)
    for old, new in MOVES.items():
        src = _old_path(old)
        if old in DROPPED:
            if src.exists():
                subprocess.run(["git", "rm", "-q", "-f", str(src)], cwd=ROOT, check=True)
            continue
        dst = _path_of(new)
        if src.exists() and not dst.exists() and KEEP_MARK not in src.read_text(encoding="utf-8"):
            subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    for pkg, doc in NEW_PACKAGES.items():
        init = ROOT / "simulations" / pkg / "__init__.py"
        if not init.exists():
            init.write_text(doc, encoding="utf-8")
    for pkg, text in MAINS.items():
        main = ROOT / "simulations" / pkg / "__main__.py"
        if not main.exists():
            main.write_text(text, encoding="utf-8")
    for old in ALIASES:
        _old_path(old).write_text(_alias_text(old), encoding="utf-8")
    for cache in (ROOT / "simulations").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    existing = _existing_modules()
    reverse = _reverse()
    changed = []
    for p in _text_files():
        if p.suffix == ".py" and rewrite_imports(p, existing, reverse):
            changed.append(p)
    pats = _text_patterns()
    for p in _text_files():
        text = p.read_text(encoding="utf-8")
        if KEEP_MARK in text:
            continue
        out = []
        for line in text.split("\n"):
            if KEEP_LINE not in line:
                for pat, repl in pats:
                    line = pat.sub(repl, line)
            out.append(line)
        new = "\n".join(out)
        if new != text:
            p.write_text(new, encoding="utf-8")
            changed.append(p)
    move_files()
    for p in sorted(set(changed)):
        print(p.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
