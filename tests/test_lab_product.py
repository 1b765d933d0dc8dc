"""The product y = x Wᵀ (`simulations.lab.product`):

- the exact path against float64 `x @ W.T` of the dequantized operands, each quantized here on the
  whole tensor by `quant.quantize` (the lab streams W by row chunks);
- the tensor-core path against `gemm.matmul` called here with the same element values and decode
  scales (Hopper FP8 wgmma, with and without promotion);
- activations per layer name or one for all, a K that does not match, the bundled sample, a
  pre-quantized weight "as stored", the ranking by product error, and the CLI.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lowprec import formats, strictjson
from lowprec.app.cli import main
from lowprec.simulations import gemm, quant
from lowprec.simulations.lab import product, readers, recipes, runner
from lowprec.simulations.lab.samples import activation_like
from lowprec.simulations.lab.writeback import quantize_arrays


def weight(shape: tuple[int, int], seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_t(5, size=shape) * 0.02
    w[:, 3] *= 16
    return w.astype(np.float32)


def one_ref(path: Path) -> readers.TensorRef:
    refs = readers.scan(str(path)).tensors
    assert len(refs) == 1
    return refs[0]


def dequantized(x: np.ndarray, recipe: str) -> np.ndarray:
    return x.astype(np.float64) if recipe == "none" else np.asarray(quant.quantize(x, recipe).restore(), np.float64)


def test_exact_path_is_float64_product_of_the_dequantized_operands(tmp_path: Path) -> None:
    w = weight((384, 256))
    np.save(tmp_path / "w.npy", w)
    x = activation_like(256, 20)
    np.save(tmp_path / "x.npy", x)
    wr = ("nvfp4", "fp8_128x128", "mxfp4", "e4m3_tensor")
    ar = ("none", "e4m3_row", "fp8_1x128", "nvfp4")
    cfg = product.ProductConfig(str(tmp_path / "x.npy"), ar)
    rep = product.product_task(one_ref(tmp_path / "w.npy"), recipes.parse_recipes(",".join(wr)), cfg,
                               chunk_elements=3 * 128 * 256)  # several row chunks
    y = x.astype(np.float64) @ w.astype(np.float64).T
    for wname in ("as stored",) + wr:
        w_hat = w.astype(np.float64) if wname == "as stored" else dequantized(w, wname)
        for aname in ar:
            d = dequantized(x, aname) @ w_hat.T - y
            p = rep.pair(wname, aname)
            assert p.skipped is None
            assert p.rel_err == pytest.approx(np.linalg.norm(d) / np.linalg.norm(y), rel=1e-9, abs=1e-15)
            assert p.max_abs_err == pytest.approx(float(np.abs(d).max()), rel=1e-9, abs=1e-15)
    assert rep.pair("as stored", "none").rel_err == 0.0
    assert rep.ranked_by == "none"
    order = sorted(wr, key=lambda n: rep.pair(n, "none").rel_err or 0.0)
    assert rep.ranking == order


def _a_operand(x: np.ndarray, recipe: str) -> tuple[np.ndarray, np.ndarray]:
    q = quant.quantize(x, recipe)
    return formats.decode(q.codes, q.recipe.fmt).astype(np.float64), np.asarray(q.scales, np.float64)


@pytest.mark.parametrize("wname,aname", [("fp8_128x128", "fp8_1x128"), ("e4m3_row", "e4m3_row"),
                                         ("mxfp8_e4m3", "fp8_1x128")])
def test_tensor_core_path_is_gemm_matmul(wname: str, aname: str, tmp_path: Path) -> None:
    w = weight((256, 256))
    np.save(tmp_path / "w.npy", w)
    x = activation_like(256, 16)
    cfg = product.ProductConfig(None, (aname,), mma="hopper", tokens=16, mma_rows=128)
    rep = product.product_task(one_ref(tmp_path / "w.npy"), recipes.parse_recipes(wname), cfg)
    p = rep.pair(wname, aname)
    rows = w[:128]
    av, sa = _a_operand(x, aname)
    qw = quant.quantize(w, wname)  # the whole weight; its first 128 rows are what the model multiplies
    bv = formats.decode(qw.codes[:128], qw.recipe.fmt).astype(np.float64).T
    sw = np.asarray(qw.scales, np.float64).astype(np.float32).astype(np.float64)
    ins = "wgmma.m64n256k32.f32.e4m3.e4m3"
    y = x.astype(np.float64) @ rows.astype(np.float64).T
    runs = {}
    if wname == "e4m3_row":  # per-channel weight scales, per-token activation scales: the epilogue
        sa32 = sa.astype(np.float32).astype(np.float64)
        for label, promote in (("promoted", 128), ("unpromoted", None)):
            runs[label] = gemm.matmul(av, bv, arch="hopper", instruction=ins, promote_every=promote, scale_a=sa32,
                                      scale_b=sw[:128], budget=None)
    elif wname == "fp8_128x128":  # DeepGEMM: 1×128 and 128×128 blocks applied at promotion
        runs["promoted"] = gemm.matmul(av, bv, arch="hopper", instruction=ins, promote_every=128, scale_a=sa,
                                       scale_b=sw[:1].T.repeat(128, axis=1), budget=None)
        assert p.mma["unpromoted"] == {"skipped": "block scales of 128 elements are applied at promotion, every 128 "
                                                  "of K"}
    else:  # MXFP8 weights (K blocks of 32) with 1×128 activations: both spread to blocks of 32
        sb = sw[:128].T  # (K / 32, N)
        runs["promoted"] = gemm.matmul(av, bv, arch="hopper", instruction=ins, promote_every=32,
                                       scale_a=np.repeat(sa, 4, axis=1), scale_b=sb, budget=None)
    for label, res in runs.items():
        d = res.d.astype(np.float64)
        got = p.mma[label]
        assert got["rel_err"] == pytest.approx(np.linalg.norm(d - y) / np.linalg.norm(y), rel=1e-12)
        assert got["core_rel_err"] == pytest.approx(np.linalg.norm(d - res.exact) / np.linalg.norm(res.exact),
                                                    rel=1e-12)
        assert got["instruction"] == ins
    if wname == "e4m3_row":  # promotion only helps (or keeps) the tensor core's own error
        assert p.mma["promoted"]["core_rel_err"] <= p.mma["unpromoted"]["core_rel_err"] * 1.0001


def test_pairs_the_tensor_core_cannot_run_say_why(tmp_path: Path) -> None:
    w = weight((128, 128))
    np.save(tmp_path / "w.npy", w)
    cfg = product.ProductConfig(None, ("nvfp4", "none"), mma="hopper", tokens=8, mma_rows=128)
    rep = product.product_task(one_ref(tmp_path / "w.npy"), recipes.parse_recipes("nvfp4,bf16"), cfg)
    assert "blocks of 16" in rep.pair("nvfp4", "nvfp4").mma["promoted"]["skipped"]
    assert "blocks of 16" in rep.pair("bf16", "nvfp4").mma["promoted"]["skipped"]
    assert rep.pair("bf16", "none").mma["promoted"]["skipped"].startswith("the activation is not BF16-exact")


def test_activations_by_layer_name_one_for_all_and_a_wrong_k(tmp_path: Path) -> None:
    w1, w2 = weight((128, 64)), weight((128, 96), seed=2)
    np.savez(tmp_path / "acts.npz", **{"a.proj": activation_like(64, 5), "b.proj.weight": activation_like(96, 7)})
    cfg = product.ProductConfig(str(tmp_path / "acts.npz"), ("none",))
    np.save(tmp_path / "w1.npy", w1)
    ref = readers.TensorRef(str(tmp_path / "w1.npy"), "a.proj.weight", "npy", (128, 64), "FP32",
                            one_ref(tmp_path / "w1.npy").offset)
    rep = product.product_task(ref, recipes.parse_recipes("e4m3_row"), cfg)
    assert rep.tokens == 5 and rep.activation.endswith("[a.proj]")
    np.save(tmp_path / "w2.npy", w2)
    ref2 = readers.TensorRef(str(tmp_path / "w2.npy"), "b.proj.weight", "npy", (128, 96), "FP32",
                             one_ref(tmp_path / "w2.npy").offset)
    assert product.product_task(ref2, recipes.parse_recipes("e4m3_row"), cfg).tokens == 7
    np.save(tmp_path / "one.npy", activation_like(64, 3))
    wrong = product.product_task(ref2, recipes.parse_recipes("e4m3_row"),
                                 product.ProductConfig(str(tmp_path / "one.npy"), ("none",)))
    assert wrong.skipped is not None and "96 input features" in wrong.skipped
    assert wrong.summary_lines() == [f"product: not measured ({wrong.skipped})"]


def test_quantized_weight_as_stored_through_the_tensor_core(tmp_path: Path) -> None:
    w = weight((256, 256))
    quantize_arrays({"m.weight": w}, "fp8_128x128@deepseek", "deepseek_fp8", str(tmp_path))
    ref = one_ref(tmp_path / "model.safetensors")
    cfg = product.ProductConfig(None, ("fp8_1x128",), mma="hopper", tokens=8, mma_rows=128)
    rep = product.product_task(ref, recipes.parse_recipes("fp8_128x128@deepseek"), cfg)
    stored, again = rep.pair("as stored", "fp8_1x128"), rep.pair("fp8_128x128@deepseek", "fp8_1x128")
    # re-quantizing DeepSeek's own values by DeepSeek's rule gives the same codes and scales back
    assert stored.rel_err == again.rel_err and stored.mma["promoted"]["rel_err"] == again.mma["promoted"]["rel_err"]


def test_rank_by_product_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = weight((128, 256))
    np.save(tmp_path / "w.npy", w)
    cfg = product.ProductConfig(None, ("e4m3_row",), tokens=8)
    rep = runner.analyze(str(tmp_path / "w.npy"), "nvfp4,mxfp4,e4m3_row,int4_g128", product=cfg, rank_by="product")
    t = rep.tensors[0]
    assert t.rank_by == "product" and t.ranking == t.product.ranking
    assert t.best == t.product.ranking[0]
    with pytest.raises(ValueError, match="needs the product"):
        runner.analyze(str(tmp_path / "w.npy"), "nvfp4", rank_by="product")
    out = tmp_path / "r.json"
    np.save(tmp_path / "x.npy", activation_like(256, 4))
    assert main(["analyze", str(tmp_path / "w.npy"), "--recipes", "fp8_128x128", "--activations",
                 str(tmp_path / "x.npy"), "--activation-recipes", "fp8_1x128", "--mma", "hopper", "--mma-rows", "128",
                 "--rank-by", "product", "--json", str(out), "--quiet"]) == 0
    data = strictjson.loads(out.read_text())
    prod = data["tensors"][0]["product"]
    assert prod["tokens"] == 4 and prod["mma"] == "hopper"
    assert {(p["weight"], p["activation"]) for p in prod["pairs"]} == {("as stored", "fp8_1x128"),
                                                                        ("fp8_128x128", "fp8_1x128")}
    assert main(["analyze", str(tmp_path / "w.npy"), "--product", "--activation-recipes", "bogus", "--quiet"]) == 2
    assert "unknown recipe 'bogus'" in capsys.readouterr().err
