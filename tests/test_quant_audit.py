"""Issue 28's acceptance, the parts no other test pins (an audit of main after items 1–3):

- the old entry points are thin aliases: `simulations.mx`, `.nvfp4`, `.block_conventions` *are* the
  quant wing's modules (no second copy of a rule), and `block_formats`' records are views of the
  recipe registry;
- the lab, the block widget's simulation, the CLI and the lessons read the one registry
  (`simulations.quant.RECIPES`): the same record objects, every name listed by `lowprec analyze
  --list-recipes`, every lesson directive's recipe a registry recipe;
- the transposed view the block widget shows for FP8 1×128 tiles is `quant.transpose_requantization`'s
  measure, and power-of-two scales make its second rounding exact where the value stays normal
  while FP32 scales do not.
The other acceptance items have their own tests (see tests/MUTANTS.md's h-formats block)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import numpy as np
import pytest

from lowprec.simulations import quant

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("old, new", [("mx", "mx"), ("nvfp4", "nvfp4"), ("block_conventions", "conventions")])
def test_old_modules_are_the_quant_modules(old: str, new: str) -> None:
    a = importlib.import_module(f"lowprec.simulations.{old}")
    b = importlib.import_module(f"lowprec.simulations.quant.{new}")
    assert a is b


def test_block_formats_are_views_of_the_registry() -> None:
    from lowprec.simulations.blocks.records import BLOCK_FORMATS

    for name, bf in BLOCK_FORMATS.items():
        r = quant.RECIPES[name.lower()]
        assert bf.element.name == r.element and r.scheme.name in ("MX", "NVFP4"), name


def test_one_registry_for_lab_widget_and_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from lowprec.app.cli import main
    from lowprec.simulations.blocks import BLOCK_RECIPES
    from lowprec.simulations.lab import recipes as lab_recipes

    assert lab_recipes.RECIPES is quant.RECIPES
    for key, rec in BLOCK_RECIPES.items():
        assert quant.RECIPES[key.lower()] is rec, key
    assert main(["analyze", "--list-recipes"]) == 0
    listed = capsys.readouterr().out
    for name in quant.RECIPES:
        assert re.search(rf"(^|\s){re.escape(name)}(\s|$)", listed, re.M), name


def test_lesson_directives_name_registry_recipes() -> None:
    found = 0
    for path in sorted((ROOT / "content" / "lessons").glob("*.md")):
        for m in re.finditer(r"^::: widget (BlockFormats|RecipeLab) .*?recipe=(\S+)", path.read_text("utf-8"), re.M):
            assert m.group(2).lower() in quant.RECIPES, (path.name, m.group(2))
            found += 1
    assert found >= 3


@pytest.mark.parametrize("name", ["FP8_1X128_POW2", "FP8_1X128"])
def test_block_widget_transposed_view_of_fp8_tiles(name: str) -> None:
    """The block simulation's transposed view runs FP8 1×128 tiles (Transformer Engine's
    convention); its errors are the quant wing's transpose measure of the same tensor, and the pow2
    recipe's second rounding changes no value that stays normal where FP32 scales change most."""
    from lowprec.simulations.blocks import simulate_blocks

    res = simulate_blocks(recipe=name, convention="transformer_engine", transposed_view=True, rows=256,
                          cols=256, hadamard=False)
    assert res.selected is not None and res.selected.transposed is not None
    t = res.selected.transposed
    ref = quant.transpose_requantization(np.asarray(res.x_in, np.float32), f"{name.lower()}@transformer_engine")
    assert (t.rows, t.columns_from_source, t.columns_requantized, t.codes_differ) == (
        ref.rows_error, ref.columns_from_source, ref.columns_requantized, ref.codes_differ)
    assert ref.exact_where_normal is (name == "FP8_1X128_POW2")
