"""The import graph of the `lowprec` package (tests/importgraph.py: every import statement, lazy ones
included, and the registries that import by name): no cycle between modules, and layers that point
down (DESIGN.md):

    formats      → nothing of lowprec but the leaf modules
    simulations  → formats (+ leaves)
    course       → formats, simulations (+ leaves)
    gpu          → formats, simulations (+ leaves)
    benchmarks   → formats, simulations, gpu (+ leaves); the benchmarks that drive the app
                   (`APP_BENCHMARKS`) → app too
    app          → anything; nothing outside app imports app but `APP_BENCHMARKS`

Leaves (import nothing of lowprec but the floor): `lowprec` itself, `lowprec.strictjson`, `lowprec.commandline`,
`lowprec.config`,
`lowprec.extras`, and under them the floor, `lowprec.numtext` (the one number-to-text module), which
imports nothing of lowprec and which the other leaves may import.
Third-party: Panel/Bokeh/param only in app, Triton only in gpu, torch only where
autograd or a torch backend is the point (the recompute simulation, the course examples that run
torch.utils.checkpoint, the recipe lab's state-dict reader, gpu, benchmarks).
The same checks run on the installed wheel in tests/test_packaging.py (`check_graph`).

Why `APP_BENCHMARKS` (issue 27 item 7, benchmarks in one place): every benchmark lives in
`lowprec.benchmarks` and is named in its one table (`BENCHMARKS`, which `lowprec bench` enumerates);
two of them time the app itself (widget updates, pages ready in a browser, sessions under load) and
cannot do so without importing it. They are named here one by one, import no third-party GUI module
themselves, and nothing of the app imports them but the `lowprec.app.bench*` aliases of their old
`python -m` paths; the no-cycle check still holds over them. The GPU benchmark needs no exception:
it reaches Triton through `lowprec.gpu.timing`.

Inside `simulations`, subpackages by concept (issue 27 item 7) point down too (`SIMULATIONS_MAY_IMPORT`):
`scaling` (scaled casts, granularity, scales, metrics, delayed scaling, tensor streams) at the bottom,
then the framework (`Simulation`, its command lines, shared knobs) and the recipes (`quant`), then
the products (`gemm`) and the recompute simulation, then blocks, the lab and the single-module
studies, then `stateful`. No subpackage imports a module at the top of `simulations/` (the views'
records and the alias modules kept for old names); nothing of lowprec imports an alias module.
"""

from __future__ import annotations

import sys
from pathlib import Path

import lowprec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from importgraph import Graph, _modules, build  # noqa: E402

LEAVES = {"lowprec", "lowprec.strictjson", "lowprec.config", "lowprec.extras", "lowprec.commandline",
          "lowprec.numtext"}
#: leaves that the other leaves may import (they themselves import nothing of lowprec)
FLOOR = {"lowprec.numtext"}
#: layer → the layers it may import (besides itself and the leaves)
MAY_IMPORT: dict[str, set[str]] = {
    "formats": set(),
    "simulations": {"formats"},
    "course": {"formats", "simulations"},
    "gpu": {"formats", "simulations"},
    "benchmarks": {"formats", "simulations", "gpu"},
    "app": {"formats", "simulations", "course", "gpu", "benchmarks"},
}
#: third-party module → module-name prefixes allowed to import it
THIRD_PARTY_ONLY_IN: dict[str, tuple[str, ...]] = {
    "panel": ("lowprec.app.",),
    "bokeh": ("lowprec.app.",),
    "param": ("lowprec.app.",),
    "triton": ("lowprec.gpu.",),
    # examples_course: the checkpointing primer and the seed-001 lesson run torch.utils.checkpoint
    # lab.torch_reader: a PyTorch state dict is read with torch.load(weights_only=True)
    # examples_transfer: the course's checkpointing probes run torch.utils.checkpoint (issue 31)
    "torch": ("lowprec.simulations.recompute.harness", "lowprec.course.examples_course",
              "lowprec.course.examples_transfer",
              "lowprec.simulations.lab.torch_reader", "lowprec.gpu.", "lowprec.benchmarks."),
}
#: benchmarks that drive the app and may import it (see the module docstring)
APP_BENCHMARKS = {"lowprec.benchmarks.app", "lowprec.benchmarks.isolation"}
#: simulations' subpackage → the subpackages it may import (besides itself): a DAG, bottom first
SIMULATIONS_MAY_IMPORT: dict[str, set[str]] = {
    "scaling": set(),
    "framework": {"scaling"},
    "quant": {"scaling"},
    "gemm": {"framework", "scaling", "quant"},
    "recompute": {"framework", "scaling"},
    "blocks": {"framework", "scaling", "quant"},
    "lab": {"framework", "scaling", "quant", "gemm"},
    "studies": {"framework", "scaling", "quant", "gemm", "recompute", "blocks"},
    "stateful": {"framework", "scaling", "quant", "gemm", "recompute", "studies"},
}
#: cycles tolerated for now (none: keep it that way)
KNOWN_CYCLES: list[list[str]] = []


def layer(module: str) -> str:
    if module in LEAVES:
        return "leaf"
    return module.split(".")[1]


def layering_problems(g: Graph) -> list[str]:
    problems = []
    for mod, targets in sorted(g.edges.items()):
        src = layer(mod)
        for t in sorted(targets):
            dst = layer(t)
            if dst == "leaf" or dst == src:
                if src == "leaf" and mod != "lowprec" and t != mod and (t not in FLOOR or mod in FLOOR):
                    problems.append(f"leaf {mod} imports {t}")
                continue
            if dst == "app" and mod in APP_BENCHMARKS:
                continue
            if src == "leaf" or dst not in MAY_IMPORT.get(src, set()):
                problems.append(f"{mod} ({src}) imports {t} ({dst})")
    for mod, names in sorted(g.third_party.items()):
        for name, allowed in THIRD_PARTY_ONLY_IN.items():
            if name in names and not mod.startswith(allowed):
                problems.append(f"{mod} imports {name}")
    return problems


def check_graph(root: str | Path) -> tuple[list[list[str]], list[str]]:
    """(cycles not in KNOWN_CYCLES, layering problems) of the package at `root`."""
    g = build(root)
    cycles = [c for c in g.cycles() if c not in KNOWN_CYCLES]
    return cycles, layering_problems(g)


GRAPH = build(lowprec.__path__[0])


def test_graph_covers_every_layer() -> None:
    layers = {layer(m) for m in GRAPH.edges}
    assert {"formats", "simulations", "course", "gpu", "benchmarks", "app", "leaf"} <= layers
    # the walk sees lazy imports and registries: the CLI's table reaches every command module
    assert "lowprec.app.commands.cast_cmd" in GRAPH.edges["lowprec.app.cli"]
    assert "lowprec.benchmarks" in GRAPH.edges["lowprec.app.commands.bench_cmd"]
    # the one table of benchmarks names every benchmark module, the app's and the GPU's included
    assert {"lowprec.benchmarks.cli", "lowprec.benchmarks.app", "lowprec.benchmarks.isolation",
            "lowprec.benchmarks.gpu"} <= GRAPH.edges["lowprec.benchmarks"]


def test_no_import_cycle() -> None:
    cycles, _ = check_graph(lowprec.__path__[0])
    assert cycles == []


def test_known_cycles_still_exist() -> None:
    """An allow-listed cycle that is gone must leave the allow-list too."""
    found = GRAPH.cycles()
    assert [c for c in KNOWN_CYCLES if c not in found] == []


def test_layers_point_down() -> None:
    _, problems = check_graph(lowprec.__path__[0])
    assert problems == []


def test_the_checker_sees_a_violation() -> None:
    g = Graph(edges={"lowprec.formats.codec": {"lowprec.app.cli"}, "lowprec.app.cli": {"lowprec.formats.codec"},
                     "lowprec.gpu.x": set()},
              third_party={"lowprec.formats.codec": {"torch"}, "lowprec.gpu.x": {"panel"}})
    assert g.cycles() == [["lowprec.app.cli", "lowprec.formats.codec"]]
    assert layering_problems(g) == ["lowprec.formats.codec (formats) imports lowprec.app.cli (app)",
                                    "lowprec.formats.codec imports torch",
                                    "lowprec.gpu.x imports panel"]


def test_only_the_named_benchmarks_may_import_the_app() -> None:
    """`APP_BENCHMARKS` is an exception by name: another benchmark that imports the app, or a named
    one that imports Panel itself, is still a violation."""
    g = Graph(edges={"lowprec.benchmarks.app": {"lowprec.app.export"},
                     "lowprec.benchmarks.formats": {"lowprec.app.pages"}},
              third_party={"lowprec.benchmarks.app": {"panel"}})
    assert layering_problems(g) == [
        "lowprec.benchmarks.formats (benchmarks) imports lowprec.app.pages (app)",
        "lowprec.benchmarks.app imports panel"]


SIM = "lowprec.simulations"


def _sim_part(module: str) -> str | None:
    """The subpackage of a simulations module; "" for a module at the top of simulations/ (or the
    package itself); None outside simulations."""
    parts = module.split(".")
    if parts[:2] != SIM.split("."):
        return None
    if len(parts) == 2:
        return ""
    return parts[2] if f"{SIM}.{parts[2]}" in GRAPH_PACKAGES else ""


GRAPH_PACKAGES = {m for m, path in _modules(Path(lowprec.__path__[0])).items() if path.name == "__init__.py"}


def simulations_problems(g: Graph) -> list[str]:
    problems = []
    for mod, targets in sorted(g.edges.items()):
        src = _sim_part(mod)
        if not src:
            continue
        for t in sorted(targets):
            dst = _sim_part(t)
            if dst is None or dst == src or t == SIM:
                continue
            if dst == "":
                problems.append(f"{mod} ({src}) imports {t}, a module at the top of simulations/")
            elif dst not in SIMULATIONS_MAY_IMPORT.get(src, set()):
                problems.append(f"{mod} ({src}) imports {t} ({dst})")
    return problems


def test_simulations_subpackages_exist() -> None:
    subpackages = {m.split(".")[2] for m in GRAPH_PACKAGES if m.startswith(SIM + ".") and m.count(".") == 2}
    assert subpackages == set(SIMULATIONS_MAY_IMPORT)


def test_simulations_subpackages_point_down() -> None:
    assert simulations_problems(GRAPH) == []


def _alias_modules() -> set[str]:
    import lowprec.simulations

    root = Path(lowprec.simulations.__path__[0])
    return {f"{SIM}.{p.stem}" for p in root.glob("*.py")
            if "sys.modules[__name__] = _module" in p.read_text(encoding="utf-8")}


def test_nothing_imports_an_alias_module() -> None:
    aliases = _alias_modules()
    assert {f"{SIM}.{n}" for n in ("mx", "nvfp4", "block_conventions", "attention", "grouping", "hadamard",
                                      "spike", "delayed", "te_placement", "defect_hunt")} <= aliases
    users = sorted(f"{m} imports {t}" for m, ts in GRAPH.edges.items() for t in ts
                   if t in aliases and m not in aliases)
    assert users == []


def test_the_simulations_checker_sees_a_violation() -> None:
    g = Graph(edges={f"{SIM}.quant.engine": {f"{SIM}.gemm.core", f"{SIM}.examples"},
                     f"{SIM}.scaling.metrics": {f"{SIM}.scaling.granularity"}})
    assert simulations_problems(g) == [
        f"{SIM}.quant.engine (quant) imports {SIM}.examples, a module at the top of simulations/",
        f"{SIM}.quant.engine (quant) imports {SIM}.gemm.core (gemm)"]


def test_the_floor_leaf_stays_below_the_other_leaves() -> None:
    """A leaf may import the floor (`lowprec.numtext`), the floor imports no leaf, and a leaf still
    imports no other leaf."""
    g = Graph(edges={"lowprec.strictjson": {"lowprec.numtext"}, "lowprec.numtext": {"lowprec.config"},
                     "lowprec.config": {"lowprec.extras"}, "lowprec.extras": set()},
              third_party={})
    assert layering_problems(g) == ["leaf lowprec.config imports lowprec.extras",
                                    "leaf lowprec.numtext imports lowprec.config"]
