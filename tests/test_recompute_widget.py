"""The RecomputeDivergence widget against an independent computation, and its record-driven controls.

Oracle for the heatmap: the recompute-mutates defect at step 0, layer 0, computed here from the
data recipe written out (numpy), Transformer Engine's scale rule (F / amax), ml_dtypes' E4M3FN cast
with saturation and torch's own linear + tanh (the network's layer, on one thread).
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec.app.widgets._sim_base import binary_columns
from lowprec.app.widgets.recompute_divergence import RecomputeDivergence

SMALL: dict[str, Any] = dict(layers=2, width=8, batch=4, steps=2, seed=3)


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def e4m3(x: np.ndarray) -> np.ndarray:
    """ml_dtypes E4M3FN cast with saturation (clip first), back to float32."""
    return np.clip(x, -448.0, 448.0).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)


def test_heatmap_cell_matches_an_independent_recompute_mutates_step() -> None:
    """Step 0, layer 0 under recompute-mutates: the forward casts with the initial scale 1; by the
    time backward recomputes layer 0, the forward has committed amax_0 = max|x|, so the
    recompute casts with s = float32(448 / amax_0). The cell shows the larger of the GEMM-input
    and the layer-output differences."""
    w = RecomputeDivergence(variant="recompute-mutates", **SMALL)
    # the data recipe, written out: offsets, teacher, inputs, then the weights
    rng = np.random.default_rng(SMALL["seed"])
    width, batch, steps, layers = SMALL["width"], SMALL["batch"], SMALL["steps"], SMALL["layers"]
    offsets = rng.standard_normal(width)
    rng.standard_normal((width, width))  # the teacher
    x = (rng.standard_normal((steps, batch, width)) + offsets).astype(np.float32)[0]
    w0 = (rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32)
    s = np.float32(448.0 / float(np.abs(x).max()))
    dequant_forward = e4m3(x)  # scale 1, descale 1
    dequant_recompute = (e4m3((x * s).astype(np.float32)) * np.float32(1.0 / s)).astype(np.float32)

    def layer(a: np.ndarray) -> np.ndarray:
        out = torch.tanh(torch.nn.functional.linear(torch.from_numpy(a), torch.from_numpy(w0),
                                                    torch.zeros(width)))
        return out.numpy().astype(np.float64)

    expected = max(float(np.max(np.abs(dequant_forward.astype(np.float64) - dequant_recompute))),
                   float(np.max(np.abs(layer(dequant_forward) - layer(dequant_recompute)))))
    cells = w.sources["cells"].data
    i = next(k for k in range(len(cells["step"])) if cells["step"][k] == 0 and cells["layer"][k] == 0)
    assert cells["status"][i] == "differs"
    assert cells["max_abs_diff"][i] == expected
    assert expected > 0 and layers == 2


def test_every_record_knob_is_a_live_control() -> None:
    """Changing a knob the widget did not offer before the record (width) re-runs the simulation."""
    w = RecomputeDivergence(**SMALL)
    assert w.result.parameters["width"] == 8
    w.width = 16
    assert w.error == "" and w.result.parameters["width"] == 16
    assert len(w.sources["cells"].data["step"]) == SMALL["steps"] * SMALL["layers"]


def test_a_bad_combination_is_the_records_message_and_keeps_the_view() -> None:
    w = RecomputeDivergence(**SMALL)
    shown = lambda: {k: (v.tobytes() if isinstance(v, np.ndarray) else list(v))  # noqa: E731
                     for k, v in w.sources["cells"].data.items()}
    w.format = "E2M1"
    w.overflow = "nonfinite"  # E2M1 has neither Inf nor NaN
    assert w.error.startswith("Invalid input: overflow: 'nonfinite' needs a format with Inf or NaN")
    assert w._alert.visible
    assert w.result.parameters["format"] == "E2M1" and w.result.parameters["overflow"] == "saturate"
    # the E2M1 run is the last good view: the cells shown are its columns (bit for bit; before this
    # compared with != and passed on NaN != NaN alone, the cells being the same for both formats)
    assert shown() == {k: (v.tobytes() if isinstance(v, np.ndarray) else list(v))
                       for k, v in binary_columns(w._source_data(w.result))["cells"].items()}
    w.overflow = "saturate"
    assert w.error == "" and not w._alert.visible


def test_commit_reference_line_follows_the_design() -> None:
    w = RecomputeDivergence(variant="bf16-control", **SMALL)
    assert w._expected_commits.location == 0
    w.variant = "fixed"
    assert w._expected_commits.location == SMALL["layers"]
    assert list(w.sources["steps"].data["state_commits"]) == [SMALL["layers"]] * SMALL["steps"]


def test_served_runs_stay_in_the_server_and_a_superseded_run_stops() -> None:
    """The widget runs its simulation (`recompute.SIMULATION`, like every simulation widget) but,
    served, on a pool thread of the server rather than in a worker process (torch is imported
    there once); a run whose request is no longer the newest stops at its next step."""
    from lowprec.app import work
    from lowprec.app.widgets.delayed_spike import DelayedSpike
    from lowprec.simulations import recompute

    assert RecomputeDivergence.simulation is recompute.SIMULATION
    assert RecomputeDivergence.runs_simulation() and not RecomputeDivergence.runs_in_worker()
    assert DelayedSpike.runs_in_worker()
    w = RecomputeDivergence(**SMALL)
    config = w.config()
    w._generation += 1  # a newer request exists
    with pytest.raises(work.Superseded, match="superseded by a newer request"):
        w._run(w._generation - 1, config)
    r = w._run(w._generation, config)  # the newest request runs to the end
    assert r.parameters["layers"] == SMALL["layers"] and r.bitwise_equal.all()
