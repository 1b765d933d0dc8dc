"""RecipeLab: the recipe lab's widget (its parameters are `simulations.lab.workbench.LabConfig`'s).
Upload a `.npy`, `.npz`, `.safetensors` or PyTorch file (the size limit is stated above the drop
area) or pick a bundled sample; every float tensor runs through the chosen recipes and the table
shows each tensor × recipe's metrics (click a header to sort); for the selected tensor and recipe,
the histogram of magnitudes on a log2 axis with the format's grid and the flush and clip regions, and
the per-block error map. Every number comes from `simulations.lab` (`run_lab`); this module turns its
`LabView` into columns and words. Text that comes from the user (file and tensor names, messages
quoting them) is escaped before it reaches a Markdown pane; bad input shows a message and the last
good view stays.

Uploads (issue 33): the drop area accepts any file in the browser — Chromium gives most checkpoints
no MIME type, and filepond compared the suffix list with it, so every real `.npy`, `.safetensors`,
`.pt` … was refused — and the server decides by the name's suffix, else by the content's magic bytes
(`workbench.upload_kind`). The size limit is enforced on the server as the chunks arrive
(`LabDropper`): a chunk count, order or running size the limit does not allow drops the upload
there, before anything is assembled. Served, every run (an upload, a control change) goes to a
worker process (`work.run_in_process` → `app.lab_jobs.run`), off the event loop every session
shares, and a newer request supersedes an older one at its next tensor; the server keeps an
upload only as a file in a private folder, removed with the widget. In a notebook, runs are inline.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
import weakref
from pathlib import PurePath
from typing import Any

import panel as pn
import param
from bokeh.models import ColumnDataSource

from lowprec.app import work
from lowprec.app.lab_jobs import Source
from lowprec.app.params import config_widget
from lowprec.app.widgets._base import RecordWidget
from lowprec.config import from_mapping
from lowprec.app.text import as_text
from lowprec.app.plots.audit import (
    affected_table,
    audit_sources,
    audit_facts,
    code_figure,
    empty_audit_sources,
    scale_figure,
    table_height,
)
from lowprec.app.theme import wrap_row
from lowprec.app.plots.lab import (
    colored,
    detail_sources,
    error_bits_figure,
    error_map_figure,
    fit_text_columns,
    histogram_figure,
    results_table,
    set_error_map_range,
    table_data,
)
from lowprec.simulations.lab.readers import SUFFIXES
from lowprec.simulations.lab.samples import SAMPLES_DOC
from lowprec.simulations.lab.measure import usable_error
from lowprec.simulations.lab.workbench import (
    UPLOAD_LIMIT_BYTES,
    LabConfig,
    LabInput,
    LabView,
    describe,
    run_lab,
    sample_input,
    tensor_names,
    upload_input,
    upload_kind,
)

__all__ = ["LabDropper", "RecipeLab"]

log = logging.getLogger(__name__)


def _number(v: Any, fmt: str) -> str:
    if v is None:
        return "–"
    f = float(v)
    return str(f) if not math.isfinite(f) else format(f, fmt)


def _base(name: str) -> str:
    return PurePath(str(name).replace("\\", "/")).name or "upload"


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


#: the drop zone's label stays readable when the dropper is disabled, and filepond's light panel
#: follows the page's theme (its own colours left a bright strip under the drop area in the dark
#: theme); the custom properties of the page reach into the widget's shadow root
DROPPER_CSS = """
.filepond--root[data-disabled] .filepond--drop-label label { opacity: 1; }
.filepond--root[data-disabled] .filepond--drop-label { cursor: not-allowed; }
.filepond--panel-root { background-color: var(--lp-surface, #f3f5f7); border: 1px dashed var(--lp-border, #d5dae0); }
.filepond--drop-label { color: var(--lp-text, #1c2127); }
.filepond--drop-label label { color: var(--lp-text, #1c2127); }
.filepond--label-action { text-decoration-color: var(--lp-link, #0a58b0); color: var(--lp-link, #0a58b0); }
.filepond--root { margin-bottom: 0; }
"""


#: the name prefix of a served lab's private folder of uploaded copies (in the temporary folder);
#: `python -m lowprec.app.bench_isolation --upload` watches it to see when an upload has arrived
UPLOAD_FOLDER_PREFIX = "lowprec-lab-upload-"


class LabDropper(pn.widgets.FileDropper):
    """Panel's FileDropper with the size limit enforced on the server as the chunks arrive, and the
    file written to disk as it arrives. The browser sends a file in `chunk_size` pieces, each saying
    its number and the total, and Panel kept every piece of every file name in memory until the
    last (a crafted total of a million chunks held memory per name until the session closed; a
    file over the limit was assembled before anyone looked at its size; a complete one was joined
    into a second copy on the event loop). Here one upload is pending at a time, its chunks appended
    to a file in a private folder; a chunk whose total exceeds what the limit allows, that arrives
    out of order, or that takes the running size over the limit drops the upload there (its file
    deleted) and sets `refused` to the reason (naming the file). A complete upload sets `received`
    to (the browser's file name, the path of the file) — `value` stays empty: nothing of the file
    is held in memory."""

    limit_bytes = param.Integer(default=UPLOAD_LIMIT_BYTES, bounds=(1, None), doc="largest file accepted, bytes")
    refused = param.String(default="", doc="why the last upload was dropped on arrival ('' if it was not)")
    received = param.Tuple(default=None, allow_None=True, length=2,
                           doc="(file name, path on the server) of the last complete upload")

    _rename = {**pn.widgets.FileDropper._rename, "limit_bytes": None, "refused": None, "received": None}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._received = 0
        self._spool: tuple[str, str, Any] | None = None  # (name, path, open file) of the pending upload
        self._folder: str | None = None
        self._count = 0

    def max_chunks(self) -> int:
        """The most chunks a file within the limit arrives in (the browser sends ceil((size + 1) / chunk))."""
        return -(-(self.limit_bytes + 1) // max(1, self.chunk_size))

    def spool_folder(self) -> str:
        """The private folder uploads are written to (removed with the widget)."""
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="lowprec-lab-spool-")
            weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    def _discard(self) -> None:
        """Close and delete the pending upload's file, if any."""
        if self._spool is not None:
            _, path, fh = self._spool
            self._spool = None
            try:
                fh.close()
                os.unlink(path)
            except OSError:
                pass
        self._file_buffer.clear()
        self._received = 0

    def _drop(self, reason: str) -> None:
        self._discard()
        self.refused = ""
        self.refused = reason

    def _process_event(self, event: Any) -> None:
        data = event.data if isinstance(getattr(event, "data", None), dict) else {}
        if event.event_name == "delete_event":
            self._discard()
            super()._process_event(event)
            return
        name, chunk, total, payload = data.get("name"), data.get("chunk"), data.get("total_chunks"), data.get("data")
        if not isinstance(name, str) or not 0 < len(name) <= 1000:
            self._drop("the upload arrived without a usable file name; try again")
            return
        base = _base(name)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (chunk, total)):
            self._drop(f"{base}: the upload arrived malformed (chunk numbers); try again")
            return
        assert isinstance(chunk, int) and isinstance(total, int)
        if not 1 <= total <= self.max_chunks():
            self._drop(f"{base}: over the {self.limit_bytes / 1e6:.0f} MB upload limit; run `lowprec analyze "
                       f"{base}` on your machine instead")
            return
        if not 1 <= chunk <= total or not isinstance(payload, (bytes, bytearray, memoryview)):
            self._drop(f"{base}: the upload arrived malformed (chunk {chunk} of {total}); try again")
            return
        if chunk == 1:
            self._discard()
            self._count += 1
            path = os.path.join(self.spool_folder(), f"upload-{self._count}")
            self._spool = (name, path, open(path, "wb"))
            self._received = 0
            self.refused = ""
            self._chunks = 0
        elif self._spool is None or self._spool[0] != name or self._chunks != chunk - 1:
            self._drop(f"{base}: the upload arrived out of order (chunk {chunk} of {total}); try again")
            return
        self._received += len(payload)
        if self._received > self.limit_bytes:
            self._drop(f"{base}: over the {self.limit_bytes / 1e6:.0f} MB upload limit; run `lowprec analyze "
                       f"{base}` on your machine instead")
            return
        assert self._spool is not None
        self._spool[2].write(payload)
        self._chunks = chunk
        if chunk < total:
            return
        _, path, fh = self._spool
        fh.close()
        self._spool = None
        self._received = 0
        self.refused = ""
        self.mime_type = {name: str(data.get("type", ""))}
        self.received = None
        self.received = (name, path)


#: one request of the lab: what to read (a sample, or the server's copy of an upload), the config,
#: the table to reuse (the same input: run_lab checks its recipes) and an upload's content still to
#: be written to its path (off the event loop)
LabRequest = tuple[Source, LabConfig, Any, "bytes | None"]


@config_widget(LabConfig)
class RecipeLab(RecordWidget):
    """Your own tensors (or a sample) through every recipe: table, histogram with grid, error map."""

    off_loop = True  # served: every run in a worker process, superseded by a newer request

    def _build(self) -> None:
        self.upload: LabInput | None = None  # inline (a notebook): the uploaded file's tensors
        self._upload_source: Source | None = None  # served: ("upload", name, the server's copy)
        self._view_source: Source | None = ("sample", self.config().sample)  # what the shown view was computed from
        self._folder: str | None = None  # served: the private folder of uploaded copies
        self._pending: tuple[Source, bytes | None] | None = None  # the next request's upload, if any
        self.view_data: LabView = run_lab(self._input(), self.config())  # the defaults must work
        self.sources = {"table": ColumnDataSource(colored(table_data(self.view_data.report)))}
        self.sources.update({k: ColumnDataSource(v) for k, v in self._detail_data(self.view_data).items()})
        limit = f"{UPLOAD_LIMIT_BYTES / 1e6:.0f} MB"
        self._limit_note = pn.pane.Markdown(
            f"**Upload a file of at most {limit}** ({', '.join(sorted(SUFFIXES))}; PyTorch files are read with "
            "`torch.load(weights_only=True)`, never unpickled), or pick a bundled sample below. Larger "
            "checkpoints: `lowprec analyze PATH` on your machine.", sizing_mode="stretch_width")
        # no accepted_filetypes: filepond would compare them with the browser's MIME type, which
        # Chromium leaves empty for these files; the server checks the name and the content
        self._dropper = LabDropper(max_file_size=limit.replace(" ", ""), multiple=False,
                                   sizing_mode="stretch_width", height=110, stylesheets=[DROPPER_CSS])
        self._dropper.param.watch(self._on_received, "received")
        self._dropper.param.watch(self._on_refused, "refused")
        self._use_sample = pn.widgets.Button(label="Use the sample instead", visible=False)
        self._use_sample.on_click(self._on_use_sample)
        self._tensor_select = pn.widgets.Select(label="tensor in detail", options=tensor_names(self.view_data),
                                                value=self.view_data.tensor, width=260)
        self._tensor_select.param.watch(self._on_tensor_select, "value")
        self._summary = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._detail_note = pn.pane.Markdown("", sizing_mode="stretch_width")
        hist, self._flush_box, self._clip_box = histogram_figure(self.sources)
        self._hist = pn.pane.Bokeh(hist, sizing_mode="stretch_width")
        self._map = pn.pane.Bokeh(error_map_figure(self.sources["map"]))
        self._table = pn.pane.Bokeh(results_table(self.sources["table"]), sizing_mode="stretch_width")
        self._scatter = pn.pane.Bokeh(error_bits_figure(self.sources["table"]), sizing_mode="stretch_width")
        # the audit of a pre-quantized tensor in detail (`simulations.lab.audit`)
        self.sources.update({f"audit_{k}": ColumnDataSource(v) for k, v in self._audit_data(self.view_data).items()})
        self._audit_note = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._audit_facts = pn.pane.Markdown("", sizing_mode="stretch_width")  # prose wraps at phone width
        self._audit_scales = pn.pane.Bokeh(scale_figure(self.sources["audit_scales"]), sizing_mode="stretch_width")
        self._audit_codes = pn.pane.Bokeh(code_figure(self.sources["audit_codes"]), sizing_mode="stretch_width")
        self._audit_affected = pn.pane.Bokeh(affected_table(self.sources["audit_affected"]),
                                             sizing_mode="stretch_width")
        # shown and hidden as containers: a Bokeh pane once hidden keeps its model's visible=False
        self._affected_box = pn.Column(self._audit_affected, sizing_mode="stretch_width")
        self._audit_box = pn.Column(self._audit_note, self._audit_facts, wrap_row(self._audit_scales, self._audit_codes),
                                    self._affected_box, sizing_mode="stretch_width")
        self._show()

    # ---- inputs --------------------------------------------------------------------------------
    def _input(self) -> LabInput:
        return self.upload if self.upload is not None else sample_input(self.config().sample)

    def _source(self) -> Source:
        return self._upload_source if self._upload_source is not None else ("sample", self.config().sample)

    def _on_received(self, event: param.parameterized.Event) -> None:
        if event.new:
            filename, path = event.new
            self.load_path(filename, path)

    def load_path(self, filename: str, path: str) -> bool:
        """Analyse an upload the dropper wrote to `path` (what a drop does; the file is moved into this
        widget's folder, never read into the server's memory when served); on failure say why and
        keep the last view."""
        try:
            size = os.path.getsize(path)
            if size > UPLOAD_LIMIT_BYTES:
                raise ValueError(f"{_base(filename)}: {size / 1e6:.1f} MB is over the {UPLOAD_LIMIT_BYTES / 1e6:.0f} MB "
                                 f"upload limit; run `lowprec analyze {_base(filename)}` on your machine instead")
            with open(path, "rb") as fh:
                head = fh.read(4096)
            _, suffix = upload_kind(filename, head)
        except (ValueError, TypeError, OSError) as exc:
            _remove(path)
            self._refuse(exc if not isinstance(exc, OSError) else ValueError(f"{_base(filename)}: {exc.strerror}"))
            return False
        if work.served_document() is None:  # a notebook: as load_file
            with open(path, "rb") as fh:
                data = fh.read()
            _remove(path)
            return self.load_file(filename, data)
        target = os.path.join(self._upload_folder(), f"upload-{self._generation + 1}{suffix}")
        os.replace(path, target)
        self._pending = (("upload", filename, target), None)
        return self.update()

    def _on_refused(self, event: param.parameterized.Event) -> None:
        if event.new:
            self._refuse(ValueError(event.new), stale=False)  # the view still shows the controls' input

    def load_file(self, filename: str, data: bytes) -> bool:
        """Analyse an uploaded file (what a drop does); on failure show why and keep the last view.
        Served: the file goes to a worker process and this returns True once it is on its way."""
        try:
            if isinstance(data, str):  # a text file arrives decoded
                data = data.encode("utf-8", "surrogateescape")
            if not isinstance(filename, str):
                raise TypeError(f"the file name must be text, got {type(filename).__name__}")
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"{_base(filename)}: the file's content must be bytes, got {type(data).__name__}")
            if len(data) > UPLOAD_LIMIT_BYTES:
                raise ValueError(f"{_base(filename)}: {len(data) / 1e6:.1f} MB is over the "
                                 f"{UPLOAD_LIMIT_BYTES / 1e6:.0f} MB upload limit; run `lowprec analyze "
                                 f"{_base(filename)}` on your machine instead")
            _, suffix = upload_kind(filename, bytes(memoryview(data)[:4096]))
            served = work.served_document() is not None
            if not served:
                inp = upload_input(filename, bytes(data))
        except (ValueError, TypeError) as exc:
            self._refuse(exc)
            return False
        if served:
            path = os.path.join(self._upload_folder(), f"upload-{self._generation + 1}{suffix}")
            self._pending = (("upload", filename, path), bytes(data))
            return self.update()
        previous, self.upload = self.upload, inp
        with param.parameterized.discard_events(self):
            self.tensor = ""
        if not self.update():
            self.upload = previous
            return False
        return True

    def _upload_folder(self) -> str:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix=UPLOAD_FOLDER_PREFIX)
            weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    def _forget_uploads(self, keep: str | None = None) -> None:
        """Remove the server's copies of uploads other than `keep` (a path)."""
        if self._folder is None:
            return
        for entry in os.scandir(self._folder):
            if entry.path != keep:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass

    def _on_use_sample(self, _: Any) -> None:
        self.upload = None
        self._upload_source = None
        self._forget_uploads()
        with param.parameterized.discard_events(self):
            self.tensor = ""
        self.update()

    def _on_tensor_select(self, event: param.parameterized.Event) -> None:
        if event.new and event.new != self.view_data.tensor:
            self.tensor = event.new

    def _before_update(self, names: set[str]) -> None:
        if "sample" in names and (self.upload is not None or self._upload_source is not None):
            self.upload = None  # picking a sample replaces the uploaded file
            self._upload_source = None
            self._forget_uploads()
            with param.parameterized.discard_events(self):
                self.tensor = ""

    # ---- the protocol's steps (app.widgets._base) ---------------------------------------------------
    def _request(self) -> LabRequest:
        """What to run: an upload handed over by `load_file`/`load_path`, else the current input."""
        pending, self._pending = self._pending, None
        config: LabConfig = self.config()
        source, data = pending if pending is not None else (self._source(), None)
        if source[0] == "upload" and source != self._upload_source:  # a new file: its first tensor in detail
            config = from_mapping(LabConfig, {**config.to_dict(), "tensor": ""})  # type: ignore[attr-defined]
        reuse = self.view_data.report if source == self._view_source else None  # run_lab checks its recipes
        return source, config, reuse, data

    def _work(self, request: LabRequest, generation: int | None) -> LabView:
        """Inline: `run_lab` here on the widget's input. Served (see the module docstring): an
        upload's content written to its path (source[2]), then the run in a worker process."""
        source, config, reuse, data = request
        if generation is None:
            return run_lab(self._input(), config)
        if data is not None:
            with open(source[2], "wb") as fh:
                fh.write(data)
        view: LabView = work.run_in_process("lowprec.app.lab_jobs:run", source, config, reuse,
                                            slot=self._slot, generation=generation)
        return view

    def _request_failed(self, request: LabRequest, error: BaseException) -> None:
        source = request[0]
        if source[0] == "upload" and source != self._upload_source:  # a new file that failed: its copy goes
            self._forget_uploads(keep=None if self._upload_source is None else self._upload_source[2])

    def _paint(self, request: LabRequest, view: LabView) -> None:
        source = request[0]
        if source[0] == "upload":
            if source != self._upload_source:  # a new file: its first tensor in detail
                with param.parameterized.discard_events(self):
                    self.tensor = ""
            self._upload_source = source
            self._forget_uploads(keep=source[2])
        self._view_source = None if self.upload is not None else source  # inline upload: never reused
        self.view_data = view
        self.sources["table"].data = colored(table_data(view.report))
        fit_text_columns(self._table.object, self.sources["table"].data)
        for k, v in self._detail_data(view).items():
            self.sources[k].data = v
        for k, v in self._audit_data(view).items():
            self.sources[f"audit_{k}"].data = v
        self._show()

    @staticmethod
    def _detail_data(view: LabView) -> dict[str, dict[str, list[Any]]]:
        if view.detail is None:
            return {"hist": {"left": [], "right": [], "input": [], "scaled": []}, "grid": {"x": []},
                    "map": {"x": [], "y": [], "rel_err": [], "log10": [], "color": []}}
        return detail_sources(view.detail)

    @staticmethod
    def _audit(view: LabView) -> Any:
        """The audit of the tensor in detail (None for a float tensor)."""
        return next((t.audit for t in view.report.tensors if t.name == view.tensor), None)

    def _audit_data(self, view: LabView) -> dict[str, dict[str, list[Any]]]:
        audit = self._audit(view)
        return empty_audit_sources() if audit is None else audit_sources(audit)

    def _show_audit(self) -> None:
        """The audit's part of the page: shown for a pre-quantized tensor in detail, hidden otherwise."""
        audit = self._audit(self.view_data)
        shown = audit is not None
        self._audit_box.visible = shown
        self._affected_box.visible = shown and bool(audit.affected)
        if audit is not None and audit.affected:
            self._audit_affected.object.height = table_height(len(audit.affected))
        if audit is None:
            self._audit_note.object = ""
            return
        worst = ""
        if audit.affected:
            a = audit.affected[0]
            worst = (f" The table lists the blocks a UE8M0 kernel, which keeps only each scale's exponent, would "
                     f"shrink most: block ({a['block'][0]}, {a['block'][1]}) by × {_number(a['factor'], '.4f')}.")
        self._audit_note.object = (  # the names are the user's (escaped); the rest is the lab's own text
            f"#### Audit of {as_text(audit.name)}, stored as {as_text(audit.layout)}\n\n"
            f"Read as {audit.producer}'s code dequantizes it; its codes and scales are those of "
            f"**{as_text(audit.recipe)}**.{worst} {audit.caveat}")
        facts = audit_facts(audit)
        self._audit_facts.object = "\n".join(f"- {as_text(w)}: **{as_text(v)}**"
                                              for w, v in zip(facts["what"], facts["value"]))

    def headline(self) -> str:
        """The sentence over the table: the recipes on the error/bits Pareto front over every tensor,
        most bits first, each with its pooled error and size (a plain "lowest error" always crowned a
        16-bit cast); the lab's ranking decides which are on it."""
        rows = [r for r in self.view_data.report.ranking
                if r["pareto"] and r["complete"] and usable_error(r["rms_rel_err"])]
        if not rows:
            return ("No recipe applies to every tensor with a usable error, so none is compared over the whole "
                    "input; the table has each tensor's numbers.")
        rows.sort(key=lambda r: -float(r["bits_per_element"]))
        best = "; ".join(f"**{as_text(r['recipe'])}** {_number(r['rms_rel_err'], '.2e')} at "
                         f"{_number(r['bits_per_element'], '.3g')} bits" for r in rows)
        return (f"Lowest error for its size, over every tensor (no other recipe has both fewer bits per element "
                f"and a smaller RMS relative error): {best}. Click a column header to sort the table.")

    def _show(self) -> None:
        view = self.view_data
        names = tensor_names(view)
        self._tensor_select.options = names
        if view.tensor in names:
            self._tensor_select.value = view.tensor
        self._use_sample.visible = self.upload is not None or self._upload_source is not None
        facts = describe(view)
        stored = (f" {facts['quantized']} of them stored pre-quantized (the column 'stored as'; the audit below the "
                  f"plots)." if facts.get("quantized") else "")
        parts = [f"**{as_text(facts['input'])}**: {facts['tensors']} tensor(s) × {facts['recipes']} recipe(s), "
                 f"{facts['skipped']} skipped.{stored}"]
        if view.report.skipped:
            parts.append("\n".join(f"- skipped {as_text(s.name or s.path)}: {as_text(s.reason.rstrip('.'))}."
                                   for s in view.report.skipped))
        if view.report.tensors:
            parts.append(self.headline())
        self._summary.object = "\n\n".join(parts)  # a blank line ends the list: no sentence runs into it
        self._show_audit()
        d = view.detail
        if d is None:
            self._detail_note.object = as_text(view.note)
            self._flush_box.right, self._clip_box.left = 0.0, 0.0
            self._flush_box.visible = self._clip_box.visible = False
            return
        assert view.detail_report is not None
        r = view.detail_report.results[0]
        st = view.detail_report.stats
        channels = ("" if st.channels is None else
                    f", {st.outlier_channels} outlier channel(s) of {st.channels} (RMS above 6 × the median)")
        stats_line = (f"Tensor **{as_text(view.tensor)}**: amax {_number(st.amax, '.4g')}, RMS {_number(st.rms, '.4g')}, "
                      f"excess kurtosis {_number(st.kurtosis, '.3g')}{channels}.\n\n")
        lo = d.bin_lo[0] if d.bin_lo else -1.0
        self._flush_box.right = d.flush_log2 if math.isfinite(d.flush_log2) else lo
        self._clip_box.left = d.clip_log2
        self._flush_box.visible = self._clip_box.visible = True
        set_error_map_range(self._map.object, self.sources["map"].data)
        self._detail_note.object = stats_line + (
            f"**{as_text(view.tensor)}** under **{as_text(d.recipe)}** ({as_text(d.element)} elements): RMS relative "
            f"error {_number(r.rms_rel_err, '.3e')}, SQNR {_number(r.sqnr_db, '.2f')} dB, "
            f"{_number((r.clipped_frac or 0) * 100, '.3f')}% clipped, "
            f"{_number((r.zero_frac or 0) * 100, '.3f')}% flushed to zero. In the histogram, magnitudes as the "
            f"cast sees them (|x| / decode scale) left of 2^{_number(d.flush_log2, '.2f')} become 0 (shaded "
            f"left), right of 2^{_number(d.clip_log2, '.2f')} saturate (shaded right); vertical lines are the "
            f"format's {'values' if d.grid_kind == 'values' else 'binades'}. The map shows the error of each "
            f"{d.tile[0]}×{d.tile[1]} tile.")

    def for_export(self) -> None:
        """An exported page (no server): the drop area is replaced by a sentence saying what needs the
        server, so the page shows no drop zone that does nothing."""
        self._dropper.visible = False
        self._limit_note.object = (
            "**Uploading a file needs the server**: run `lowprec serve` and open the RecipeLab page there "
            "(files up to 200 MB, pre-quantized checkpoints too: DeepSeek FP8, gpt-oss MXFP4, ModelOpt NVFP4, "
            "compressed-tensors FP8, with the audit of their scales), or `lowprec analyze PATH` for a checkpoint "
            "of any size. This page shows the bundled samples below.")

    def __panel__(self) -> pn.viewable.Viewable:
        # wrapping rows (not FlexBoxes, see theme.wrap_row): at phone width the controls and the
        # two plots wrap instead of pushing the page sideways
        controls = self.record_controls(["sample", "recipes", "recipe"], default_layout=pn.Row)  # rows in a page wrap (layout.ROW_WRAP_CSS)
        return pn.Column(
            "### Recipe lab", self._limit_note, self._dropper, self._alert, self._busy,
            pn.pane.Markdown(SAMPLES_DOC), wrap_row(controls, self._tensor_select, self._use_sample),
            self._summary, self._table, self._scatter, self._detail_note, wrap_row(self._hist, self._map),
            self._audit_box, sizing_mode="stretch_width")
