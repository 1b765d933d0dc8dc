"""The compiled kernels' disk cache is keyed on every file a kernel takes globals from
(`formats._kernels.KERNEL_SOURCES_FINGERPRINT`), not only on the file that defines it: numba alone
would load a kernel compiled against another version of `policy.py`'s enums (a silent wrong answer
seen after a merge: P3109 rounding `down` gave +Inf)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

K = pytest.importorskip("lowprec.formats._kernels")
caching = pytest.importorskip("numba.core.caching")

ROOT = Path(K.__file__).parent.parent


def _impl() -> type:
    return getattr(caching, "CacheImpl", None) or caching._CacheImpl


def test_lowprec_locators_come_first_and_only_for_lowprec_files() -> None:
    classes = _impl()._locator_classes
    assert [getattr(c, "_lowprec", False) for c in classes[:3]] == [True, True, True]
    assert not any(getattr(c, "_lowprec", False) for c in classes[3:])

    def f(x: int) -> int:
        return x

    assert all(c.from_function(f, caching.__file__) is None for c in classes[:3])  # numba's own file


def test_a_kernels_stamp_holds_the_fingerprint_of_its_sources() -> None:
    import numpy as np

    from lowprec import formats

    formats.encode(np.ones(1 << 15, np.float32), formats.E5M2)  # a compiled kernel exists
    kernel = K.encode_kernel(formats.E5M2, formats.policy_for("ml_dtypes", formats.E5M2), np.dtype(np.float32))
    cache = getattr(kernel, "_cache", None)
    if cache is None or not hasattr(cache, "_impl"):
        pytest.skip("the disk cache is off here (LOWPREC_CODEC_CACHE=0 or a read-only install)")
    locator = cache._impl.locator
    assert getattr(type(locator), "_lowprec", False)
    stamp = locator.get_source_stamp()
    assert stamp[1] == K.KERNEL_SOURCES_FINGERPRINT == K.kernel_sources_fingerprint()


def test_the_fingerprint_changes_with_a_file_no_kernel_is_defined_in(tmp_path: Path) -> None:
    for folder in ("formats", "simulations"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = K.kernel_sources_fingerprint(tmp_path)
    assert before == K.KERNEL_SOURCES_FINGERPRINT
    policy = tmp_path / "formats" / "policy.py"
    policy.write_text(policy.read_text(encoding="utf-8") + "\n# a new rounding mode\n", encoding="utf-8")
    assert K.kernel_sources_fingerprint(tmp_path) != before
    after_policy = K.kernel_sources_fingerprint(tmp_path)
    rules = tmp_path / "simulations" / "quant" / "scale_rules.py"
    rules.write_text(rules.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    after_rules = K.kernel_sources_fingerprint(tmp_path)
    assert after_rules != after_policy
    # a file no kernel reads leaves it alone
    other = tmp_path / "simulations" / "attention.py"
    other.write_text(other.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert K.kernel_sources_fingerprint(tmp_path) == after_rules


def _lowprec_imports(path: Path) -> set[Path]:
    """The files of lowprec that `path` imports (absolute `lowprec.…` and relative imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = path.relative_to(ROOT).parent
    out: set[Path] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package
            for _ in range(node.level - 1):
                base = base.parent
            parts = list(base.parts) + (node.module.split(".") if node.module else [])
        elif node.module and node.module.startswith("lowprec."):
            parts = node.module.split(".")[1:]
        else:
            continue
        for name in [a.name for a in node.names] + [""]:
            for cand in (ROOT.joinpath(*parts, name + ".py") if name else None,
                         ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
                if cand is not None and cand.is_file():
                    out.add(cand)
                    break
    return out


def test_kernel_modules_take_globals_only_from_fingerprinted_files() -> None:
    files = K.kernel_source_files()
    covered = {p.resolve() for p in files}
    kernel_modules = [p for p in files if p.name.endswith("_kernels.py")]
    assert {p.name for p in kernel_modules} >= {"_kernels.py", "_mx_kernels.py"}
    for module in kernel_modules:
        outside = sorted(str(p.relative_to(ROOT)) for p in _lowprec_imports(module)
                         if p.resolve() not in covered)
        assert outside == [], f"{module.name} imports {outside}: add them to kernel_source_files"
