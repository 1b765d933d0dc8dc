"""Fuzzing (issue 16, item 7): hypothesis over every public function of `lowprec.formats` and of the
`lowprec.simulations` modules (listed from their `__all__`, so a new function is fuzzed the day it
is exported) and over every `lowprec simulate` subcommand.

The rule: a call either returns, or raises `ValueError`/`TypeError` with a message that says what
is wrong (never numpy's internals: "'<=' not supported…", "only integers, slices…", "has no
attribute…"); any other exception, a call past its time limit, or — for the codec — a result that
disagrees with ml_dtypes, fails. A CLI run exits 0, or 2 with one line `…: error: …` and no
traceback. Arguments are drawn from a pool of awkward values (NaN, ±Inf, -0, huge and negative
integers, int64 above 2**53, complex/object/string/datetime arrays, empty and 0-d arrays, wrong
types, garbage text, format names) mixed with ordinary ones; sizes stay small (bounded work is the
budgets' job, tested in test_hardening.py).

Profiles: the default run is `FUZZ_EXAMPLES` examples per function (about a minute on 2 cores in
total); `LOWPREC_FUZZ=deep` (or the `slow` test) runs 20× more (`LOWPREC_FUZZ_EXAMPLES=N` sets the count). Outcomes by class are printed with
`-s` (`FUZZ_REPORT`).
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import inspect
import io
import math
import os
import re
import signal
import time
from typing import Any, Callable, Iterator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lowprec import formats

DEEP = os.environ.get("LOWPREC_FUZZ") == "deep"
FUZZ_EXAMPLES = int(os.environ.get("LOWPREC_FUZZ_EXAMPLES", 200 if DEEP else 10))
CALL_LIMIT_S = 20.0  # per call: generous for 2 busy cores; a hang is minutes
FUZZ_REPORT: collections.Counter[str] = collections.Counter()

#: messages that are numpy's or Python's internals, not ours
INTERNAL = re.compile(r"not supported between instances|only integers, slices|has no attribute|"
                      r"object is not subscriptable|object is not iterable|unhashable type|"
                      r"missing \d+ required|takes \d+ positional|unexpected keyword|index \d+ is out of bounds|"
                      r"could not broadcast|operands could not be broadcast|cannot convert float NaN|"
                      r"invalid literal for int|axis \d+ is out of bounds")

SIMULATION_MODULES = (
    "studies.attention", "blocks.comparison", "block_conventions", "blocks.records", "blocks", "scaling.delayed",
    "scaling.granularity", "studies.grouping", "studies.hadamard", "scaling.metrics", "mx", "nvfp4", "scaling.scales",
    "scaling", "studies.spike", "scaling.streams",
    "quant.engine", "quant.recipes", "quant.rht", "quant.fp8_blockwise", "quant.mxint", "quant.transpose",
)
#: modules whose functions are not fuzzed directly, and why (their faces are: the CLI fuzz below
#: runs every simulation, recompute included; the examples are fixed, argument-free computations)
NOT_FUZZED = {
    "recompute*": "torch training loops; fuzzed through `lowprec simulate recompute`",
    "examples*": "named worked examples without inputs (test_examples checks each value)",
    "_cli, _io, cliffs": "command-line plumbing; fuzzed through the CLI",
}


class CallTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise CallTimeout(f"call took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------------------------------------
# what is fuzzed
# ------------------------------------------------------------------------------------------------


def _public_functions() -> list[tuple[str, Callable[..., Any]]]:
    out: list[tuple[str, Callable[..., Any]]] = []
    for name in formats.__all__:
        obj = getattr(formats, name)
        if inspect.isfunction(obj):
            out.append((f"formats.{name}", obj))
    for mod_name in SIMULATION_MODULES:
        mod = importlib.import_module(f"lowprec.simulations.{mod_name}")
        names = getattr(mod, "__all__", None)
        if names is None:  # no __all__: the public functions the module defines
            names = [n for n, o in vars(mod).items() if not n.startswith("_") and inspect.isfunction(o)
                     and o.__module__ == mod.__name__]
        for name in names:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                out.append((f"simulations.{mod_name}.{name}", obj))
    return out


FUNCTIONS = _public_functions()

#: functions that had not yet completed a clean fuzz pass on the build machine when the suite was
#: written (issue 16: the shared 2-core machine ran at load ≈ 20, and the first pass covered the
#: rest); they run in every profile, as non-strict xfails, until a pass shows them clean — then
#: delete their names here. A function not listed (every new one included) must pass.
NOT_YET_CLEAN: frozenset[str] = frozenset()


def _cases() -> list[Any]:
    return [pytest.param(name, fn, id=name, marks=[pytest.mark.xfail(
        reason="not yet fuzzed clean (issue 16): see NOT_YET_CLEAN", strict=False)] if name in NOT_YET_CLEAN else [])
        for name, fn in FUNCTIONS]

# ------------------------------------------------------------------------------------------------
# the argument pool
# ------------------------------------------------------------------------------------------------

FORMAT_NAMES = ["E4M3FN", "E5M2", "E2M1", "E8M0", "BF16", "FP16", "INT8", "e4m3", "float8_e4m3fn", "NVFP4", ""]
TEXT = ["nearest_even", "stochastic", "saturate", "max", "row", "none", "ocp", "torchao", "floor", "rceil",
        "tensor", "outlier", "student_t", "3.3", "0x1.8p3", "nan", "-inf", "--inf", "<img src=x>", "no", "True",
        "1" * 300, "\x00", "E8M0"]
AWKWARD_FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 3.3, 448.0, 449.0, 57344.0, 1e-45, 2.0**-149, 65504.0, 3.4e38, 1e39,
                  1e300, -1e300, math.inf, -math.inf, math.nan, 2.0**53 + 1]
AWKWARD_INTS = [0, 1, 2, 3, 16, 32, -1, -32, 2**31, 2**53 + 1, 2**62 + 2**38 + 1, 2**63 - 1, -(2**63), 10**30]


@st.composite
def arrays(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["f32", "f64", "f64", "i64", "big", "f16", "bf16", "complex", "object", "str",
                                 "datetime", "timedelta", "bool", "empty", "0d", "list", "nested"]))
    shape = draw(st.sampled_from([(32,), (2, 32), (16, 16), (4, 64), (3,), (1, 16), (32, 32)]))
    n = int(np.prod(shape))
    values = draw(st.lists(st.sampled_from(AWKWARD_FLOATS) | st.floats(-1e4, 1e4, width=32), min_size=n, max_size=n))
    base = np.array(values, dtype=np.float64).reshape(shape)
    with np.errstate(all="ignore"):
        if kind == "f32":
            return base.astype(np.float32)
        if kind == "f64":
            return base
        if kind == "i64":
            return np.nan_to_num(base, posinf=7, neginf=-7).astype(np.int64)
        if kind == "big":
            return np.full(shape, 2**62 + 2**38 + 1, dtype=np.int64)
        if kind == "f16":
            return base.astype(np.float16)
        if kind == "bf16":
            return base.astype(ml_dtypes.bfloat16)
        if kind == "complex":
            return base + 1j
        if kind == "object":
            return base.astype(object)
        if kind == "str":
            return base.astype(str)
        if kind == "datetime":
            return np.zeros(shape, dtype="datetime64[s]")
        if kind == "timedelta":
            return np.zeros(shape, dtype="timedelta64[s]")
        if kind == "bool":
            return base > 0
        if kind == "empty":
            return np.zeros((0,), np.float32)
        if kind == "0d":
            return np.float32(values[0])
        if kind == "list":
            return [float(v) for v in values[:8]]
        return [[1.0, "2"], [3.0]]


def any_value() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(AWKWARD_FLOATS), st.sampled_from(AWKWARD_INTS), st.integers(-3, 40),
        st.sampled_from(FORMAT_NAMES), st.sampled_from(TEXT), st.text(max_size=8),
        st.sampled_from([None, True, False, [], {}, (), object(), 1 + 2j, b"E4M3FN", np.float32(2.5),
                         np.int64(7), np.random.default_rng(0), np.random.RandomState(0)]),
        st.sampled_from([formats.CastPolicy(), formats.CastPolicy(rounding=formats.Rounding.STOCHASTIC),
                         formats.E4M3FN, formats.E2M1, formats.INT8]),
        arrays(),
    )


# ------------------------------------------------------------------------------------------------
# the rule
# ------------------------------------------------------------------------------------------------


def classify(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> str:
    """Call and return the outcome class; raise AssertionError when the rule is broken."""
    try:
        with time_limit(CALL_LIMIT_S), np.errstate(all="ignore"):
            fn(*args, **kwargs)
        return "returned"
    except CallTimeout:
        raise AssertionError(f"hang: {fn.__qualname__}(*{args!r:.300}, **{kwargs!r:.300})") from None
    except (ValueError, TypeError) as exc:
        message = str(exc)
        assert message.strip(), f"{type(exc).__name__} without a message from {fn.__qualname__}"
        assert not INTERNAL.search(message), (
            f"{fn.__qualname__} raised an internal message: {type(exc).__name__}: {message[:300]}\n"
            f"args={args!r:.300} kwargs={kwargs!r:.300}")
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - the point: no other exception may escape
        raise AssertionError(f"{fn.__qualname__} raised {type(exc).__name__}: {str(exc)[:300]}\n"
                             f"args={args!r:.300} kwargs={kwargs!r:.300}") from exc


def _fuzz_settings(examples: int) -> Any:
    return settings(max_examples=examples, deadline=None, derandomize=not DEEP, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def stable_draws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The same examples in every process: Hypothesis (≥ 6.131) also draws "local constants", the
    literals of every non-library module in `sys.modules` at the time, so which examples a
    derandomized run draws depended on what the other tests of an xdist worker had imported (the
    grouping fuzz failed in 3 runs of 9 under xdist and passed alone). The pool of local constants
    is emptied for the fuzz tests (the argument pool above already holds the awkward values), and
    `test_fuzz_draws_do_not_depend_on_the_loaded_modules` checks that the draws stay put."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # a Hypothesis without the module has no local constants either
        yield
        return
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        monkeypatch.setattr(providers, "_get_local_constants", lambda: empty)
    if cache is not None:
        cache.cache.clear()  # keyed by the draw's constraints only: it may hold another pool's picks
    yield
    if cache is not None:
        cache.cache.clear()


@pytest.mark.parametrize("name, fn", _cases())
def test_fuzz_public_function(name: str, fn: Callable[..., Any]) -> None:
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    @_fuzz_settings(FUZZ_EXAMPLES)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in params:
            required = p.default is p.empty
            if not required and not data.draw(st.booleans()):
                continue
            value = data.draw(any_value(), label=p.name)
            if p.kind is p.KEYWORD_ONLY or not required:
                kwargs[p.name] = value
            else:
                args.append(value)
        FUZZ_REPORT[f"{name}: {classify(fn, args, kwargs)}"] += 1

    run()


def _drawn_arguments() -> list[str]:
    """The argument lists one fuzz run draws (reprs, object addresses removed)."""
    seen: list[str] = []

    @_fuzz_settings(FUZZ_EXAMPLES)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        value = data.draw(st.lists(any_value(), min_size=4, max_size=4))
        seen.append(re.sub(r" at 0x[0-9a-f]+", "", repr(value), flags=re.IGNORECASE))

    run()
    return seen


def test_fuzz_draws_do_not_depend_on_the_loaded_modules(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing a module full of literals (what another test of the same worker does) changes no
    draw (see `stable_draws`)."""
    first = _drawn_arguments()
    probe = tmp_path / "fuzz_constants_probe.py"
    probe.write_text("INTS = [" + ", ".join(str(7919 * i + 3) for i in range(300)) + "]\n"
                     "FLOATS = [" + ", ".join(f"{i}.{i}25" for i in range(300)) + "]\n"
                     "TEXTS = [" + ", ".join(f"'probe-{i}'" for i in range(300)) + "]\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("fuzz_constants_probe")
    assert _drawn_arguments() == first


# ------------------------------------------------------------------------------------------------
# the codec against ml_dtypes, on fuzzed float32 inputs (the oracle where one exists)
# ------------------------------------------------------------------------------------------------

ML_DTYPES = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2, "BF16": ml_dtypes.bfloat16,
             "E2M1": ml_dtypes.float4_e2m1fn, "E3M2": ml_dtypes.float6_e3m2fn, "E2M3": ml_dtypes.float6_e2m3fn}


@pytest.mark.parametrize("fmt", list(ML_DTYPES))
def test_fuzz_codec_against_ml_dtypes(fmt: str) -> None:
    policy = formats.policy_for("ml_dtypes", fmt)
    target = ML_DTYPES[fmt]
    finite_only = fmt in ("E2M1", "E3M2", "E2M3")  # ml_dtypes' NaN into a NaN-less format is undefined

    @_fuzz_settings(FUZZ_EXAMPLES * 5)
    @given(st.lists(st.floats(width=32, allow_nan=not finite_only, allow_infinity=not finite_only)
                    | st.sampled_from([0.0, -0.0, 448.0, 464.0, 57344.0, 61440.0, 6.0, 7.0, 28.0, 7.5]),
                    min_size=1, max_size=64))
    def run(values: list[float]) -> None:
        x = np.array(values, dtype=np.float32)
        codes = formats.encode(x, fmt, policy)
        want = x.astype(target).view(np.uint8 if target(0).itemsize == 1 else np.uint16)
        if finite_only:  # the sub-byte formats: ml_dtypes stores one code per byte
            want = want & np.uint8((1 << formats.get_format(fmt).bits) - 1)
        assert np.array_equal(codes.astype(np.uint32), want.astype(np.uint32)), (fmt, x[codes != want])
        FUZZ_REPORT[f"codec {fmt} vs ml_dtypes: agreed"] += 1

    run()


# ------------------------------------------------------------------------------------------------
# every `lowprec simulate` subcommand
# ------------------------------------------------------------------------------------------------

SIMULATE = ("spike", "grouping", "blocks", "attention", "hadamard", "recompute")


def _record(name: str) -> Any:
    if name == "recompute":
        from lowprec.simulations.recompute.config import RecomputeConfig

        return RecomputeConfig
    return importlib.import_module(f"lowprec.simulations.{name}").SIMULATION.config


@st.composite
def option_values(draw: st.DrawFn, record: Any) -> list[str]:
    from lowprec.config import fields_of

    argv: list[str] = []
    for k in fields_of(record):
        if not draw(st.integers(0, 3)) == 0:  # most options keep their default
            continue
        if k.type is bool:
            argv.append(k.option if draw(st.booleans()) else "--no-" + k.option[2:])
            continue
        if k.choices is not None:
            pool = [str(c) for c in k.choices] + ["bogus", "<b>x</b>", ""]
        elif k.bounds is not None:
            lo, hi = k.bounds
            lo = lo if lo is not None else -10
            small_hi = lo + (hi - lo) * 0.01 if hi is not None else lo + 10
            if k.type is int:
                pool = [str(v) for v in (lo, lo + 1, int(small_hi), hi, (hi or 0) + 1, lo - 1)] + ["1.5", "x"]
            else:
                pool = [repr(v) for v in (lo, small_hi, hi, float("nan"), float("inf"))] + ["1e400", "x"]
        else:
            pool = ["a,b", "", "row", "1e3"]
        argv += [k.option, draw(st.sampled_from(pool))]
    return argv


@pytest.mark.parametrize("name", SIMULATE)
def test_fuzz_simulate_command(name: str, monkeypatch: Any) -> None:
    """Options drawn from each knob's choices, bounds (and just outside them) and garbage, under a
    small budget (1 s estimated: a request over it must be refused in one line like any bad value)."""
    import lowprec.simulations.framework.cli as sim_cli
    import lowprec.simulations.recompute.cli as recompute_cli
    from lowprec.app.cli import main as cli_main
    from lowprec.config import Budget

    small = Budget(bytes=256 * 2**20, seconds=1.0, where="the fuzz run")
    monkeypatch.setattr(sim_cli, "CLI_BUDGET", small)
    monkeypatch.setattr(recompute_cli, "CLI_BUDGET", small)
    record = _record(name)

    @_fuzz_settings(max(3, FUZZ_EXAMPLES // 2))
    @given(option_values(record))
    def run(options: list[str]) -> None:
        argv = ["simulate", name, *options, "--quiet", "--json", "-"]
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        try:
            with time_limit(CALL_LIMIT_S * 3), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = cli_main(argv)
        except SystemExit as exc:  # argparse's own refusal (a bad choice or number)
            rc = int(exc.code or 0)
        except CallTimeout:
            raise AssertionError(f"hang: lowprec {' '.join(argv)}") from None
        text = err.getvalue()
        assert "Traceback" not in text, (argv, text)
        if rc == 0:
            from lowprec import strictjson

            strictjson.loads(out.getvalue())  # strict JSON, every time
            FUZZ_REPORT[f"simulate {name}: ran"] += 1
        else:
            assert rc == 2 and text.count("\n") == 1 and ": error: " in text, (argv, rc, text)
            assert not INTERNAL.search(text), (argv, text)
            FUZZ_REPORT[f"simulate {name}: refused"] += 1
        FUZZ_REPORT["simulate seconds"] += int(round(time.perf_counter() - start))

    run()


@pytest.mark.slow
def test_fuzz_deep_profile() -> None:
    """The long profile: the whole module again with LOWPREC_FUZZ=deep (20× the examples)."""
    import subprocess
    import sys

    env = dict(os.environ, LOWPREC_FUZZ="deep")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "not deep_profile"], env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def teardown_module() -> None:
    if FUZZ_REPORT:
        by_class = collections.Counter(key.rsplit(": ", 1)[-1] for key in FUZZ_REPORT if ": " in key)
        print("\nfuzz outcomes by class:", dict(by_class))
