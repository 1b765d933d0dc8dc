"""Shared machinery of the five simulation widgets (delayed spike, attention rounding, recompute
divergence, scale grouping, block formats): a `pn.viewable.Viewer` that builds its Bokeh figures and
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
from a result; this module owns the update protocol, and the caption under the figures is the
simulation's, from the registry of simulations (`app.sim_faces`).
"""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from lowprec.app import work
from lowprec.app.params import config_widget, control_widgets, widget_config
from lowprec.app.sim_faces import widget_caption
from lowprec.config import APP_BUDGET, check_budget, fields_of
from lowprec.simulations.framework.cli import Simulation
from lowprec.app.text import set_alert

W = TypeVar("W", bound=type)


class SimulationWidget(pn.viewable.Viewer):
    """Base class: subclasses implement `_compute`, `_source_data`, `_build_figures`, `_summary_text`.

    `_compute()` runs the simulation for the current parameters and returns its result (or raises
    `ValueError`/`TypeError` for a bad combination); `_source_data(result)` returns one column dict
    per named source; `_build_figures(sources)` returns the plot layout built once over the sources.
    After every successful update `result` holds the simulation result that is on screen,
    `source_data` the dicts pushed to the sources and `last_update_s` the seconds the update took.
    """

    title: str = "Simulation"
    #: parameters whose change triggers a recomputation (subclasses list theirs)
    watched: tuple[str, ...] = ()
    #: Panel widget types for parameters whose default control does not suit (wide ranges: typed input)
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

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.result: Any = None
        self.source_data: dict[str, dict[str, list[Any]]] = {}
        self.last_update_s: float = 0.0
        self.error: str = ""
        self._alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._summary = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._busy = work.busy_indicator()
        self._generation = 0  # bumped by every update; a run whose number is older is superseded
        self._slot = work.claim_slot(self)  # where a worker process sees the newest number
        self._caption = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["lp-caption"])
        start = time.perf_counter()
        check_budget(self.config(), APP_BUDGET)  # a lesson directive over the page budget: refused
        result = self._compute()  # defaults must be valid: let a bad constructor argument raise
        data = self._source_data(result)
        pushed = binary_columns(data)  # float columns as arrays: binary in the page, not JSON text
        self.sources: dict[str, ColumnDataSource] = {
            name: ColumnDataSource(data=columns) for name, columns in pushed.items()
        }
        self._plots = self._build_figures(self.sources)
        self._accept(result, data, pushed)
        self.last_update_s = time.perf_counter() - start
        if self.watched:
            self.param.watch(self._on_param_change, list(self.watched))

    # -- subclass hooks -------------------------------------------------------------------------
    def config(self) -> Any:
        """The widget's parameters as its simulation's config record (raises its ConfigError)."""
        return widget_config(self)

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
        widgets: dict[str, dict[str, Any]] = {name: {"width": 260} for name in self.watched}
        for name, kind in self.control_widgets.items():
            widgets.setdefault(name, {})["type"] = kind
        return [pn.Param(self.param, parameters=list(self.watched), widgets=widgets, show_name=False,
                         width=280)]

    # -- update protocol ------------------------------------------------------------------------
    def _on_param_change(self, *events: param.parameterized.Event) -> None:
        self.update()

    def update(self) -> bool:
        """Recompute and push new data; on bad input (or a request over the page budget) show the
        message and keep the last view. Served: the run goes off the event loop and this returns
        True once it is submitted (the view follows when it finishes)."""
        start = time.perf_counter()
        self._generation += 1
        work.post_generation(self._slot, self._generation)
        try:
            check_budget(self.config(), APP_BUDGET)
        except (ValueError, TypeError) as exc:
            self._refuse(exc)
            return False
        doc = work.served_document()
        if doc is not None:
            self._submit(doc, self._generation, start)
            return True
        try:
            result = self._compute()
            data = self._source_data(result)
        except (ValueError, TypeError) as exc:
            self._refuse(exc)
            return False
        self._accept(result, data, binary_columns(data))
        self.last_update_s = time.perf_counter() - start
        return True

    def _refuse(self, exc: BaseException) -> None:
        self.error = f"Invalid input: {exc}"
        set_alert(self._alert, self.error)

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

    def _submit(self, doc: Any, generation: int, start: float) -> None:
        self._busy.value = True
        config = self.config()

        def compute() -> tuple[Any, dict[str, dict[str, list[Any]]], dict[str, dict[str, Any]]]:
            result = self._run(generation, config)
            data = self._source_data(result)
            return result, data, binary_columns(data)

        def finish(outcome: work.Outcome) -> None:
            if generation != self._generation:
                return  # superseded: a newer run owns the view and the spinner
            self._busy.value = False
            if isinstance(outcome.error, (ValueError, TypeError)):
                self._refuse(outcome.error)
                return
            if outcome.error is not None:
                self._refuse(RuntimeError(f"internal error ({type(outcome.error).__name__}); see the server log"))
                raise outcome.error
            result, data, pushed = outcome.value
            self._accept(result, data, pushed)
            self.last_update_s = time.perf_counter() - start

        work.submit(doc, compute, finish)

    @property
    def busy(self) -> bool:
        """Whether a run is in progress (served sessions)."""
        return bool(self._busy.value)

    def _accept(self, result: Any, data: dict[str, dict[str, list[Any]]],
                pushed: dict[str, dict[str, Any]] | None = None) -> None:
        """Show `result`: `data` (its columns) goes into the sources, or `pushed` where given (the
        same columns with float ones as arrays, which go to the browser as binary buffers)."""
        # one patch once the page has loaded (work.batched: before that Panel drops held changes)
        with work.batched():
            for name, columns in (pushed if pushed is not None else data).items():
                self.sources[name].data = columns
            self.result = result
            self.source_data = data
            self.error = ""
            self._alert.object = ""
            self._alert.visible = False
            self._after_update(result)
            self._summary.object = self._summary_text(result)
            self._caption.object = self._caption_text(result)

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
