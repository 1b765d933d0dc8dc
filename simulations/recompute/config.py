"""The recompute simulation's parameters, declared once (`lowprec.config`), with their cost.

`RecomputeConfig` is the one source of the run's knobs: `lowprec simulate recompute` and
`python -m lowprec.simulations.recompute` generate their options from it through the simulation's
`Simulation` declaration (`recompute.SIMULATION`), the RecomputeDivergence widget its controls
and URL state (`lowprec.app.widgets._sim_base.simulation_widget`) and the lesson directive its
parameters (`lowprec.app.lessons.WIDGET_PARAMS`), all with these names. The knobs it shares with
other simulations (seed, format, and the delayed scaler's history, algo and margin) are the shared
declarations of `simulations.framework.knobs`, with one set of bounds. Torch-free, so building a parser or a
lesson table does not import torch.

The bounds keep one run small: at the maximum of every knob together (16 layers × width 256,
batch 256, 100 steps) a run takes about 130 MB beyond the interpreter and torch and 15-20 s on
one core (measured; `cost()` estimates both from the values before a run).
"""

from __future__ import annotations

from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import get_format

from ..framework.knobs import (OVERFLOW_MODES, algo_knob, format_knob, history_knob, margin_knob, overflow_knob,
                               seed_knob)
from .state import DETERMINISTIC_ROUNDINGS, QUANTIZERS, activation_formats

__all__ = ["RecomputeConfig", "OVERFLOW_MODES"]


# cost model, fitted to runs of the slowest variant (stale-centre) on the project's build machine
# (torch 2.13 CPU, one thread, 2 shared cores): seconds per layer call (step × layer) =
# _S_CALL + _S_ELEMENT · batch · width + _S_MAC · batch · width² (the numpy cast dominates; the
# GEMMs are small); bytes = the data, the weights (four copies: the problem's, the parameters,
# their gradients, the final weights), the per-call records of forward and recompute, and the
# per-(step, layer) telemetry. At the bounds: estimate ≈ 20 s and ≈ 128 MiB; measured 15.6-19.5 s
# on a quiet machine, 24.9 s at load 3 on 2 cores, and +127 MiB peak RSS (`lowprec bench
# recompute` measures both again, beside the estimate).
_S_START = 0.05  # seconds: the first checkpoint call's lazy imports are paid by warm_up()
_S_CALL = 2e-3
_S_ELEMENT = 1.5e-7
_S_MAC = 5e-11
_B_START = 28 * 2**20  # bytes: numpy temporaries of one cast, autograd's buffers, the result's lists
_B_CELL = 1_500  # bytes per (step, layer): telemetry arrays, hashes and their JSON lists


@config_record
class RecomputeConfig:
    """One run of the recompute-divergence simulation: a tanh MLP whose layer inputs are quantized
    by a delayed-scaling quantizer of design `variant`, trained by SGD under activation
    checkpointing."""

    variant: str = knob("fixed", "quantizer design: the corrected one (fixed) or a defect variant",
                        choices=tuple(QUANTIZERS))
    layers: int = knob(4, "number of checkpointed layers", bounds=(1, 16))
    width: int = knob(64, "layer width (features per activation row)", bounds=(1, 256))
    batch: int = knob(16, "batch size (rows per step)", bounds=(1, 256))
    steps: int = knob(20, "SGD training steps", bounds=(1, 100))
    seed: int = seed_knob("seed of the data and the initial weights")
    format: str = format_knob(activation_formats(), "format of the quantized layer inputs")
    history: int = history_knob()
    algo: str = algo_knob()
    margin: int = margin_knob()
    lr: float = knob(0.1, "SGD learning rate", bounds=(0.0, 10.0), widget="input")
    rounding: str = knob("nearest_even", "rounding of the cast (stochastic is left out: replaying "
                         "random bits in recompute is another hazard)", choices=DETERMINISTIC_ROUNDINGS)
    overflow: str = overflow_knob()
    checkpointing: bool = knob(True, "activation checkpointing: backward re-runs each layer "
                               "(the recompute)")

    def __post_init__(self) -> None:
        fmt = get_format(self.format)
        if self.overflow == "nonfinite" and not (fmt.has_inf or fmt.has_nan):
            raise ConfigError("overflow", f"'nonfinite' needs a format with Inf or NaN; "
                                          f"{fmt.name} has neither (use saturate)")

    def cost(self) -> Cost:
        """Memory and time of the run, estimated before it starts (see the module's figures)."""
        cells = self.steps * self.layers
        seconds = _S_START + cells * (_S_CALL + _S_ELEMENT * self.batch * self.width
                                      + _S_MAC * self.batch * self.width**2)
        f32 = 4
        data = 2 * self.steps * self.batch * self.width * f32  # inputs and targets
        weights = 4 * self.layers * (self.width**2 + self.width) * f32
        records = self.layers * 2 * 4 * self.batch * self.width * f32  # + autograd's saved inputs
        nbytes = _B_START + data + weights + records + cells * _B_CELL
        return Cost(bytes=float(nbytes), seconds=seconds,
                    note=f"{cells} layer calls of a [{self.batch}, {self.width}] activation")
