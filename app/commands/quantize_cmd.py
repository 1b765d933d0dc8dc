"""`lowprec quantize PATH… --recipe NAME --layout LAYOUT -o OUT [--exclude GLOB]… [--json OUT]`:
a float checkpoint quantized by a lowprec recipe and written in a producer's layout
(`simulations.lab.writeback`): OUT is a directory that receives `model.safetensors` and the config
entry of the layout (`config.json`'s `quantization_config`; ModelOpt's `hf_quant_config.json` too),
which `lowprec analyze` and the layout's own loaders read back.

PATH is what `lowprec analyze` reads (files, globs, directories, a shard index). Every float tensor
with two or more axes that the layout and the recipe take is quantized; the others are kept as they
are and named in the config's list of unquantized modules (`--exclude` keeps more: shell patterns
on the tensor names). `--layouts` lists the layouts with the recipes each stores. A recipe the layout
cannot store, an output folder that is not empty (without --force), or an input the readers refuse
is one line (exit status 2) before anything is written. `--json` writes what was written (strict
JSON: `{"out_dir", "layout", "recipe", "quantized": [{"name", "shape"}], "kept": [{"name", "dtype",
"reason"}], "left_out", "files"}`).
"""

from __future__ import annotations

import argparse
from typing import Any

from lowprec import strictjson
from lowprec.simulations.lab import layouts as lab_layouts
from lowprec.simulations.lab import recipes as lab_recipes
from lowprec.simulations.lab.writeback import CHUNK_ELEMENTS, quantize_checkpoint

from .analyze_cmd import _check_output


def register(sub: Any) -> None:
    p = sub.add_parser("quantize")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files, globs, directories or a *.index.json of float tensors")
    p.add_argument("--recipe", metavar="NAME", help="the lowprec recipe (NAME or NAME@CONVENTION; `lowprec analyze "
                                                    "--list-recipes`)")
    p.add_argument("--layout", metavar="LAYOUT", help=f"the layout to write: {', '.join(lab_layouts.LAYOUTS)}")
    p.add_argument("-o", "--out", metavar="OUT", help="the output directory (model.safetensors and the config files)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="keep tensors whose name matches this shell pattern as they are (repeatable)")
    p.add_argument("--force", action="store_true", help="write into a directory that is not empty")
    p.add_argument("--chunk-elements", type=int, default=CHUNK_ELEMENTS, metavar="N",
                   help="elements per row chunk (memory stays near one chunk)")
    p.add_argument("--json", metavar="OUT", help='write what was written as strict JSON to OUT ("-": stdout)')
    p.add_argument("--layouts", action="store_true", help="list the layouts and the recipes each stores, and exit")
    p.add_argument("--quiet", action="store_true", help="no summary")
    p.set_defaults(func=run)


def layout_lines() -> list[str]:
    lines = []
    for lay in lab_layouts.LAYOUTS.values():
        ok = [name for name in lab_recipes.RECIPES if lay.accepts(name) is None]
        lines.append(f"{lay.name:<23} {lay.producer}: {lay.description}")
        lines.append(f"{'':<23} recipes: {', '.join(ok)} (any convention)")
        lines.append(f"{'':<23} dequantized as {lay.dequantization}")
    return lines


def run(args: argparse.Namespace) -> int:
    if args.layouts:
        print("\n".join(layout_lines()))
        return 0
    missing = [opt for opt, v in (("PATH", args.paths), ("--recipe", args.recipe), ("--layout", args.layout),
                                   ("-o", args.out)) if not v]
    if missing:
        raise ValueError(f"give {', '.join(missing)} (lowprec quantize PATH --recipe NAME --layout LAYOUT -o OUT; "
                         f"--layouts lists the layouts)")
    if args.chunk_elements < 1:
        raise ValueError(f"--chunk-elements must be ≥ 1, got {args.chunk_elements}")
    recipe = lab_recipes.get_recipe(args.recipe)
    layout = lab_layouts.get_layout(args.layout)
    why = layout.accepts(recipe)
    if why is not None:
        raise ValueError(why)
    _check_output("--json", args.json)
    report = quantize_checkpoint(args.paths, recipe, layout, args.out, exclude=args.exclude,
                                 chunk_elements=args.chunk_elements, force=args.force)
    if args.json:
        strictjson.write(report.to_dict(), args.json, indent=None)
    if not args.quiet and args.json != strictjson.STDOUT:
        print("\n".join(report.summary_lines()))
    return 0
