"""lowprec.numtext, the one number-to-text module, against independent references: Python's
`format()` and `repr()` for finite values (float16/32/64 values, ±0, subnormals, integers), the
strict JSON writer's words and RFC 8259's number grammar for the non-finite ones, `float()` reading
every text back; and a scan of the code base for any other spelling of NaN / ±Inf."""

from __future__ import annotations

import ast
import json
import math
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lowprec import numtext, strictjson

ROOT = Path(__file__).resolve().parents[1]

#: RFC 8259 §6: number = [ minus ] int [ frac ] [ exp ] (no NaN, no Infinity)
RFC8259_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _f32(bits: int) -> float:
    return float(np.array([bits], np.uint32).view(np.float32)[0])


def _f16(bits: int) -> float:
    return float(np.array([bits], np.uint16).view(np.float16)[0])


#: finite values, each with an id: ±0, ordinary, tiny and huge, float64/float32/float16 edges
FINITE: list[tuple[str, float]] = [
    ("0", 0.0), ("-0", -0.0), ("1", 1.0), ("-1", -1.0), ("0.1", 0.1), ("third", 1 / 3), ("448", 448.0),
    ("-57344", -57344.0), ("1e16", 1e16), ("1e-5", 1e-5), ("2^-9", 2.0 ** -9), ("123456.789", 123456.789),
    ("f64-max", float.fromhex("0x1.fffffffffffffp1023")), ("f64-min-normal", float.fromhex("0x1p-1022")),
    ("f64-min-subnormal", float.fromhex("0x0.0000000000001p-1022")), ("f64-max-subnormal",
                                                                     float.fromhex("0x0.fffffffffffffp-1022")),
    ("f32-max", _f32(0x7F7FFFFF)), ("f32-min-subnormal", _f32(0x00000001)), ("f32-max-subnormal", _f32(0x007FFFFF)),
    ("f32-neg-subnormal", _f32(0x80000001)), ("f32-0.1", _f32(0x3DCCCCCD)),
    ("f16-max", _f16(0x7BFF)), ("f16-min-subnormal", _f16(0x0001)), ("f16-neg-max-subnormal", _f16(0x83FF)),
]
FINITE_IDS = [i for i, _ in FINITE]
FINITE_VALUES = [v for _, v in FINITE]
#: non-finite values (NaN with either sign and a payload) and the word each must read as
NONFINITE: list[tuple[str, float, str]] = [
    ("nan", math.nan, "nan"), ("-nan", -math.nan, "nan"), ("f32-nan-payload", _f32(0x7FC00001), "nan"),
    ("f32-neg-snan", _f32(0xFF800001), "nan"), ("f16-nan", _f16(0x7E00), "nan"),
    ("inf", math.inf, "inf"), ("-inf", -math.inf, "-inf"), ("f32-inf", _f32(0x7F800000), "inf"),
    ("f16-neg-inf", _f16(0xFC00), "-inf"),
]
NUMPY_FLOATS = (np.float16, np.float32, np.float64)


# ------------------------------------------------------------------------------------------------
# the words: strict JSON's, Python's, and not RFC 8259 numbers
# ------------------------------------------------------------------------------------------------


def test_the_words_are_the_strict_json_writers() -> None:
    assert numtext.NONFINITE_WORDS == (numtext.NAN, numtext.INF, numtext.NEG_INF) == ("nan", "inf", "-inf")
    assert set(strictjson.NONFINITE_SPELLING) == set(numtext.NONFINITE_WORDS)
    # what the writer really writes: each non-finite float becomes a JSON *string* with the word
    for x, word in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        assert json.loads(strictjson.dumps(x)) == word == numtext.nonfinite_text(x) == numtext.general(x)
        assert json.loads(strictjson.dumps(np.float32(x))) == word


def test_the_words_are_pythons_and_read_back() -> None:
    """Python's own formatting spells non-finite floats with the same words, and float() reads them."""
    for x, word in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        for spec in ("g", ".3g", ".2f", ".4e"):
            assert format(x, spec) == word
        assert repr(x) == word
        back = float(word)
        assert (math.isnan(back) and math.isnan(x)) or back == x


def test_the_words_are_not_json_numbers() -> None:
    """RFC 8259 has no NaN or Infinity: the words can only travel as strings, and a strict parser
    refuses the tokens Python's json module writes by default."""
    for word in numtext.NONFINITE_WORDS:
        assert RFC8259_NUMBER.fullmatch(word) is None
    assert json.dumps(math.nan) == "NaN"  # the default spelling we must not use
    with pytest.raises(ValueError, match="not strict JSON: the token NaN"):
        strictjson.loads("[NaN]")


# ------------------------------------------------------------------------------------------------
# finite values against format() / repr()
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", FINITE_VALUES, ids=FINITE_IDS)
@pytest.mark.parametrize("digits", [1, 3, 4, 6, 8, 17])
def test_general_fixed_scientific_match_format(x: float, digits: int) -> None:
    assert numtext.general(x, digits) == format(x, f".{digits}g")
    assert numtext.fixed(x, digits) == format(x, f".{digits}f")
    assert numtext.scientific(x, digits) == format(x, f".{digits}e")
    assert numtext.general(x, digits, sign=True) == format(x, f"+.{digits}g")
    assert numtext.fixed(x, digits, sign=True) == format(x, f"+.{digits}f")
    assert numtext.scientific(x, digits, sign=True) == format(x, f"+.{digits}e")


def test_general_defaults_to_six_digits() -> None:
    assert numtext.general(1 / 3) == "0.333333" == format(1 / 3, "g")


@pytest.mark.parametrize("x", FINITE_VALUES, ids=FINITE_IDS)
def test_roundtrip_and_shortest_read_back_bit_for_bit(x: float) -> None:
    text = numtext.roundtrip(x)
    assert text == repr(x)
    assert _bits(float(text)) == _bits(x)
    short = numtext.shortest(x)
    assert _bits(float(short)) == _bits(x)  # -0 stays -0
    assert short == (repr(x)[:-2] if repr(x).endswith(".0") else repr(x))
    assert not short.endswith(".0")


def test_shortest_examples() -> None:
    # worked by hand: repr(1.0) = '1.0' → '1'; repr(-0.0) = '-0.0' → '-0'; repr(1e16) = '1e+16'
    assert [numtext.shortest(v) for v in (1.0, -0.0, 0.0, 0.1, 1e16, 2.5, 100.0)] == \
        ["1", "-0", "0", "0.1", "1e+16", "2.5", "100"]


@pytest.mark.parametrize("x", FINITE_VALUES, ids=FINITE_IDS)
@pytest.mark.parametrize("digits", [1, 3, 5])
def test_percent_is_a_hundred_times_in_g_or_f(x: float, digits: int) -> None:
    hundred = 100 * x
    if not math.isfinite(hundred):  # 100 × the largest float64 overflows: the word alone
        assert numtext.percent(x, digits) == "inf"
        return
    assert numtext.percent(x, digits) == format(hundred, f".{digits}g") + " %"
    assert numtext.percent(x, decimals=digits) == format(hundred, f".{digits}f") + " %"
    assert numtext.percent(x, digits, sign=True) == format(hundred, f"+.{digits}g") + " %"


def test_percent_examples() -> None:
    assert numtext.percent(0.125) == "12.5 %"
    assert numtext.percent(0.125, decimals=3) == "12.500 %"
    assert numtext.percent(-0.00123, 2) == "-0.12 %"


# ------------------------------------------------------------------------------------------------
# non-finite values: one word, whatever the function, format width or sign
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "word"), [(x, w) for _, x, w in NONFINITE], ids=[i for i, _, _ in NONFINITE])
def test_every_function_spells_a_nonfinite_value_with_its_word(x: float, word: str) -> None:
    assert numtext.nonfinite_text(x) == word
    for digits in (0, 3, 8):
        assert numtext.general(x, digits) == word
        assert numtext.fixed(x, digits) == word
        assert numtext.scientific(x, digits) == word
        assert numtext.percent(x, digits) == word  # the word alone, never 'nan %'
        assert numtext.percent(x, decimals=digits) == word
    assert numtext.roundtrip(x) == word
    assert numtext.shortest(x) == word
    # sign=True: +Inf gains '+' as any positive number; a NaN has no sign in text
    assert numtext.general(x, 3, sign=True) == {"inf": "+inf", "-inf": "-inf", "nan": "nan"}[word]
    for t in NUMPY_FLOATS:
        assert numtext.general(t(x), 3) == word
        assert numtext.roundtrip(t(x)) == word


def test_nonfinite_text_of_a_finite_value_is_none() -> None:
    for x in FINITE_VALUES + [0, 7, np.int8(-3), np.float16(1.5)]:
        assert numtext.nonfinite_text(x) is None


# ------------------------------------------------------------------------------------------------
# numpy scalars, integers, booleans, absent values, bad arguments
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", NUMPY_FLOATS, ids=lambda t: t.__name__)
def test_numpy_floats_print_their_exact_value(t: Any) -> None:
    info = np.finfo(t)
    for v in (t(0.1), t(-0.0), info.max, info.smallest_normal, info.smallest_subnormal, -info.smallest_subnormal):
        exact = float(v)  # every float16/32 value is a float64 exactly
        assert numtext.general(v, 9) == format(exact, ".9g")
        assert numtext.roundtrip(v) == repr(exact)
        assert _bits(float(numtext.shortest(v))) == _bits(exact)


@pytest.mark.parametrize("v", [0, 7, -12, 2 ** 70, np.int8(-128), np.uint8(255), np.int64(-(2 ** 62)),
                               np.uint64(2 ** 64 - 1)], ids=str)
def test_integers(v: Any) -> None:
    n = int(v)
    assert numtext.roundtrip(v) == numtext.shortest(v) == str(n)  # exact, even past 2^53
    assert numtext.general(v, 4) == format(n, ".4g")
    assert numtext.fixed(v, 2) == format(n, ".2f")


@pytest.mark.parametrize("v", [True, False, np.bool_(True), np.bool_(False)], ids=repr)
def test_booleans_are_refused(v: Any) -> None:
    for f in (numtext.general, numtext.roundtrip, numtext.shortest, numtext.percent, numtext.nonfinite_text):
        with pytest.raises(TypeError, match="a number is needed, got the boolean"):
            f(v)


@pytest.mark.parametrize("v", ["1.5", "nan", [1.0], 1 + 2j, object()], ids=["str", "word", "list", "complex", "object"])
def test_other_objects_are_refused(v: Any) -> None:
    with pytest.raises(TypeError, match="a real number is needed"):
        numtext.general(v)
    with pytest.raises(TypeError, match="a real number is needed"):
        numtext.roundtrip(v)


def test_none_needs_a_stated_text() -> None:
    with pytest.raises(TypeError, match="got None"):
        numtext.general(None)
    for f in (numtext.general, numtext.roundtrip, numtext.shortest, numtext.percent):
        assert f(None, none=numtext.ABSENT) == "–"
    assert numtext.fixed(None, 2, none="") == ""
    assert numtext.percent(None, decimals=3, none="n/a") == "n/a"


@pytest.mark.parametrize(("digits", "error", "match"), [(-1, ValueError, "between 0 and 100"),
                                                        (101, ValueError, "between 0 and 100"),
                                                        (2.0, TypeError, "must be an integer"),
                                                        (True, TypeError, "must be an integer")])
def test_bad_digit_counts(digits: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        numtext.general(1.0, digits)
    with pytest.raises(error, match=match):
        numtext.fixed(1.0, digits)


def test_strictjson_json_float() -> None:
    """The JSON sanitiser beside the writer: finite → float, non-finite → the word, bool refused."""
    assert strictjson.json_float(np.float32(0.1)) == float(np.float32(0.1))
    assert strictjson.json_float(3) == 3.0 and isinstance(strictjson.json_float(3), float)
    assert [strictjson.json_float(v) for v in (math.nan, np.float16(math.inf), -math.inf)] == ["nan", "inf", "-inf"]
    with pytest.raises(TypeError, match="not a real number"):
        strictjson.json_float(True)
    with pytest.raises(TypeError, match="not a real number"):
        strictjson.json_float("1")


# ------------------------------------------------------------------------------------------------
# the spelling reaches the pages: helpers that used to spell NaN / Inf their own way
# ------------------------------------------------------------------------------------------------


def test_power_of_two_text_uses_the_words() -> None:
    from lowprec.formats import power_of_two_text
    assert [power_of_two_text(v) for v in (math.nan, math.inf, -math.inf, 448.0, -0.0)] == \
        ["nan", "inf", "-inf", "7/4 × 2^8", "-0"]


def test_challenge_shown_text() -> None:
    from lowprec.formats.challenge import shown_text
    # 0.1015625 = 13/128 = 13/8 × 2^-4; a non-finite value is its word once, not 'nan = nan'
    assert [shown_text(v) for v in (0.1015625, 448.0, 1.0, -0.0, math.nan, -math.inf)] == \
        ["0.1015625 = 13/8 × 2^-4", "448 = 7/4 × 2^8", "1 = 1 × 2^0", "-0", "nan", "-inf"]


# ------------------------------------------------------------------------------------------------
# nobody else spells NaN / Inf
# ------------------------------------------------------------------------------------------------

#: a text that is (or ends in) a spelling of a non-finite number
_WORD = r"[+\-−±]?(?:nan|inf|infinity|∞)"
_WHOLE = re.compile(_WORD, re.IGNORECASE)
_TAIL = re.compile(r"(?:^\s*|=\s*|\()" + _WORD + r"\s*$", re.IGNORECASE)  # '{x} = NaN', '{x} inf', '(∞'

#: (file, function, literal) that may return or print such a word, and why
ALLOWED: dict[tuple[str, str, str], str] = {
    ("formats/explain.py", "_code_class", "nan"): "a code's class name (formats.classify_codes), not a value",
    ("formats/explain.py", "_code_class", "inf"): "a code's class name (formats.classify_codes), not a value",
    ("formats/specs.py", "_summary", "inf"): "the name of a format's special-value layout ('fn+inf'), not a value",
}
#: the modules that own the words
OWNERS = {"lowprec/numtext.py", "lowprec/strictjson.py"}
SCANNED = ("app", "formats", "simulations", "gpu", "benchmarks", "lowprec")


def _python_files() -> list[Path]:
    out = []
    for top in SCANNED:
        base = ROOT / top
        files = base.glob("*.py") if top == "lowprec" else base.rglob("*.py")
        out += [p for p in files if p.relative_to(ROOT).as_posix() not in OWNERS]
    return sorted(out)


def _spellings(path: Path, root: Path = ROOT) -> list[tuple[str, str, int, str]]:
    """(file, enclosing function, line, literal) of every string a function returns, an if-else
    expression yields, or an f-string ends a piece with, that spells a non-finite number."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(root).as_posix()
    found = []

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        candidates: list[ast.AST] = []
        if isinstance(node, ast.Return) and node.value is not None:
            candidates.append(node.value)
        if isinstance(node, ast.IfExp):
            candidates += [node.body, node.orelse]
        for c in candidates:
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and _WHOLE.fullmatch(c.value.strip()):
                found.append((rel, func, c.lineno, c.value))
        if isinstance(node, ast.JoinedStr):
            for piece in node.values:
                if isinstance(piece, ast.Constant) and isinstance(piece.value, str) and _TAIL.search(piece.value):
                    found.append((rel, func, piece.lineno, piece.value))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, "<module>")
    return found


def test_no_other_module_spells_nonfinite_numbers() -> None:
    found = [f for p in _python_files() for f in _spellings(p)]
    stray = [f"{rel}:{line} in {func}: {lit!r}" for rel, func, line, lit in found
             if (rel, func, lit.strip()) not in ALLOWED]
    assert stray == [], "spell NaN / ±Inf with lowprec.numtext:\n" + "\n".join(stray)
    # every allowance is still needed (a stale one would hide a new stray spelling)
    used = {(rel, func, lit.strip()) for rel, func, _, lit in found}
    assert set(ALLOWED) <= used


def test_the_scan_sees_a_stray_spelling(tmp_path: Path) -> None:
    """The scanner itself: each pattern it is meant to see."""
    src = ('def a(v):\n    return "NaN"\n'
           'def b(v):\n    return "+Inf" if v > 0 else "x"\n'
           'def c(v):\n    return f"{v} = ∞"\n'
           'def d(v):\n    return f"{v:.3g}"\n')
    p = tmp_path / "probe.py"
    p.write_text(src, encoding="utf-8")
    found = [(func, lit) for _, func, _, lit in _spellings(p, tmp_path)]
    assert found == [("a", "NaN"), ("b", "+Inf"), ("c", " = ∞")]


def test_the_offline_scripts_use_the_words() -> None:
    """The offline pages' JavaScript mirrors the Python texts: any literal it returns for a
    non-finite number is one of the words."""
    words = set(numtext.NONFINITE_WORDS)
    bad = []
    for js in sorted((ROOT / "app" / "static").rglob("*.js")):
        for m in re.finditer(r"return\s+[\"']([^\"']*)[\"']", js.read_text(encoding="utf-8")):
            lit = m.group(1)
            if _WHOLE.fullmatch(lit.strip()) and lit not in words:
                bad.append(f"{js.relative_to(ROOT)}: {lit!r}")
    assert bad == []
