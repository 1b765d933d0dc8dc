"""The import graph of the `lowprec` package, read from its source files with `ast` (nothing is
imported): one node per module, one edge per import statement that names a lowprec module —
module-level or inside a function (a lazy import is still a dependency) — plus string constants
that name a lowprec module (`"lowprec.app.commands.cast_cmd"`, `"lowprec.benchmarks.app"`, `"mod:Class"`:
the registries that import by name; not a module started in a child process with `-m`), and the
third-party top-level modules each one imports.

Used by tests/test_import_graph.py on the checkout and by tests/test_packaging.py on the installed
wheel (`python tests/importgraph.py ROOT` prints the graph as JSON).
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository root holds tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.layout import package_modules  # noqa: E402

PACKAGE = "lowprec"


@dataclass
class Graph:
    edges: dict[str, set[str]] = field(default_factory=dict)  # module → lowprec modules it imports
    third_party: dict[str, set[str]] = field(default_factory=dict)  # module → top-level names

    def cycles(self) -> list[list[str]]:
        """Strongly connected components with more than one module (Tarjan), each sorted."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        out: list[list[str]] = []
        counter = [0]

        def visit(v: str) -> None:
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on_stack.add(v)
            for w in sorted(self.edges.get(v, ())):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

        sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
        for v in sorted(self.edges):
            if v not in index:
                visit(v)
        return sorted(out)


def _modules(root: Path) -> dict[str, Path]:
    """Module name → file, for every .py of the `lowprec` package whose folder is `root`: a
    checkout's `lowprec/` (its layers are the top-level folders beside it) or an installed one
    (tools/layout.py)."""
    return package_modules(root)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted `name` that is a lowprec module."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def build(root: str | Path) -> Graph:
    root = Path(root)
    modules = _modules(root)
    g = Graph()
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        edges: set[str] = set()
        third: set[str] = set()
        # a module run in a child process (`[sys.executable, "-m", "lowprec.app.cli", …]`) is not
        # imported: the string after a "-m" in a list or tuple is no edge
        child_runs = {id(b) for seq in ast.walk(tree) if isinstance(seq, (ast.List, ast.Tuple))
                      for a, b in zip(seq.elts, seq.elts[1:])
                      if isinstance(a, ast.Constant) and a.value == "-m"}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" for a in node.names] if base else []
                if base and not base.startswith(PACKAGE):
                    targets = [base]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in child_runs:
                text = node.value.partition(":")[0]
                if text.startswith(PACKAGE + ".") and " " not in text and text in modules:
                    targets = [text]
            for t in targets:
                top = t.split(".")[0]
                if top == PACKAGE:
                    r = _resolve(t, modules)
                    if r is not None and r != mod:
                        edges.add(r)
                elif top and not isinstance(node, ast.Constant):
                    third.add(top)
        g.edges[mod] = edges
        g.third_party[mod] = third
    return g


if __name__ == "__main__":
    graph = build(sys.argv[1])
    print(json.dumps({"edges": {k: sorted(v) for k, v in graph.edges.items()},
                      "third_party": {k: sorted(v) for k, v in graph.third_party.items()}}))
