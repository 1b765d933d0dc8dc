"""`lowprec analyze PATH… [--recipes NAME,…] [--json OUT] [--csv OUT] [--html OUT] [--workers N]
[--scheduler ADDRESS]`: the user's own tensors through every recipe (`simulations.lab`).

PATH is a `.npy`, `.npz`, `.safetensors` or PyTorch (`.pt`, `.pth`, `.bin`, `.ckpt`) file, a glob, a
directory, or a sharded checkpoint's `*.index.json`. Each float tensor (BF16, FP16, FP32, FP64) is
measured under each recipe; the others are listed as skipped with the reason. A file that cannot be
read is one line naming it (exit status 2), before any work starts — a file found in a directory or
by a glob that cannot be read is listed as skipped instead and the others are analysed. Files are
read within the limits of `simulations.lab.limits` (entries, nesting, header and archive sizes;
regular files only). `--json` writes strict JSON (`lowprec.strictjson`: `{"files", "recipes",
"tensors": [{"name", "file", "shape", "dtype", "stats", "results": [{"recipe", "rms_rel_err",
"sqnr_db", "max_abs_err", "clipped_frac", "zero_frac", "bits_per_element"}], "ranking", "pareto",
"best", "flags": [{"code", "message"}]}], "skipped", "ranking": [{…, "rank", "tensors", "complete",
"pareto", "note"}], "best", "notes"}`), `--csv` one row per tensor × recipe, `--html` a standalone
page (`app.plots.lab_report`: the files, the ranking with the reason for each place, each tensor's
statistics and flags, every result, the skipped list, what each column means, and two figures with
legends; it reads at phone width). Every output path is
checked before the work (`simulations.framework.io.check_output_path`). Tensors run in this process
(`--workers 1`), in a local process pool (`--workers N`, capped at the CPUs this process may use,
with a note saying so), or on a Dask cluster (`--scheduler ADDRESS`, the `lowprec[cluster]` extra;
the address is checked first; the workers must see the files at the same paths); the report is the
same. A progress bar over tensors shows on a terminal after a second (not with --quiet).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lowprec import strictjson
from lowprec.simulations.framework.io import check_output_path, write_text
from lowprec.simulations.lab import layouts as lab_layouts
from lowprec.simulations.lab import product as lab_product
from lowprec.simulations.lab import recipes as lab_recipes
from lowprec.simulations.lab.runner import (
    CHUNK_ELEMENTS,
    RANK_BY,
    LabReport,
    analyze,
    available_cpus,
    check_scheduler_address,
    open_executor,
    worker_count,
)

from .progress import ProgressBar


def register(sub: Any) -> None:
    p = sub.add_parser("analyze")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files, globs, directories or a *.index.json of tensors to analyse")
    p.add_argument("--recipes", metavar="NAME,…", default=lab_recipes.DEFAULT,
                   help="comma-separated recipes (NAME or NAME@CONVENTION), 'default' "
                        f"({', '.join(lab_recipes.DEFAULT_RECIPES)}) or 'all'; --list-recipes lists them")
    p.add_argument("--list-recipes", action="store_true", help="list every recipe and exit")
    p.add_argument("--json", metavar="OUT", help='write the report as strict JSON to OUT ("-": stdout)')
    p.add_argument("--csv", metavar="OUT", help='write one row per tensor × recipe as CSV to OUT ("-": stdout)')
    p.add_argument("--html", metavar="OUT", help="write a standalone HTML page (table and plots; opens offline)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes to analyse tensors in (1: this process; at most one per CPU)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a Dask distributed scheduler (tcp://host:port) to run on instead (lowprec[cluster])")
    p.add_argument("--chunk-elements", type=int, default=CHUNK_ELEMENTS, metavar="N",
                   help="elements per row chunk (memory stays near one chunk's working set)")
    p.add_argument("--layout", metavar="LAYOUT", choices=list(lab_layouts.LAYOUTS),
                   help="read FP8/FP4 tensors as this pre-quantized layout (else the checkpoint's config.json / "
                        f"hf_quant_config.json, else their names): {', '.join(lab_layouts.LAYOUTS)}")
    p.add_argument("--no-audit", action="store_true", help="do not audit pre-quantized tensors' scales and codes")
    p.add_argument("--product", action="store_true",
                   help="measure y = x Wᵀ of every 2-D weight with the bundled activation sample")
    p.add_argument("--activations", metavar="FILE",
                   help="measure y = x Wᵀ with these activations: a .npy for every layer, or a .npz/.safetensors "
                        "of arrays named after the layers")
    p.add_argument("--activation-recipes", metavar="NAME,…", default=",".join(lab_product.DEFAULT_ACTIVATION_RECIPES),
                   help="the activation recipes of the product ('none' = x itself)")
    p.add_argument("--mma", metavar="ARCH", choices=list(lab_product.MMA_ARCHS),
                   help="also run the product through a tensor-core model (with and without FP32 promotion)")
    p.add_argument("--mma-rows", type=int, default=256, metavar="N",
                   help="output channels of each weight run through the tensor-core model")
    p.add_argument("--tokens", type=int, default=32, metavar="N", help="tokens of the bundled activation sample")
    p.add_argument("--rank-by", choices=list(RANK_BY), default="tensor",
                   help="rank each weight's recipes by the tensor's error or by the product's")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=run)


def _check_output(option: str, path: str | None) -> None:
    """Refuse, before a long run rather than after it, an output path that cannot be written: a
    missing folder (named so), then whatever `check_output_path` refuses (a directory, a folder or
    file that is not writable, `/proc/…`)."""
    if path and path != strictjson.STDOUT:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ValueError(f"{option} {path}: the folder {folder} does not exist")
    check_output_path(path, option)


def check_regular_input(path: str) -> None:
    """Refuse an activations file the readers cannot read, before any work (one line naming it)."""
    from lowprec.simulations.lab.readers import scan

    inv = scan(path)
    if not inv.tensors:
        raise ValueError(f"--activations {path}: holds no float array")


def recipe_lines() -> list[str]:
    lines = []
    for name, r in lab_recipes.RECIPES.items():
        mark = " (default)" if name in lab_recipes.DEFAULT_RECIPES else ""
        lines.append(f"{name:<17} {r.description}{mark}")
    lines.append("NAME@CONVENTION runs a recipe under another of its conventions (ocp, torchao, transformer_engine, "
                 "deepseek, microxcaling; a cast: torch or ml_dtypes); plain NAME under its own")
    return lines


def run(args: argparse.Namespace) -> int:
    if args.list_recipes:
        print("\n".join(recipe_lines()))
        return 0
    if not args.paths:
        raise ValueError("give at least one PATH (a file, glob, directory or *.index.json), or --list-recipes")
    if args.chunk_elements < 1:
        raise ValueError(f"--chunk-elements must be ≥ 1, got {args.chunk_elements}")
    recipes = lab_recipes.parse_recipes(args.recipes)
    stdout_taken = args.json == strictjson.STDOUT or args.csv == strictjson.STDOUT
    if args.json == strictjson.STDOUT and args.csv == strictjson.STDOUT:
        raise ValueError("--json and --csv cannot both write to stdout")
    for option in ("json", "csv", "html"):
        _check_output(f"--{option}", getattr(args, option))
    workers = worker_count(args.workers)
    if args.scheduler:
        check_scheduler_address(args.scheduler)
    elif workers < args.workers and not args.quiet:
        print(f"lowprec analyze: --workers {args.workers} is capped at {workers}, the CPUs this process may use "
              f"({available_cpus()})", file=sys.stderr)
    product = None
    if args.product or args.activations or args.mma or args.rank_by == "product":
        acts = tuple(t.strip() for t in args.activation_recipes.split(",") if t.strip())
        product = lab_product.ProductConfig(args.activations, acts, args.mma, args.tokens, args.mma_rows)
        if args.activations:
            check_regular_input(args.activations)
    bar = ProgressBar("analyze", quiet=args.quiet)
    try:
        with open_executor(workers, args.scheduler) as executor:
            report = analyze(args.paths, recipes, executor=executor, progress=bar,
                             chunk_elements=args.chunk_elements, layout=args.layout, audit=not args.no_audit,
                             product=product, rank_by=args.rank_by)
    finally:
        bar.close()
    write_outputs(report, args)
    if not args.quiet and not stdout_taken:
        print("\n".join(report.summary_lines()))
    return 0


def write_outputs(report: LabReport, args: argparse.Namespace) -> None:
    if args.json:
        strictjson.write(report.to_dict(), args.json, indent=None)
    if args.csv:
        write_text(report.to_csv(), args.csv)
    if args.html:
        from lowprec.app.plots.lab_report import report_html

        write_text(report_html(report), args.html)
