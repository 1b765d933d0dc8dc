"""The (convention × format) table (issue 27 item 6): every cell present, explicit "not provided",
and what is derived from it — the backends' supported formats, the tests' oracle dtypes, the bin
explorer's hand-over to a convention that does provide a format. The measured policies themselves
are checked against ml_dtypes/torch in test_formats_codec.py and test_codec_paths.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats.conventions import CONVENTION_ROWS, backend_dtypes, convention_row
from lowprec.formats.explain import explain_value, resolve_policy
from lowprec.gpu.backends import MlDtypesBackend, TorchBackend, TritonBackend


def test_every_cell_is_given_once() -> None:
    cells = [(r.convention, r.format) for r in CONVENTION_ROWS]
    assert len(cells) == len(set(cells)) == len(F.CONVENTIONS) * len(F.ALL_FORMATS)


@pytest.mark.parametrize("conv, name, providers", [
    ("torch", "E3M4", "ml_dtypes"), ("ocp", "E4M3IEEE", "ml_dtypes"), ("triton_nvidia", "E5M3FNU", "ml_dtypes"),
    ("ml_dtypes", "p3109_k8p3se", "p3109"), ("torch", "p3109_k8p1ue", "p3109"),
    ("p3109", "E4M3FN", "ml_dtypes, torch, triton_nvidia, ocp"), ("p3109", "INT8", "ml_dtypes, torch, triton_nvidia, ocp"),
])
def test_not_provided_is_refused_naming_the_providers(conv: str, name: str, providers: str) -> None:
    assert not convention_row(conv, name).provided
    with pytest.raises(ValueError, match=f"does not provide {name} .*conventions that do: {providers}$"):
        F.policy_for(conv, name)
    assert F.providers(name) == tuple(providers.split(", "))


def test_not_provided_cells_in_the_conventions_table() -> None:
    rows = {r["convention"]: r for r in F.conventions_table(("p3109_k8p3se",))}
    assert list(rows) == list(F.CONVENTIONS)
    assert [c for c, r in rows.items() if r["provided"]] == ["p3109"]
    assert rows["torch"]["policy"] is None and rows["torch"]["NaN"] == {"not_provided": "torch 2.13 has no P3109 types"}
    assert rows["p3109"]["+Inf"]["code"] == 0x7F and rows["p3109"]["overflow (2·max)"]["code"] == 0x7F


def test_backends_read_the_table() -> None:
    """gpu.backends' supported formats are the table's rows whose backend type casts; every other
    format is unsupported with the row's note as the reason."""
    ml = MlDtypesBackend()
    assert set(ml.supported) == {r.format for r in CONVENTION_ROWS
                                 if r.convention == "ml_dtypes" and r.provided and r.casts}
    assert {"E3M4", "E4M3IEEE", "E4M3B11FNUZ", "E5M3FNU"} <= set(ml.supported)
    assert not {"INT8", "INT4", "INT2", "UINT1", "FP32"} & set(ml.supported)
    assert "truncate" in ml.unsupported["INT2"] and "no P3109 types" in ml.unsupported["p3109_k8p3se"]
    assert set(TorchBackend().supported) == {"E4M3FN", "E5M2", "E8M0", "BF16", "FP16", "E4M3FNUZ", "E5M2FNUZ"}
    assert TritonBackend().supported == {"E4M3FN": ("float32", "bfloat16"), "E5M2": ("float32", "bfloat16")}
    # the dtype named by a row is the library's type of that layout (ml_dtypes' finfo agrees)
    for name, row in backend_dtypes("ml_dtypes").items():
        f = F.get_format(name)
        dt = getattr(np if hasattr(np, row.dtype) else ml_dtypes, row.dtype)
        assert float(ml_dtypes.finfo(dt).max) == f.max, name


def test_new_ml_dtypes_types_through_the_backend() -> None:
    ml = MlDtypesBackend()
    x = np.array([1.0, 3.3, 15.75, 300.0, -0.0, np.inf, np.nan], np.float32)
    for name in ("E3M4", "E4M3IEEE", "E4M3B11FNUZ"):
        codes, _ = ml.encode(x, name)
        assert np.array_equal(codes, F.encode(x, name, F.policy_for("ml_dtypes", name))), name


def test_explorer_hands_over_to_a_providing_convention() -> None:
    """ml_dtypes (the explorer's default) has no P3109 type: the view uses the p3109 convention's
    policy, under its name, and its note says so; policy_for itself refuses the pair."""
    pol = resolve_policy("p3109_k8p3se", "ml_dtypes")
    assert pol == F.policy_for("p3109", "p3109_k8p3se") and pol.name == "p3109"
    view = explain_value("60000", "p3109_k8p3se", "ml_dtypes", compare_format="E5M2")
    assert view.main.code == 0x7F and view.main.policy == pol  # overflow to +Inf (OvfInf)
    assert "ml_dtypes provides no p3109_k8p3se cast: the p3109 convention's policy is used" in view.note
    assert view.compare is not None and view.compare.policy.name == "ml_dtypes"
    assert "provides no" not in explain_value("1", "p3109_k8p3se", "p3109").note
    custom = resolve_policy("E3M4", "torch", overflow="saturate")
    assert custom.name == "ml_dtypes+custom" and custom.overflow is F.Overflow.SATURATE
