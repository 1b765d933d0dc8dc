"""lowprec.simulations — the phenomena as pure functions over numpy (torch only for autograd).

Imports `formats` and the leaf helpers `lowprec.config` and `lowprec.strictjson` only (never `app`,
Panel or Bokeh); every result is a dataclass with `to_dict()`, written by the one JSON writer. Each
simulation module declares its parameters once, as a config record, and one `SIMULATION`
(`simulations._cli.Simulation`) from which `python -m lowprec.simulations.NAME`, `lowprec simulate
NAME` and the app's widget are generated: spike, grouping, blocks, attention, recompute, hadamard
(the app's faces of each, in one registry: `lowprec.app.sim_faces`).
Scaled-quantization recipes live in one wing, `simulations.quant` (recipes as data and one
`quantize`), which the blocks simulation, the recipe lab (`simulations.lab`) and the lessons read.
"""
