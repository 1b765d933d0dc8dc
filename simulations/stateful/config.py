"""The stateful-scaling simulation's parameters, declared once (`lowprec.config`), with their cost.

`StatefulConfig` is the one source of the run's knobs: `lowprec simulate stateful` and `python -m
lowprec.simulations.stateful` generate their options from it (`stateful.SIMULATION`), the WhoseAmax
widget its controls and URL state, and a lesson directive its parameters, all with these names. The
knobs it shares with other simulations (seed, format, overflow and the delayed scaler's history,
algo and margin) are the shared declarations of `simulations.framework.knobs`, with one set of bounds.

The data: per optimizer step t and microbatch k, a [rows, width] float32 tensor σ·N(0, 1) (σ = 1),
its rows split over `ranks` shards; at the spike steps (`spike_step`, then every `spike_every`
steps; 0: once) the shard of rank `spike_rank` in microbatch `spike_microbatch` is multiplied by
`spike`. A spike step, microbatch or rank outside the run is refused, naming the knob.
"""

from __future__ import annotations

from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import get_format

from ..framework.knobs import algo_knob, format_knob, history_knob, margin_knob, overflow_knob, seed_knob
from ..recompute.state import activation_formats
from .designs import DESIGNS

__all__ = ["StatefulConfig"]

# cost model, fitted on the project's build machine (numpy, 2 shared cores, load 3): seconds per
# (step, microbatch, rank) cell = _S_CELL (the casts of a rank's shards and the bookkeeping) +
# _S_MAC · the multiply-adds of its share of the float64 products (forward, the paired reference,
# the layer-1 product and two backward passes: about 8 · rows · width² / ranks), × 1.3 for a busier
# machine; bytes: the per-cell telemetry and the tensors of one microbatch. Measured (medians of 3):
# the defaults (16 × 4 × 4 cells of 64 × 32) 0.13 s; rows 256, width 128: 3.4 s; 100 steps × 8 × 8:
# 2.2 s.
_S_START = 0.02
_S_CELL = 3e-4
_S_MAC = 1.5e-9
_SAFETY = 1.3
_B_START = 24 * 2**20
_B_CELL = 600


@config_record
class StatefulConfig:
    """One run of the stateful-scaling simulation: a two-layer network, its operands cast by
    delayed-scaling owners of the design `variant`, trained by SGD with gradient accumulation over
    `microbatches`, its layer input sharded over `ranks` (sequence parallel, gathered in FP8) and
    its layers checkpointed (the backward recomputes them)."""

    variant: str = knob("accum-window-max", "the design: who owns each delayed-scaling state, when it advances, what "
                        "each consumer reads (a defect or its corrected form)", choices=tuple(DESIGNS))
    steps: int = knob(16, "optimizer steps (logical steps)", bounds=(1, 100))
    microbatches: int = knob(4, "microbatches per optimizer step (gradient accumulation)", bounds=(1, 8))
    ranks: int = knob(4, "ranks holding shards of the layer input (sequence parallel; the layers' "
                      "weights are split over them too)", bounds=(1, 8))
    group: int = knob(2, "ranks per amax-reduction group of the dist-subgroup design", bounds=(1, 8))
    rows: int = knob(64, "rows (tokens) of one microbatch's layer input, split over the ranks", bounds=(1, 512))
    width: int = knob(32, "features of every layer (the weights are width × width)", bounds=(1, 128))
    spike: float = knob(16.0, "spike: the multiple of the ordinary input one shard carries at a spike",
                        bounds=(1.0, 1e6), widget="input")
    spike_step: int = knob(4, "first optimizer step with the spike", bounds=(0, 99))
    spike_every: int = knob(4, "the spike recurs every this many steps after spike_step (0: once)", bounds=(0, 100))
    spike_microbatch: int = knob(0, "microbatch whose input carries the spike", bounds=(0, 7))
    spike_rank: int = knob(0, "rank whose shard carries the spike", bounds=(0, 7))
    run_every: int = knob(2, "the layer-1 module of the skipped-module designs (an expert) runs on steps "
                          "t with t % run_every == 0", bounds=(1, 16))
    lr: float = knob(0.05, "SGD learning rate", bounds=(0.0, 10.0), widget="input")
    seed: int = seed_knob("seed of the data, the teacher and the initial weights")
    format: str = format_knob(activation_formats(), "format every operand is cast to")
    history: int = history_knob()
    algo: str = algo_knob()
    margin: int = margin_knob()
    overflow: str = overflow_knob()

    def __post_init__(self) -> None:
        if self.spike_step >= self.steps:
            raise ConfigError("spike_step", f"{self.spike_step} is outside the run of {self.steps} steps; "
                                            f"allowed 0..{self.steps - 1}")
        if self.spike_microbatch >= self.microbatches:
            raise ConfigError("spike_microbatch", f"{self.spike_microbatch} is outside the {self.microbatches} "
                                                  f"microbatches; allowed 0..{self.microbatches - 1}")
        if self.spike_rank >= self.ranks:
            raise ConfigError("spike_rank", f"{self.spike_rank} is outside the {self.ranks} ranks; "
                                            f"allowed 0..{self.ranks - 1}")
        if self.rows < self.ranks:
            raise ConfigError("rows", f"{self.rows} rows cannot be split over {self.ranks} ranks; give at least "
                                      f"one row per rank")
        if self.width < self.ranks:
            raise ConfigError("width", f"{self.width} features cannot be split over {self.ranks} ranks; give at "
                                       f"least one per rank")
        fmt = get_format(self.format)
        if self.overflow == "nonfinite" and not (fmt.has_inf or fmt.has_nan):
            raise ConfigError("overflow", f"'nonfinite' needs a format with Inf or NaN; "
                                          f"{fmt.name} has neither (use saturate)")

    def spike_at(self, step: int, microbatch: int) -> bool:
        """Whether microbatch `microbatch` of step `step` carries the spike (on `spike_rank`'s shard)."""
        if microbatch != self.spike_microbatch or step < self.spike_step:
            return False
        if self.spike_every == 0:
            return step == self.spike_step
        return (step - self.spike_step) % self.spike_every == 0

    def cost(self) -> Cost:
        """Memory and time of the run, estimated before it starts (see the module's figures)."""
        cells = self.steps * self.microbatches * self.ranks
        macs = 8 * self.rows * self.width**2 / self.ranks
        seconds = _S_START + _SAFETY * cells * (_S_CELL + _S_MAC * macs)
        nbytes = _B_START + cells * _B_CELL + 16 * 8 * (self.rows * self.width + 2 * self.width**2)
        return Cost(bytes=float(nbytes), seconds=seconds,
                    note=f"{cells} (step, microbatch, rank) cells of a [{self.rows}, {self.width}] layer input")
