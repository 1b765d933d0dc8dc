"""`lowprec simulate grouping`: the grouping studies of `simulations.studies.grouping`, registered from its entry in the registry of
simulations (`app.sim_faces.FACES["grouping"]`: the simulation, its `--html` page and caption). The
options are the simulation's config record's, the same as `python -m lowprec.simulations.grouping`."""

from __future__ import annotations

from typing import Any

from lowprec.app.sim_faces import FACES

from .sim_common import register_faces


def write_html(result: Any, path: str) -> None:
    """`--html`: the run's figures, parameters and caption as one offline page."""
    FACES["grouping"].write_html(result, path)


def register(sims: Any) -> None:
    register_faces(sims, FACES["grouping"])
