"""The faces of the block conventions: the Conventions widget's block-format section (every cell and
column drawn from `simulations.block_conventions`), the BlockFormats widget's `convention` control
and `lowprec simulate blocks --convention`."""

from __future__ import annotations

import numpy as np
import pytest

from lowprec import strictjson
from lowprec.simulations import block_conventions as BC
from lowprec.simulations.blocks.comparison import block_conventions_table
from lowprec.simulations.examples_blocks import worked_block_comparison


def test_conventions_widget_block_section_draws_the_simulation() -> None:
    from lowprec.app.widgets import Conventions

    w = Conventions()
    probes = block_conventions_table()
    table = w.block_sources["probes"].data
    assert table["probe"] == [p.name for p in probes]
    assert set(table) == {"probe", "input", "ocp", "torchao", "transformer_engine"}
    row = table["probe"].index("NVFP4 small block scale")
    small = probes[row].comparison
    for name in BC.BLOCK_CONVENTIONS:  # each cell starts with that convention's computed scale code
        assert table[name][row].startswith(f"0x{small.outcome(name).scale_code:02X} = ")
    assert table["torchao"][row].startswith("0x08 = 0.015625, ts 1 ") and table["ocp"][row].startswith("0x05 = 0.009766")
    worked = worked_block_comparison()
    cols = w.block_sources["worked"].data
    np.testing.assert_array_equal(cols["input"], worked.input)
    for o in worked.outcomes:
        np.testing.assert_array_equal(cols[f"{o.convention}_decoded"], o.decoded)
        np.testing.assert_array_equal(cols[f"{o.convention}_error"], o.decoded - worked.input)
        assert cols[f"{o.convention}_code"] == [f"0x{int(c):X}" for c in o.codes]
    assert cols["transformer_engine_code"][0] == "0x7"  # the lesson's exercise: saturated, decodes to 0
    # the format control does not touch the block section
    w.format = "E5M2"
    assert w.block_sources["probes"].data["probe"] == [p.name for p in probes]


def test_block_formats_widget_takes_the_convention() -> None:
    from lowprec.app.widgets import BlockFormats

    w = BlockFormats(convention="transformer_engine")  # floor is not TE's: its own rceil is used
    assert w.error == "" and getattr(w, "scale_rule") == "rceil"
    assert w.result.selected.quantized.convention == "transformer_engine"
    assert "Block arithmetic: **transformer_engine**" in w.summary
    v = BlockFormats()
    v.param.update(convention="torchao")
    assert v.error == "" and getattr(v, "scale_rule") == "floor"  # torchao has floor: kept
    assert v.result.selected.quantized.convention == "torchao"
    v.param.update(convention="transformer_engine")
    assert v.error == "" and getattr(v, "scale_rule") == "rceil"
    v.param.update(recipe="MXFP4")  # TE has no MXFP4: the message, and the last view stays
    assert v.error.startswith("Invalid input: recipe: the transformer_engine convention has no MX blocks of E2M1")
    assert v.result.selected.block_format.name == "MXFP8_E4M3"
    with pytest.raises(ValueError, match=r"^scale_rule: the transformer_engine convention has no scale rule 'floor'"):
        BlockFormats(convention="transformer_engine", scale_rule="floor")


def test_simulate_blocks_cli_convention(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    from lowprec.app.cli import main

    out = tmp_path / "b.json"
    assert main(["simulate", "blocks", "--convention", "torchao", "--recipe", "NVFP4", "--rows", "16",
                 "--cols", "64", "--json", str(out), "--quiet"]) == 0
    d = strictjson.loads(out.read_text())
    assert d["config"]["convention"] == "torchao"
    assert [e["scheme"] for e in d["entries"]][-1] == "NVFP4 1x16"  # torchao has no 16×16 tiles
    code = main(["simulate", "blocks", "--convention", "transformer_engine", "--rows", "16", "--cols", "64",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code != 0 and "--scale-rule: the transformer_engine convention has no scale rule 'floor'; it has rceil" in err
