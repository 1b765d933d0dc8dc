"""Peak memory of the largest request each budget allows (issue 16): the estimate against the run.

Every simulation's config record estimates its cost (`cost()`: peak extra memory and wall time)
before it runs, and each face refuses a request over its budget (`config.CLI_BUDGET`, lifted by
`--force`; `config.APP_BUDGET`, a served page's update). This benchmark checks that the estimates
hold where it matters, at the edge of each budget: for every simulation and every integer knob with
an upper bound, it finds (by bisection, the other knobs at their defaults) the largest value the
budget allows, and one joint request (each knob in turn pushed as far as the budget still allows);
of those requests it runs the one with the largest memory estimate, as its own
process (`python -m lowprec.simulations.NAME --quiet`, started through a small launcher so that
`os.wait4`'s ru_maxrss is the child's alone), and records the peak RSS above the same command's
RSS at the defaults, with the wall time. The page's requests are run the same way (a widget runs the
same simulation call). Figures: estimate and measured MiB and seconds per (budget, simulation), and
whether each measured peak stays within its budget.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any

from lowprec.benchmarks.analyze import _run_once  # the launcher that measures a child's own peak RSS
from lowprec.config import APP_BUDGET, CLI_BUDGET, Budget, fields_of

#: the simulations with a `lowprec simulate` command (module names under lowprec.simulations)
SIMULATIONS = ("spike", "grouping", "blocks", "attention", "recompute")

@dataclass(frozen=True)
class _Face:
    """What this benchmark needs of a simulation: its config record and its `python -m` module."""

    config: type
    module: str


def simulation(name: str) -> _Face:
    """The simulation `name`'s record and module (recompute has its own command line)."""
    if name == "recompute":
        from lowprec.simulations.recompute.config import RecomputeConfig

        return _Face(RecomputeConfig, "lowprec.simulations.recompute")
    sim = importlib.import_module(f"lowprec.simulations.{name}").SIMULATION
    return _Face(sim.config, sim.module)


def _allowed(config: Any, budget: Budget) -> bool:
    return bool(budget.allows(config.cost()))


def largest_request(config: Any, name: str, upper: int, budget: Budget) -> Any | None:
    """The config with knob `name` at the largest value in [its value, upper] that is valid and
    within `budget` (bisection: the estimate grows with every size knob); None if even the
    current value is over."""
    def at(v: int) -> Any | None:
        try:
            c = config.replace(**{name: v})
        except (ValueError, TypeError):
            return None
        return c if _allowed(c, budget) else None

    lo = int(getattr(config, name))
    if at(lo) is None:
        return None
    hi = int(upper)
    if at(hi) is not None:
        return at(hi)
    while hi - lo > 1:  # at(lo) allowed, at(hi) not
        mid = (lo + hi) // 2
        if at(mid) is not None:
            lo = mid
        else:
            hi = mid
    return at(lo)


def candidates(sim: Any, budget: Budget) -> list[tuple[str, Any]]:
    """(knob names, largest allowed config) for each bounded integer knob of `sim`'s record alone,
    and one joint request: each knob in turn pushed as far as the budget still allows."""
    default = sim.config()
    sizes = {k.name: int(k.bounds[1]) for k in fields_of(sim.config)
             if k.type is int and k.bounds is not None and k.bounds[1] is not None and k.name != "seed"}
    out = []
    for name, upper in sizes.items():
        c = largest_request(default, name, upper, budget)
        if c is not None and getattr(c, name) != getattr(default, name):
            out.append((name, c))
    joint = default
    for name, upper in sizes.items():
        joint = largest_request(joint, name, upper, budget) or joint
    pushed = [name for name in sizes if getattr(joint, name) != getattr(default, name)]
    if len(pushed) > 1:
        out.append(("+".join(pushed), joint))
    return out


def _argv(sim: Any, config: Any) -> list[str]:
    argv = [sys.executable, "-m", sim.module, "--quiet", "--force"]
    default = sim.config()
    for k in fields_of(sim.config):
        value = getattr(config, k.name)
        if value != getattr(default, k.name):
            argv += [k.option, str(value)]
    return argv


def run(quick: bool = False, budgets: tuple[str, ...] = ("page", "cli"),
        simulations: tuple[str, ...] = SIMULATIONS) -> dict[str, Any]:
    """Figures per (budget, simulation): the knob pushed to the budget's edge, its estimate and the
    measured peak RSS above the defaults' run, and wall times. `quick`: the page budget only."""
    chosen = {"page": APP_BUDGET, "cli": CLI_BUDGET}
    names = ("page",) if quick else budgets
    figures: dict[str, Any] = {"load_average_start": round(os.getloadavg()[0], 2), "cases": []}
    for sim_name in simulations:
        sim = simulation(sim_name)
        base_s, base_mib = _run_once(_argv(sim, sim.config()))
        for budget_name in names:
            budget = chosen[budget_name]
            options = candidates(sim, budget)
            if not options:
                continue
            knob, config = max(options, key=lambda o: (o[1].cost().bytes, o[1].cost().seconds))
            cost = config.cost()
            seconds, mib = _run_once(_argv(sim, config))
            extra = max(0.0, mib - base_mib)
            figures["cases"].append({
                "budget": budget_name, "simulation": sim_name, "knob": knob, "value": "+".join(str(getattr(config, k)) for k in knob.split("+")),
                "estimate_mib": round(cost.bytes / 2**20, 1), "estimate_s": round(cost.seconds, 2),
                "measured_extra_mib": round(extra, 1), "measured_peak_mib": round(mib, 1),
                "defaults_peak_mib": round(base_mib, 1), "wall_s": round(seconds, 2),
                "defaults_wall_s": round(base_s, 2),
                "budget_mib": round(budget.bytes / 2**20), "budget_s": budget.seconds,
                "within_memory_budget": "yes" if extra * 2**20 <= budget.bytes else "NO",
            })
    figures["load_average_end"] = round(os.getloadavg()[0], 2)
    return figures


def main(argv: list[str] | None = None) -> int:

    from lowprec import strictjson

    from lowprec.commandline import ArgumentParser  # the one bad-option report

    p = ArgumentParser(prog="python -m lowprec.benchmarks.budgets", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the page budget only")
    p.add_argument("--budget", action="append", choices=("page", "cli"), help="budgets to measure (default: both)")
    p.add_argument("--sim", action="append", choices=SIMULATIONS, help="simulations (default: all)")
    p.add_argument("--json", metavar="OUT", help="write the figures as strict JSON")
    args = p.parse_args(argv)
    figures = run(args.quick, tuple(args.budget or ("page", "cli")), tuple(args.sim or SIMULATIONS))
    for c in figures["cases"]:
        print(f"{c['budget']:4} {c['simulation']:9} --{c['knob']} {c['value']}: estimate {c['estimate_mib']} MiB "
              f"{c['estimate_s']} s; measured +{c['measured_extra_mib']} MiB (peak {c['measured_peak_mib']}), "
              f"{c['wall_s']} s wall; within budget: {c['within_memory_budget']}", flush=True)
    if args.json:
        strictjson.write(figures, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
