"""lowprec.simulations — the phenomena as pure functions over numpy (torch only for autograd).

Imports `formats` and the leaf helpers `lowprec.config` and `lowprec.strictjson` only (never `app`,
Panel or Bokeh); every result is a dataclass with `to_dict()`, written by the one JSON writer. Each
simulation module declares its parameters once, as a config record, and one `SIMULATION`
(`simulations.framework.cli.Simulation`) from which `python -m lowprec.simulations.NAME`, `lowprec simulate
NAME` and the app's widget are generated: spike, grouping, blocks, attention, recompute, hadamard
(the app's faces of each, in one registry: `lowprec.app.sim_faces`).
Scaled-quantization recipes live in one wing, `simulations.quant` (recipes as data and one
`quantize`), which the blocks simulation, the recipe lab (`simulations.lab`) and the lessons read.

Subpackages by concept, each importing only those below it (DESIGN.md; tests/test_import_graph.py):
`scaling` (scaled casts, granularity, scales, metrics, delayed scaling, tensor streams), `framework`
(`Simulation` and its command lines, output plumbing, shared knobs), `quant`, `gemm`, `recompute`,
`blocks`, `lab`, `studies` (single-module studies), `stateful`. The modules at the top are the
course's worked examples and aliases that keep the README's old names (`attention`, `delayed` …).
"""
