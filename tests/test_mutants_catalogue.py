"""The mutant catalogue (tools/mutants) stays applicable, and the tests keep two habits that let
mutants be caught: `pytest.raises` names the message it expects, and no assertion only checks that
a value `is not None`. Fast: reads files, runs no mutant (`./dev mutants` does that)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tools.mutants import Mutant, apply_mutant, snippet_count
from tools.mutants.catalogue import MUTANTS

ROOT = Path(__file__).resolve().parents[1]
TESTS = sorted((ROOT / "tests").glob("*.py"))


def test_catalogue_size_and_unique_names() -> None:
    assert len(MUTANTS) >= 40
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    # the packages, the leaf modules of lowprec/ (config, strictjson, extras), the ./dev script and the
    # packaging (setup.py, tools/layout.py)
    assert all(m.path.startswith(("formats/", "simulations/", "gpu/", "app/", "lowprec/", "tools/"))
               or m.path in ("dev", "setup.py") for m in MUTANTS)


@pytest.mark.parametrize("m", MUTANTS, ids=lambda m: m.name)
def test_every_snippet_occurs_exactly_once_and_changes_the_file(m: Mutant) -> None:
    assert snippet_count(ROOT, m) == 1, f"{m.name}: update the snippet in tools/mutants/catalogue.py"
    assert m.original != m.replacement
    for arg in m.tests:  # every selected test file exists
        assert (ROOT / arg.split("::")[0]).is_file(), arg


def test_apply_mutant_refuses_a_snippet_that_is_not_unique(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("a = 1\na = 1\n", encoding="utf-8")
    m = Mutant("twice", "f.py", "a = 1", "a = 2", "", ())
    with pytest.raises(ValueError, match="occurs 2 times in f.py"):
        apply_mutant(tmp_path, m)
    (tmp_path / "f.py").write_text("a = 1\n", encoding="utf-8")
    assert apply_mutant(tmp_path, m) == "a = 1\n"
    assert (tmp_path / "f.py").read_text(encoding="utf-8") == "a = 2\n"


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def test_every_pytest_raises_names_the_message() -> None:
    missing = []
    for path in TESTS:
        for call in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            f = call.func
            if (isinstance(f, ast.Attribute) and f.attr == "raises" and isinstance(f.value, ast.Name)
                    and f.value.id == "pytest" and not any(k.arg == "match" for k in call.keywords)):
                missing.append(f"{path.name}:{call.lineno}")
    assert missing == [], f"pytest.raises without match=: {missing}"


def test_no_assertion_only_checks_is_not_none() -> None:
    """`assert x is not None` is allowed as a guard before x is used; an assertion whose whole
    content is that a call's result is not None, or whose name is never used again, checks nothing."""
    bad = []
    for path in TESTS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            for i, stmt in enumerate(fn.body):
                if not (isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare)
                        and len(stmt.test.ops) == 1 and isinstance(stmt.test.ops[0], ast.IsNot)
                        and isinstance(stmt.test.comparators[0], ast.Constant)
                        and stmt.test.comparators[0].value is None):
                    continue
                subject = stmt.test.left
                later = ast.unparse(ast.Module(body=fn.body[i + 1:], type_ignores=[]))
                if isinstance(subject, ast.Call) or ast.unparse(subject) not in later:
                    bad.append(f"{path.name}:{stmt.lineno}: {ast.unparse(stmt)}")
    assert bad == [], bad
