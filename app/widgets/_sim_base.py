"""Shared machinery of the simulation widgets (delayed spike, attention rounding, recompute
divergence, scale grouping, block formats, accumulator, whose amax): a `RecordWidget` that builds its Bokeh figures and
`ColumnDataSource`s once, recomputes its simulation when a parameter changes, pushes the new columns
into the existing sources, and shows a plain-language summary line. Bad input never raises out of a
callback: the simulation's `ValueError`/`TypeError` (a config record's `ConfigError` included)
becomes a visible "Invalid ..." alert next to the controls and the last good view stays on screen.

Bounded and off the event loop: an update first checks the request against `config.APP_BUDGET`
(the record's `cost()`; over it, the alert names the parameter and the last view stays). In a served
session the simulation then runs off the event loop (`app.work`: a pool thread hands a simulation
of `lowprec.simulations` to a worker process at lower OS priority, so the server's event loop —
every other session's pages and light widgets — stays responsive; the result's float columns go
to the browser as binary arrays) while a busy spinner shows; a newer change of the same widget
supersedes an older run (it stops at its next progress report and its result is dropped). Outside a server (tests, notebooks) an update runs
inline and has finished when `update()` returns.

`@simulation_widget(SIMULATION)` makes a widget the face of a simulation declared in
`lowprec.simulations` (`simulations.framework.cli.Simulation`): one parameter per knob of its config record
(`app.params.config_widget`; the URL state and lesson directives use the same names), every one of
them watched, typed-entry controls where the record asks for them, and `_compute` = the simulation
run on the widget's config. Such a widget owns only its figures and the columns and words it draws
from a result; the update protocol is every widget's (`app.widgets._base.RecordWidget`: this class
supplies its steps — the budget check, the run routed to a worker process, the columns drawn), and
the caption under the figures is the simulation's, from the registry of simulations (`app.sim_faces`).
"""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource

from lowprec.app import work
from lowprec.app.params import config_widget, control_widgets
from lowprec.app.sim_faces import widget_caption
from lowprec.app.widgets._base import RecordWidget
from lowprec.config import APP_BUDGET, check_budget, fields_of
from lowprec.simulations.framework.cli import Simulation

W = TypeVar("W", bound=type)


class SimulationWidget(RecordWidget):
    """Base class: subclasses implement `_compute`, `_source_data`, `_build_figures`, `_summary_text`.

    `_compute()` runs the simulation for the current parameters and returns its result (or raises
    `ValueError`/`TypeError` for a bad combination); `_source_data(result)` returns one column dict
    per named source; `_build_figures(sources)` returns the plot layout built once over the sources.
    After every successful update `result` holds the simulation result that is on screen,
    `source_data` the dicts pushed to the sources and `last_update_s` the seconds the update took.
    The update protocol itself (validation, off-loop runs, superseding, the error message) is
    `RecordWidget`'s; this class routes a run to the simulation and draws columns and words.
    """

    title: str = "Simulation"
    #: parameters whose change triggers a recomputation (`simulation_widget` lists every knob)
    watched: tuple[str, ...] | None = ()
    #: Panel widget types for parameters whose default control does not suit (wide ranges: typed
    #: input), as `simulation_widget` reads them from the record (`record_controls` applies them)
    control_widgets: dict[str, Any] = {}
    #: the simulation this widget is a face of (set by `simulation_widget`), or None
    simulation: Simulation[Any, Any] | None = None
    #: served updates of a simulation's face run in a worker process (True) or on a pool thread of
    #: the server (False: RecomputeDivergence, whose torch the server has imported once already)
    worker_process: bool = True
    #: how the page that placed this widget styles a part the widget builds later (ScaleGrouping
    #: builds a study's figures when it is first shown): `app.layout.finish`, set when a page
    #: styles the widget; None (a notebook, a standalone view) leaves new parts as built
    restyle: Callable[[Any], None] | None = None
    off_loop = True

    def _build(self) -> None:
        self.result: Any = None
        self.source_data: dict[str, dict[str, list[Any]]] = {}
        self._summary = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._caption = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["lp-caption"])
        start = time.perf_counter()
        config = self._request()  # a lesson directive over the page budget: refused
        result = self._compute()  # defaults must be valid: let a bad constructor argument raise
        data = self._source_data(result)
        pushed = binary_columns(data)  # float columns as arrays: binary in the page, not JSON text
        self.sources: dict[str, ColumnDataSource] = {
            name: ColumnDataSource(data=columns) for name, columns in pushed.items()
        }
        self._plots = self._build_figures(self.sources)
        self._accept(config, (result, data, pushed), start)

    # -- subclass hooks -------------------------------------------------------------------------
    def _compute(self) -> Any:
        if self.simulation is None:
            raise NotImplementedError
        return self.simulation.run(self.config(), None)

    def _source_data(self, result: Any) -> dict[str, dict[str, list[Any]]]:
        raise NotImplementedError

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        raise NotImplementedError

    def _summary_text(self, result: Any) -> str:
        return ""

    def _caption_text(self, result: Any) -> str:
        """What to look at in the figures: the simulation's caption in the registry of simulations
        (`app.sim_faces`, shared with `--html` outputs)."""
        return widget_caption(type(self).__name__, result)

    def _after_update(self, result: Any) -> None:
        """Hook for figure properties that are not source data (ranges, highlighted spans)."""

    def _controls(self) -> list[Any]:
        # every control as wide as the column it sits in (Panel's default 300 px overflows it)
        names = self.watched_names()
        return [self.record_controls(list(names), {name: {"width": 260} for name in names}, width=280)]

    # -- the protocol's steps (RecordWidget) ------------------------------------------------------
    def _request(self) -> Any:
        """The parameters as the record, checked against the page budget (`config.APP_BUDGET`)."""
        config = self.config()
        check_budget(config, APP_BUDGET)
        return config

    def _work(self, request: Any, generation: int | None) -> Any:
        result = self._compute() if generation is None else self._run(generation, request)
        data = self._source_data(result)
        return result, data, binary_columns(data)

    def _paint(self, request: Any, outcome: Any) -> None:
        result, data, pushed = outcome
        self.show_result(result, data, pushed)

    def show_result(self, result: Any, data: dict[str, dict[str, list[Any]]],
                    pushed: dict[str, dict[str, Any]] | None = None) -> None:
        """Draw `result`: `data` (its columns) goes into the sources, or `pushed` where given (the
        same columns with float ones as arrays, which go to the browser as binary buffers)."""
        # one patch once the page has loaded (work.batched: before that Panel drops held changes)
        with work.batched():
            for name, columns in (pushed if pushed is not None else data).items():
                self.sources[name].data = columns
            self.result = result
            self.source_data = data
            self._after_update(result)
            self._summary.object = self._summary_text(result)
            self._caption.object = self._caption_text(result)

    def _run(self, generation: int, config: Any) -> Any:
        """The simulation, from a worker thread: a simulation of `lowprec.simulations` runs in a worker
        process (`work.run_simulation`) or, for a widget that keeps it in the server
        (`worker_process = False`), on this thread; a widget's own `_compute` on the thread. A
        simulation stops (work.Superseded) at its next progress report once a newer update exists.
        `config` is the request's, read when it was made (the parameters may have moved on by the
        time a pool thread starts it)."""
        if self.simulation is not None and self.runs_simulation():
            if self.runs_in_worker():
                return work.run_simulation(self.simulation, config, self._slot, generation)

            def progress(done: int, total: int) -> None:
                if generation != self._generation:
                    raise work.Superseded()

            return self.simulation.run(config, progress)
        return self._compute()

    @classmethod
    def runs_simulation(cls) -> bool:
        """Whether the widget is the face of a simulation and computes nothing of its own
        (`_compute` not overridden)."""
        return cls.simulation is not None and cls._compute is SimulationWidget._compute

    @classmethod
    def runs_in_worker(cls) -> bool:
        """Whether a served update runs in a worker process: the widget runs a simulation of its
        own (`runs_simulation`) and does not keep it in the server (`worker_process`)."""
        return cls.runs_simulation() and cls.worker_process

    @property
    def summary(self) -> str:
        """The plain-language line shown above the plots."""
        return str(self._summary.object)

    def __panel__(self) -> pn.viewable.Viewable:
        controls = pn.Column(*self._controls(), self._busy, self._alert, width=300)
        body = pn.Column(self._summary, self._plots, self._caption, sizing_mode="stretch_width")
        return pn.Row(controls, body, sizing_mode="stretch_width")


def binary_columns(data: dict[str, dict[str, list[Any]]]) -> dict[str, dict[str, Any]]:
    """`data` with every column of floats as a float64 array. Bokeh sends an array as a binary
    buffer (base64 in an exported page), where a list becomes JSON text: a served update of a heavy
    widget (16 columns of 2,048 floats) is encoded and written on the server's event loop, which
    every session shares, and the browser decodes a buffer far faster than a JSON list (the plain
    arrays of one exported lesson took ~0.4 s to decode). Columns of integers that fit 32 bits
    (indices: AttentionRounding's 2,048 query/key pairs) go as int32 arrays, which the browser
    reads as the same numbers; other columns (strings, booleans, mixed) stay lists. `source_data`
    keeps the lists."""
    out: dict[str, dict[str, Any]] = {}
    for name, columns in data.items():
        out[name] = {}
        for key, column in columns.items():
            if isinstance(column, list) and column and all(isinstance(v, (float, np.floating)) for v in column):
                out[name][key] = np.asarray(column, dtype=np.float64)
            elif isinstance(column, list) and column and all(
                    isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                    and -2**31 <= v < 2**31 for v in column):
                out[name][key] = np.asarray(column, dtype=np.int32)
            else:
                out[name][key] = column
    return out


def simulation_widget(simulation: Simulation[Any, Any]) -> Callable[[W], W]:
    """Class decorator: the widget is the face of `simulation` — its parameters, watched
    parameters, typed-entry controls and `_compute` all come from the simulation's config record."""

    def decorate(cls: W) -> W:
        config_widget(simulation.config)(cls)
        setattr(cls, "simulation", simulation)
        setattr(cls, "watched", tuple(k.name for k in fields_of(simulation.config)))
        setattr(cls, "control_widgets", control_widgets(simulation.config))
        return cls

    return decorate
