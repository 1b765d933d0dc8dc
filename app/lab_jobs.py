"""The RecipeLab's runs as a served page hands them to a worker process (`app.work.run_in_process`):
light to import (the recipe lab and numpy, no Panel), and given only what crosses a process
boundary cheaply — the input's description (a bundled sample's name, or an uploaded file's name
and where the server saved it), the config record and the last table when it can be reused.

`run(source, config, report, progress=...)` reads the input there (an upload within the page's
limits, `workbench.upload_input`) and returns the `LabView` (`workbench.run_lab`); `progress` stops
the run at the next tensor once a newer request of the same widget exists (`work.Superseded`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from lowprec.simulations.lab.runner import LabReport
from lowprec.simulations.lab.workbench import LabConfig, LabInput, LabView, run_lab, sample_input, upload_input

__all__ = ["Source", "lab_input", "run"]

#: ("sample", NAME) or ("upload", FILE NAME AS UPLOADED, PATH OF THE SERVER'S COPY)
Source = tuple[str, ...]


def lab_input(source: Source) -> LabInput:
    """The tensors `source` names (ValueError for a file the lab cannot read, naming it)."""
    if source[0] == "sample":
        return sample_input(source[1])
    if source[0] == "upload":
        _, filename, path = source
        return upload_input(filename, Path(path).read_bytes())
    raise ValueError(f"unknown lab input {source[0]!r}")


def run(source: Source, config: LabConfig, report: LabReport | None = None, *,
        progress: Callable[[int, int], None] | None = None) -> LabView:
    """The view of `source` under `config` (see the module docstring)."""
    if progress is not None:
        progress(0, 1)
    return run_lab(lab_input(source), config, progress, report)
