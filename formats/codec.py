"""Bit-exact encode/decode between float32/float64 arrays and format codes: two paths, one contract.

* The **compiled path** (`formats._kernels`, numba): one fused pass per array, specialised per
  (format, policy, input dtype) at first use and cached; it runs every policy, stochastic rounding
  included, with no temporaries proportional to the input.
* The **numpy path** below is the readable reference (beside the one-value twin in
  `formats.scalar`). The encoder works on the integer bits of the input (never through an
  intermediate format, unless a policy asks for float64 → float32 double rounding to imitate a
  backend). A value is written as sig × 2^(e - p) with p the source mantissa width; its target
  quantum exponent is qe = max(e, emin) - m, so the rounded significand is
  n = round(sig / 2^(qe - e + p)) and the code's magnitude is ((qe - (emin - m)) << m) + n — one
  formula for subnormals, normals and the carry into the next binade. Round-to-nearest-even with
  subnormals kept has an integer add-and-shift shortcut (and a float "magic number" addition for the
  subnormal range); every other mode takes the general formula. Work is done in fixed chunks with
  preallocated scratch.

Which path runs: LOWPREC_CODEC=auto (default: the compiled path for arrays of at least
`FAST_MIN` elements, so a widget's one-value casts never wait for a compilation; numpy below),
`fast` (compiled for every size) or `numpy`; `set_codec_path` / `codec_path` change it in-process.
Without numba the compiled path is unavailable: a warning is issued once and the numpy path runs.
Both paths give the same codes bit for bit (tested), the same errors (for the first offending element
in flat order) and the same stochastic-rounding stream (`formats.philox`: Philox-4x32-10 keyed by
the seed, counted by element index, so results depend on neither threads nor chunking).

Threads: arrays of at least 2^20 elements are split over a pool of LOWPREC_CODEC_THREADS threads
(default min(2, CPU count); `set_codec_threads`). Both paths release the GIL while they work.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np
import numpy.typing as npt

from .philox import TILE, check_seed, random_u32, stochastic_key
from .policy import (
    CastPolicy,
    NanPayload,
    NanToFinite,
    Overflow,
    Rounding,
    SrFraction,
    Subnormals,
    UnsignedNegative,
    UnsignedZero,
)
from .specs import BF16, Format, FloatFormat, IntFormat, get_format

CHUNK = 1 << 18  # elements per chunk of the numpy path: 2 MiB of scratch per thread
_PARALLEL_MIN = 1 << 20  # arrays at least this large are split over threads
FAST_MIN = 1 << 14  # under LOWPREC_CODEC=auto, smaller arrays take the numpy path
CODEC_PATHS = ("auto", "fast", "numpy")


def _threads_from_env() -> int:
    raw = os.environ.get("LOWPREC_CODEC_THREADS", "")
    if raw.strip():
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n >= 1:
            return n
        warnings.warn(f"LOWPREC_CODEC_THREADS={raw!r} is not a positive integer; using the default",
                      stacklevel=2)
    return max(1, min(2, os.cpu_count() or 1))


def _path_from_env() -> str:
    raw = os.environ.get("LOWPREC_CODEC", "auto").strip().lower() or "auto"
    if raw not in CODEC_PATHS:
        warnings.warn(f"LOWPREC_CODEC={raw!r} is not one of {', '.join(CODEC_PATHS)}; using 'auto'",
                      stacklevel=2)
        return "auto"
    return raw


_THREADS = _threads_from_env()
_PATH = _path_from_env()
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE != _THREADS:
            _POOL = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="lowprec-codec")
            _POOL_SIZE = _THREADS
        return _POOL


def set_codec_threads(n: int) -> int:
    """Use `n` threads for large arrays (both paths); returns the previous count."""
    global _THREADS
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"threads={n!r} must be a positive integer")
    previous, _THREADS = _THREADS, int(n)
    return previous


def codec_threads() -> int:
    """Threads used for large arrays."""
    return _THREADS


def set_codec_path(path: str) -> str:
    """Choose the codec path: 'auto', 'fast' or 'numpy' (see the module docstring); returns the
    previous choice."""
    global _PATH
    if not isinstance(path, str) or path.lower() not in CODEC_PATHS:
        raise ValueError(f"codec path {path!r} is not one of {', '.join(CODEC_PATHS)}")
    previous, _PATH = _PATH, path.lower()
    return previous


@contextlib.contextmanager
def codec_path(path: str) -> Iterator[None]:
    """`with codec_path('numpy'): ...` runs the block on that path (process-wide)."""
    previous = set_codec_path(path)
    try:
        yield
    finally:
        set_codec_path(previous)


_KERNELS: ModuleType | None = None
_KERNELS_MISSING = False


def compiled_kernels() -> ModuleType | None:
    """`formats._kernels`, imported at first use; None (with one warning) where numba is missing."""
    global _KERNELS, _KERNELS_MISSING
    if _KERNELS is None and not _KERNELS_MISSING:
        try:
            from . import _kernels
        except ImportError as exc:
            _KERNELS_MISSING = True
            warnings.warn(f"lowprec's compiled codec is unavailable ({exc}); using the numpy path "
                          f"(slower). Install numba to enable it.", RuntimeWarning, stacklevel=3)
            return None
        _KERNELS = _kernels
    return _KERNELS


def _compiled_for(n: int) -> ModuleType | None:
    """The kernel module when the compiled path should run for an array of n elements."""
    if _PATH == "numpy" or (_PATH == "auto" and n < FAST_MIN):
        return None
    return compiled_kernels()


def check_policy(fmt: Format, policy: CastPolicy) -> None:
    """ValueError where `policy` cannot apply to `fmt` (as `encode` checks it), for compiled twins
    that cast without calling `encode`."""
    _check_policy(fmt, policy)


def compiled_kernels_for(n: int) -> ModuleType | None:
    """The compiled kernels when the codec switch sends an array of n elements to the compiled path
    (for compiled twins of numpy code outside the codec, e.g. the block quantizers); else None."""
    return _compiled_for(n)


def threads_for(n: int) -> int:
    """How many threads work on an array of n elements (1 below the parallel threshold)."""
    return 1 if n < _PARALLEL_MIN else _THREADS


def map_on_threads(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """[fn(item) for item in items], on the codec's thread pool when there is more than one."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    return list(_pool().map(fn, items))


def _thread_ranges(total: int, align: int = TILE) -> list[tuple[int, int]]:
    """Contiguous element ranges, one per thread for large arrays, split on `align` boundaries."""
    if total < _PARALLEL_MIN or _THREADS < 2:
        return [(0, total)]
    step = -(-total // (_THREADS * align)) * align
    return [(lo, min(total, lo + step)) for lo in range(0, total, step)]


# ------------------------------------------------------------------------------------------------
# input validation
# ------------------------------------------------------------------------------------------------


def as_float_array(x: Any, name: str = "x") -> np.ndarray:
    """Input as a float32 or float64 ndarray (other real dtypes are widened exactly).

    Raises TypeError for complex, object, string or boolean-less garbage input.
    """
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind in "fiub" and arr.dtype in (np.float32, np.float64):
        return arr
    if kind == "c":
        raise TypeError(f"{name} is complex ({arr.dtype}); lowprec casts real numbers only")
    if kind in "OUSV" or kind == "M" or kind == "m":
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected real numbers (float32, float64, ints)"
        )
    if kind == "f" and arr.dtype.itemsize < 4:
        return arr.astype(np.float32)  # float16 widens exactly
    if kind in "iub":
        return _int_to_float64_odd(arr) if kind in "iu" else arr.astype(np.float64)
    if arr.dtype.kind == "V" or arr.dtype.itemsize == 2:  # ml_dtypes (bfloat16, float8 …) widen exactly
        return arr.astype(np.float32)
    try:
        return arr.astype(np.float32) if arr.dtype.itemsize <= 4 else arr.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} has dtype {arr.dtype}; expected real numbers") from None


def _int_to_float64_odd(arr: np.ndarray) -> np.ndarray:
    """Integers as float64 rounded to odd: truncated to 53 significant bits, with the last bit set
    when bits were dropped. Exact up to 2**53; above, the sticky last bit keeps a later rounding to
    any format of at most 51 significant bits (every lowprec format) single and correct, where
    `astype(float64)` would round twice (2**62 + 2**38 + 1 → 2**62 in FP32, not 2**62 + 2**39)."""
    if arr.dtype.itemsize < 8:
        return arr.astype(np.float64)  # every int32/uint32 is a float64
    negative = arr < 0 if arr.dtype.kind == "i" else np.zeros(arr.shape, dtype=bool)
    bits = arr.astype(np.int64 if arr.dtype.kind == "i" else np.uint64).view(np.uint64)
    magnitude = np.where(negative, ~bits + np.uint64(1), bits)  # |x| as uint64, -2**63 included
    out = magnitude.astype(np.float64)  # exact where magnitude < 2**53
    big = magnitude >= np.uint64(1 << 53)
    if np.any(big):
        m = magnitude[big]
        # bit length from the top set bit: 54..64 (frexp of the truncated float is exact enough:
        # a float64 rounded up to the next power of two only overstates it by one)
        length = np.frexp((m >> np.uint64(11)).astype(np.float64))[1].astype(np.uint64) + np.uint64(11)
        shift = length - np.uint64(53)
        kept = (m >> shift) << shift
        odd = (kept != m)
        value = kept.astype(np.float64)  # 53 significant bits: exact
        value_bits = value.view(np.uint64) | odd.astype(np.uint64)
        out[big] = value_bits.view(np.float64)
    return np.where(negative, -out, out)


def default_policy(fmt: Format) -> CastPolicy:
    """The policy used when none is given: IEEE-style round-to-nearest-even; overflow to Inf/NaN
    where the format has them, saturation where it has neither; NaN into a NaN-less format and
    zero/negative into E8M0 raise ValueError."""
    has_nonfinite = isinstance(fmt, FloatFormat) and (fmt.has_inf or fmt.has_nan)
    return CastPolicy(overflow=Overflow.NONFINITE if has_nonfinite else Overflow.SATURATE)


def _check_policy(fmt: Format, policy: CastPolicy) -> None:
    if not isinstance(policy, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(policy).__name__}")
    if policy.overflow is not Overflow.SATURATE and not (fmt.has_inf or fmt.has_nan):
        raise ValueError(
            f"overflow={policy.overflow.value!r} needs a format with Inf or NaN; {fmt.name} has neither "
            f"(use overflow='saturate')"
        )


# ------------------------------------------------------------------------------------------------
# constants per (format, source dtype)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Src:
    uint: Any  # numpy unsigned dtype of the same width
    width: int
    mbits: int
    bias: int
    emin: int

    @property
    def inf_bits(self) -> int:
        return ((1 << (self.width - 1 - self.mbits)) - 1) << self.mbits

    @property
    def abs_mask(self) -> int:
        return (1 << (self.width - 1)) - 1


_F32 = _Src(np.uint32, 32, 23, 127, -126)
_F64 = _Src(np.uint64, 64, 52, 1023, -1022)


def _src_of(dtype: np.dtype) -> _Src:
    return _F32 if dtype == np.float32 else _F64


def refusal_error(fmt: Format, value: Any) -> ValueError:
    """The error for an input value that the policy refuses to encode (both paths raise it for
    the first such element in flat order): NaN into a NaN-less format, zero or a negative value
    into unsigned E8M0, under the policy's 'raise' rules."""
    v = float(value)
    if v != v:
        return ValueError(
            f"NaN cannot be encoded in {fmt.name} (it has no NaN); set nan_to_finite to one of "
            f"'zero', 'signed_max', 'negated_zero' in the CastPolicy, or remove the NaN"
        )
    if v == 0:
        return ValueError(
            f"zero cannot be encoded in {fmt.name} (it has no zero); set "
            f"unsigned_zero='nan' or 'smallest' in the CastPolicy"
        )
    return ValueError(
        f"negative value {v!r} cannot be encoded in unsigned {fmt.name}; "
        f"set unsigned_negative='nan' or 'magnitude' in the CastPolicy"
    )


def _nan_code(fmt: FloatFormat, payload: NanPayload, sign: np.ndarray, src_payload: np.ndarray,
              src: _Src) -> np.ndarray:
    """NaN codes (int64) for NaN inputs with the given sign bits (0/1) and source payloads, by the
    format's `nan_kind` (the -0 code; the unsigned all-ones code; the top code with the sign; or the
    IEEE block, where the payload rule picks the code)."""
    m = fmt.mantissa_bits
    kind = fmt.nan_kind
    sbit = np.int64(1) << fmt.sign_shift if fmt.signed else np.int64(0)
    if kind == "negative_zero":
        return np.full(sign.shape, 1 << fmt.sign_shift, np.int64)
    if kind == "unsigned_top":
        return np.full(sign.shape, fmt.magnitude_mask, np.int64)
    if payload is NanPayload.ALL_ONES_NEGATIVE:
        return np.full(sign.shape, fmt.magnitude_mask | int(sbit), np.int64)
    if kind == "top":
        return fmt.magnitude_mask | sign.astype(np.int64) * sbit
    # the IEEE block: the codes above +Inf
    inf_mag = fmt.inf_code
    quiet = 1 << (m - 1)
    mag: np.ndarray
    if payload is NanPayload.CANONICAL:
        mag = np.full(sign.shape, inf_mag | quiet, np.int64)
    elif payload is NanPayload.ALL_ONES:
        mag = np.full(sign.shape, inf_mag | ((1 << m) - 1), np.int64)
    else:
        top = (src_payload >> (src.mbits - m)).astype(np.int64)
        if payload is NanPayload.QUIET_TRUNCATE:
            mag = inf_mag | quiet | top
        else:  # TRUNCATE
            mag = inf_mag | np.where(top == 0, 1, top)
    return mag | sign.astype(np.int64) * sbit


def _floor_code_odd(n: np.ndarray, qe: np.ndarray, qe_min: int, fmt: FloatFormat) -> np.ndarray:
    """Whether the code of the rounded-down significand n (at quantum exponent qe) is odd: its last
    bit is the mantissa's, or with no mantissa bits the exponent field's (E8M0, P3109 K8P1)."""
    if fmt.mantissa_bits > 0:
        return (n & 1) == 1
    if fmt.subnormals:
        return ((qe - qe_min + n) & 1) == 1
    return ((qe - qe_min) & 1) == 1  # no zero: below 2^emin the code is 2^emin's


def _sr_up(r: np.ndarray, sh: np.ndarray, rand: np.ndarray, policy: CastPolicy) -> np.ndarray:
    """Stochastic rounding's decision for discarded bits r of a fraction r / 2^sh (int64 arrays,
    r < 2^54) and 32-bit random words `rand`, under the policy's random_bits and sr_fraction
    (`SrFraction`)."""
    if policy.sr_default:  # P(up) = floor(r · 2^32 / 2^sh) / 2^32
        sh = np.minimum(sh, 32 + 63)
        thr = np.where(sh <= 32, r << np.maximum(32 - sh, 0), r >> np.minimum(np.maximum(sh - 32, 0), 63))
        return rand.astype(np.int64) < thr
    bits = policy.sr_bits
    rule = policy.sr_fraction
    q = bits + 1 if rule is SrFraction.HALF else bits
    srb = (np.invert(rand.astype(np.uint32)) >> np.uint32(32 - bits)).astype(np.int64)
    k = np.maximum(sh - q, 0)
    kc = np.minimum(k, 60)  # r < 2^54: beyond, the remainder is r and below half
    t = np.where(sh <= q, r << np.maximum(q - sh, 0), r >> kc)
    if rule in (SrFraction.NEAREST_EVEN, SrFraction.NEAREST_ODD):
        rem = r & ((np.int64(1) << kc) - 1)
        half = np.where(kc > 0, np.int64(1) << np.maximum(kc - 1, 0), 0)
        tie_up = (t & 1) == (1 if rule is SrFraction.NEAREST_EVEN else 0)
        t = t + ((k > 0) & ((rem > half) | ((rem == half) & tie_up)))
    if rule is SrFraction.HALF:
        return t + 2 * srb + 1 >= (np.int64(1) << q)
    return t + srb >= (np.int64(1) << q)


# ------------------------------------------------------------------------------------------------
# the general path (every rounding mode)
# ------------------------------------------------------------------------------------------------


def _encode_float_general(
    x: np.ndarray, fmt: FloatFormat, policy: CastPolicy, rand: np.ndarray | None
) -> np.ndarray:
    """Codes (int64) of one chunk of float32/float64 values; see the module docstring."""
    src = _src_of(x.dtype)
    f32_sub_up = None
    if src is _F32 and not fmt.subnormals and policy.e8m0_float32_subnormals == "exponent_field":
        a32 = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
        f32_sub_up = (a32 > np.uint32(0x400000)) & (a32 < np.uint32(0x800000))
    if src is _F32 and fmt.emin < _F32.emin:
        # E8M0 reaches below float32's normal range: widen exactly so every input is normal.
        x = x.astype(np.float64)
        src = _F64
    bits = x.view(src.uint).astype(np.int64) if src is _F32 else x.view(np.int64)
    p = src.mbits
    sign = (bits >> (src.width - 1)) & 1 if src is _F32 else (bits >> 63) & 1
    a = bits & src.abs_mask
    is_nan = a > src.inf_bits
    is_inf = a == src.inf_bits
    E = a >> p
    sig = a & ((1 << p) - 1)
    sig = np.where(E > 0, sig | (1 << p), sig)
    e = np.where(E > 0, E, 1) - src.bias
    m = fmt.mantissa_bits
    emin = fmt.emin
    qe_min = emin - m
    qe = np.maximum(e, emin) - m
    shift = qe - (e - p)  # ≥ p - m ≥ 0
    shift_c = np.minimum(shift, p + 2)  # beyond p+2 the value is below a quarter quantum anyway
    n = sig >> shift_c
    r = sig & ((np.int64(1) << shift_c) - 1)
    half = (np.int64(1) << shift_c) >> 1
    rnd = policy.rounding
    rsign = sign if fmt.signed else np.zeros_like(sign)  # unsigned: |x| is what gets rounded
    if rnd is Rounding.NEAREST_EVEN:
        # ties go to the even *code*: its last bit is the mantissa's, or the exponent's when m = 0
        odd = _floor_code_odd(n, qe, qe_min, fmt)
        inc = (r > half) | ((r == half) & (half != 0) & odd)
    elif rnd is Rounding.NEAREST_AWAY:
        inc = (r >= half) & (r != 0)
    elif rnd is Rounding.TOWARD_ZERO:
        inc = np.zeros(a.shape, bool)
    elif rnd is Rounding.UP:
        inc = (r != 0) & (rsign == 0)
    elif rnd is Rounding.DOWN:
        inc = (r != 0) & (rsign == 1)
    elif rnd is Rounding.TO_ODD:
        inc = (r != 0) & ~_floor_code_odd(n, qe, qe_min, fmt)
    else:  # STOCHASTIC: P(up) = floor(r * 2^32 / 2^shift) / 2^32 by default (see `_sr_up`)
        assert rand is not None
        inc = _sr_up(r, shift, rand, policy)
    n = n + inc
    if fmt.subnormals:
        code = ((qe - qe_min) << m) + n
    else:
        n = np.maximum(n, 1 << m)  # no zero and no subnormals: below 2^emin gives 2^emin (E8M0)
        code = ((qe - qe_min) << m) + n - (1 << m)
    if f32_sub_up is not None:
        code = np.where(f32_sub_up, 1, code)
    maxc = fmt.max_magnitude_code
    over = code > maxc
    if over.any():
        toward_zero = (
            (rnd is Rounding.TOWARD_ZERO)
            | ((rnd is Rounding.UP) & (rsign == 1))
            | ((rnd is Rounding.DOWN) & (rsign == 0))
        )
        if policy.overflow is not Overflow.NONFINITE:  # saturate, saturate_propagate
            over_code = np.int64(maxc)
        elif fmt.has_inf:
            over_code = np.int64(maxc + 1)
        else:
            over_code = np.int64(-1)  # NaN, filled in below
        code = np.where(over, np.where(toward_zero, maxc, over_code), code)
    if fmt.subnormals and policy.subnormals is Subnormals.FLUSH:
        code = np.where((code > 0) & (code < (1 << m)), 0, code)
    if is_inf.any():
        if policy.overflow is Overflow.SATURATE:  # saturate_propagate keeps ±Inf
            code = np.where(is_inf, maxc, code)
        else:
            code = np.where(is_inf, maxc + 1 if fmt.has_inf else -1, code)
    code = _apply_sign_and_specials(code, sign, is_nan | (code == -1), a, fmt, policy, src, x)
    return code


def _apply_sign_and_specials(
    code: np.ndarray, sign: np.ndarray, nan_or_overflow_nan: np.ndarray, a: np.ndarray,
    fmt: FloatFormat, policy: CastPolicy, src: _Src, x: np.ndarray,
) -> np.ndarray:
    """Attach the sign, and place NaN codes, zero/negative rules for unsigned formats."""
    is_nan_in = a > src.inf_bits
    if fmt.signed:
        if not fmt.has_negative_zero:  # the -0 code is NaN: a negative underflow is +0
            code = np.where(code == 0, 0, code | (sign << fmt.sign_shift))
        else:
            code = code | (sign << fmt.sign_shift)
    else:
        zero = a == 0  # -0 is a zero, not a negative number
        neg_nonzero = (sign == 1) & ~is_nan_in & ~zero
        refused = np.zeros(a.shape, bool)
        if policy.unsigned_negative is UnsignedNegative.RAISE:
            refused |= neg_nonzero
        elif policy.unsigned_negative is UnsignedNegative.NAN:
            code = np.where(neg_nonzero, -1, code)
        if fmt.has_zero:
            pass  # ±0 is the zero code, whatever the policy says of formats without zero
        elif policy.unsigned_zero is UnsignedZero.RAISE:
            refused |= zero
        else:
            code = np.where(zero, -1 if policy.unsigned_zero is UnsignedZero.NAN else 0, code)
        if refused.any():
            raise refusal_error(fmt, x.reshape(-1)[np.flatnonzero(refused)[0]])
    nan_mask = nan_or_overflow_nan | (code == -1)
    if nan_mask.any():
        if fmt.has_nan:
            payload = a & ((1 << src.mbits) - 1)
            nan_codes = _nan_code(fmt, policy.nan_payload, sign, payload, src)
            code = np.where(nan_mask, nan_codes, code)
        else:
            code = _nan_to_finite(code, nan_mask, sign, fmt, policy)
    return code


def _nan_to_finite(code: np.ndarray, nan_mask: np.ndarray, sign: np.ndarray, fmt: Format,
                   policy: CastPolicy) -> np.ndarray:
    rule = policy.nan_to_finite
    if rule is NanToFinite.RAISE:
        raise refusal_error(fmt, float("nan"))
    if isinstance(fmt, IntFormat):
        mx = int(fmt.max)
        values = {
            NanToFinite.ZERO: np.zeros_like(sign),
            NanToFinite.SIGNED_MAX: np.where(sign == 1, -mx if fmt.signed else 0, mx),
            NanToFinite.NEGATED_ZERO: np.zeros_like(sign),
        }[rule]
        return np.where(nan_mask, values & ((1 << fmt.bits) - 1), code)
    sbit = 1 << fmt.sign_shift
    if rule is NanToFinite.ZERO:
        repl = np.zeros_like(sign)
    elif rule is NanToFinite.SIGNED_MAX:
        repl = fmt.max_magnitude_code | (sign * sbit)
    else:  # NEGATED_ZERO
        repl = (1 - sign) * sbit
    return np.where(nan_mask, repl, code)


# ------------------------------------------------------------------------------------------------
# the fast path: round-to-nearest-even, subnormals kept
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FastPlan:
    src: _Src
    shift0: int  # src.mbits - m
    add_const: int  # half-quantum - 1 minus the exponent rebias, modulo 2**width
    min_normal_bits: int  # bits of 2^emin in the source format
    magic: float  # 2^(qe_min + src.mbits): adding it rounds to the subnormal quantum
    magic_bits: int
    sub_branch: bool  # the target's subnormal range needs the magic-add branch
    no_overflow_below: int  # largest |bits| whose rounded code is ≤ max code (nearest-even)
    max_bits: int  # |bits| of the largest finite value
    sign_shift_down: int  # source sign bit → target sign bit


@lru_cache(maxsize=None)
def _fast_plan(fmt: FloatFormat, src_dtype: str) -> _FastPlan:
    src = _F32 if src_dtype == "float32" else _F64
    m = fmt.mantissa_bits
    shift0 = src.mbits - m
    rebias = (src.bias - fmt.bias) << src.mbits  # in source-bit units
    add_const = ((1 << (shift0 - 1)) - 1 - rebias) % (1 << src.width) if shift0 > 0 else (-rebias) % (1 << src.width)
    min_normal_bits = (fmt.emin + src.bias) << src.mbits
    qe_min = fmt.emin - m
    magic = 2.0 ** (qe_min + src.mbits)
    magic_bits = int(np.array(magic, dtype=src_dtype).view(src.uint))
    sub_branch = fmt.emin > src.emin
    # bits of the largest value that still rounds to max: max + half a quantum, exclusive when the
    # max code is odd (a tie rounds up, to even) and inclusive when it is even.
    maxc = fmt.max_magnitude_code
    max_bits = ((maxc >> m) - fmt.bias + src.bias) << src.mbits | ((maxc & ((1 << m) - 1)) << shift0)
    half = 1 << (shift0 - 1) if shift0 > 0 else 0
    no_over = max_bits + half - (1 if (maxc & 1) else 0) if shift0 > 0 else max_bits
    return _FastPlan(src, shift0, add_const, min_normal_bits, magic, magic_bits, sub_branch,
                     no_over, max_bits, src.width - 1 - fmt.sign_shift)


class _Scratch:
    """Per-thread scratch buffers for the fast path (bounded: a few CHUNK-sized arrays)."""

    def __init__(self, uint: Any, size: int) -> None:
        self.a = np.empty(size, uint)
        self.t = np.empty(size, uint)


def _encode_fast_chunk(x: np.ndarray, out: np.ndarray, fmt: FloatFormat, policy: CastPolicy,
                       plan: _FastPlan, scratch: _Scratch, rand: np.ndarray | None) -> None:
    """Encode one chunk into `out` (uint8/uint16) in place; exact.

    Nearest-even (rand is None): add half a quantum minus one plus the kept LSB, shift.
    Stochastic (rand = 32 random bits per element): add the top bits of ~rand, shift — the same
    decision as the general path's `rand < floor(frac·2^32)`. Elements outside the plain normal
    range (overflow, ±Inf, NaN; subnormal results under stochastic rounding) go through the general
    path; nearest-even subnormals use an exact float "magic number" addition.
    """
    src = plan.src
    k = x.shape[0]
    bits = x.view(src.uint)
    a = scratch.a[:k]
    t = scratch.t[:k]
    uint = src.uint
    np.bitwise_and(bits, uint(src.abs_mask), out=a)
    if rand is None:
        np.right_shift(a, uint(plan.shift0), out=t)
        np.bitwise_and(t, uint(1), out=t)
        np.add(t, a, out=t)
        np.add(t, uint(plan.add_const), out=t)
        hi_thr = plan.no_overflow_below
    else:
        # carry iff rem ≥ (u + 1)·2^(s-32) (s ≥ 32) or rem > u >> (32-s) (s < 32): add (~u) aligned
        # so its top bit sits just below the kept LSB — the general path's u < floor(frac·2^32)
        np.copyto(t, np.invert(rand), casting="safe")
        if plan.shift0 >= 32:
            np.left_shift(t, uint(plan.shift0 - 32), out=t)
        else:
            np.right_shift(t, uint(32 - plan.shift0), out=t)
        np.add(t, a, out=t)
        np.add(t, uint((plan.add_const - ((1 << (plan.shift0 - 1)) - 1)) % (1 << src.width)), out=t)
        hi_thr = plan.max_bits
    np.right_shift(t, uint(plan.shift0), out=t)
    lo_thr = plan.min_normal_bits if plan.sub_branch else 0
    amax = int(a.max())
    amin = int(a.min()) if lo_thr else 0
    magic_idx = None
    if rand is None and amin < lo_thr:
        magic_idx = np.flatnonzero(a < lo_thr)
        fa = a[magic_idx].view(x.dtype) + x.dtype.type(plan.magic)
        t[magic_idx] = fa.view(uint) - uint(plan.magic_bits)
    general_idx = None
    if amax > hi_thr or (rand is not None and amin < lo_thr):
        sel = a > hi_thr
        if rand is not None and amin < lo_thr:
            sel |= a < lo_thr
        general_idx = np.flatnonzero(sel)
    if fmt.signed:
        np.right_shift(bits, uint(plan.sign_shift_down), out=a)
        np.bitwise_and(a, uint(1 << fmt.sign_shift), out=a)
        if not fmt.has_negative_zero:
            np.putmask(a, t == 0, uint(0))  # no -0: negative underflow is +0
        np.bitwise_or(t, a, out=t)
    if general_idx is not None and general_idx.size:
        sub_rand = rand[general_idx] if rand is not None else None
        t[general_idx] = _encode_float_general(x[general_idx], fmt, policy, sub_rand).astype(uint)
    np.copyto(out, t, casting="unsafe")


# ------------------------------------------------------------------------------------------------
# integer grids
# ------------------------------------------------------------------------------------------------


def _sr_up_fraction(frac: np.ndarray, rand: np.ndarray, policy: CastPolicy) -> np.ndarray:
    """`_sr_up` for a float64 fraction 0 ≤ frac < 1 with at most 53 significant bits (an integer
    grid's): frac · 2^q and its rounding are exact in float64."""
    bits = policy.sr_bits
    rule = policy.sr_fraction
    q = bits + 1 if rule is SrFraction.HALF else bits
    scaled = np.ldexp(np.where(np.isfinite(frac), frac, 0.0), q)
    if rule is SrFraction.NEAREST_EVEN:
        t = np.rint(scaled)
    elif rule is SrFraction.NEAREST_ODD:
        fl = np.floor(scaled)
        d = scaled - fl
        t = np.where((d > 0.5) | ((d == 0.5) & (np.fmod(fl, 2) == 0)), fl + 1, fl)
    else:
        t = np.floor(scaled)
    srb = (np.invert(rand.astype(np.uint32)) >> np.uint32(32 - bits)).astype(np.float64)
    if rule is SrFraction.HALF:
        return t + 2 * srb + 1 >= 2.0**q
    return t + srb >= 2.0**q


def _encode_int(x: np.ndarray, fmt: IntFormat, policy: CastPolicy, rand: np.ndarray | None) -> np.ndarray:
    """Round to an integer with the policy's rounding mode, clamp to [min, max], two's complement.

    Like the float path, stochastic rounding rounds the magnitude: |x| goes up with probability
    floor(frac(|x|)·2^32)/2^32."""
    xf = x.astype(np.float64)
    nan = np.isnan(xf)
    neg = np.signbit(xf)
    with np.errstate(invalid="ignore"):
        mag = np.abs(xf)
        fl = np.floor(mag)
        frac = mag - fl
    rnd = policy.rounding
    if rnd is Rounding.NEAREST_EVEN:
        n_mag = np.rint(mag)
    elif rnd is Rounding.NEAREST_AWAY:
        n_mag = np.where(frac >= 0.5, fl + 1, fl)
    elif rnd is Rounding.TOWARD_ZERO:
        n_mag = fl
    elif rnd is Rounding.UP:
        n_mag = np.where(neg, fl, np.where(frac > 0, fl + 1, fl))
    elif rnd is Rounding.DOWN:
        n_mag = np.where(neg, np.where(frac > 0, fl + 1, fl), fl)
    elif rnd is Rounding.TO_ODD:
        with np.errstate(invalid="ignore"):
            n_mag = np.where((frac > 0) & (np.fmod(fl, 2) == 0), fl + 1, fl)
    elif policy.sr_default:
        assert rand is not None
        with np.errstate(invalid="ignore"):
            thr = np.floor(np.ldexp(frac, 32))
        n_mag = fl + (rand.astype(np.float64) < thr)
    else:
        assert rand is not None
        with np.errstate(invalid="ignore"):
            n_mag = fl + _sr_up_fraction(frac, rand, policy)
    with np.errstate(invalid="ignore"):
        n = np.clip(np.where(neg, -n_mag, n_mag), fmt.min, fmt.max)
    n = np.where(nan, 0, n).astype(np.int64)
    code = n & ((1 << fmt.bits) - 1)
    if nan.any():
        code = _nan_to_finite(code, nan, neg.astype(np.int64), fmt, policy)
    return code


# ------------------------------------------------------------------------------------------------
# public API
# ------------------------------------------------------------------------------------------------


def _resolve(fmt: str | Format, policy: CastPolicy | None) -> tuple[Format, CastPolicy]:
    f = get_format(fmt)
    if policy is None:
        policy = default_policy(f)
    elif not isinstance(policy, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(policy).__name__}")
    _check_policy(f, policy)
    return f, policy


def _encode_bf16_chunk(x: np.ndarray, out: np.ndarray, policy: CastPolicy, scratch: _Scratch) -> None:
    """float32 → BF16 nearest-even with overflow to Inf: round the whole bit pattern (the carry into
    the exponent is the IEEE carry; +max rounds up to +Inf) and keep the top half; NaNs redone by
    the general path for their payload rule."""
    k = x.shape[0]
    bits = x.view(np.uint32)
    t = scratch.t[:k]
    np.right_shift(bits, np.uint32(16), out=t)
    np.bitwise_and(t, np.uint32(1), out=t)
    np.add(t, bits, out=t)
    np.add(t, np.uint32(0x7FFF), out=t)
    np.right_shift(t, np.uint32(16), out=out, casting="unsafe")
    if np.isnan(np.maximum.reduce(x)):  # maximum propagates NaN; one cheap SIMD pass
        idx = np.flatnonzero(np.isnan(x))
        if idx.size:
            out[idx] = _encode_float_general(x[idx], BF16, policy, None).astype(np.uint16)


def _chunk_seeds(rng: np.random.Generator, n_chunks: int) -> np.ndarray:
    """The Philox key that `encode(..., rng=rng)` uses, as a one-element uint64 array (one draw
    from `rng` whatever `n_chunks` is: the stream no longer depends on chunking)."""
    return np.array([stochastic_key(rng)], dtype=np.uint64)


def _chunk_random_u32(key: int, n: int) -> np.ndarray:
    """The 32 random bits of elements 0..n-1 under Philox `key` (see `formats.philox`)."""
    return random_u32(int(key), 0, n)


def encode(x: Any, fmt: str | Format, policy: CastPolicy | None = None, *,
           rng: np.random.Generator | None = None, seed: int | None = None) -> np.ndarray:
    """Codes of `x` in `fmt` under `policy` (default: `default_policy(fmt)`).

    Returns uint8 codes for formats up to 8 bits (FP4/FP6: one code per byte, in the low bits),
    uint16 up to 16 bits, uint32 for FP32; same shape as `x`. Exact for float32 and float64 input.
    Stochastic rounding needs `rng` (a numpy Generator: one 64-bit key is drawn from it per call) or
    an integer `seed` in [0, 2^64) (the key itself); element i of the flattened input gets the 32
    random bits of the Philox-4x32-10 stream at index i (`formats.philox`), so the codes are
    reproducible and independent of threads, chunking and the code path. Raises ValueError for the
    first input value the policy refuses (NaN into a NaN-less format, zero/negative into E8M0 under
    a 'raise' rule).
    """
    f, pol = _resolve(fmt, policy)
    arr = as_float_array(x)
    stochastic = pol.rounding is Rounding.STOCHASTIC
    if seed is not None:
        check_seed(seed)
    key = stochastic_key(rng, seed) if stochastic else None
    out = np.empty(arr.shape, dtype=f.code_dtype)
    flat_in = np.ascontiguousarray(arr).reshape(-1)
    flat_out = out.reshape(-1)
    total = flat_in.shape[0]
    if total == 0:
        return out
    kernels = _compiled_for(total)
    if kernels is not None:
        _encode_compiled(kernels, flat_in, flat_out, f, pol, key)
    else:
        _encode_numpy(flat_in, flat_out, f, pol, key)
    return out


def _encode_compiled(kernels: ModuleType, flat_in: np.ndarray, flat_out: np.ndarray, f: Format,
                     pol: CastPolicy, key: int | None) -> None:
    """The compiled path: one kernel call per thread range; float64 → float32 inside the kernel."""
    kernel = kernels.encode_kernel(f, pol, flat_in.dtype)
    k0, k1 = (key & 0xFFFFFFFF, key >> 32) if key is not None else (0, 0)
    ranges = _thread_ranges(flat_in.shape[0])
    if len(ranges) == 1:
        refused = [kernel(flat_in, flat_out, 0, flat_in.shape[0], k0, k1)]
    else:
        refused = list(_pool().map(lambda r: kernel(flat_in, flat_out, r[0], r[1], k0, k1), ranges))
    first = next((i for i in refused if i >= 0), -1)
    if first >= 0:
        value = flat_in[first]
        if pol.float64_via_float32 and flat_in.dtype == np.float64:
            with np.errstate(over="ignore"):
                value = np.float32(value)
        raise refusal_error(f, value)


def _encode_numpy(flat_in: np.ndarray, flat_out: np.ndarray, f: Format, pol: CastPolicy,
                  key: int | None) -> None:
    """The numpy reference path, chunk by chunk."""
    if pol.float64_via_float32 and flat_in.dtype == np.float64:
        with np.errstate(over="ignore"):
            flat_in = flat_in.astype(np.float32)
    total = flat_in.shape[0]
    n_chunks = (total + CHUNK - 1) // CHUNK
    numpy_fast = (
        isinstance(f, FloatFormat)
        and (pol.rounding is Rounding.NEAREST_EVEN or (pol.rounding is Rounding.STOCHASTIC and pol.sr_default))
        and pol.subnormals is Subnormals.KEEP
        and f.subnormals
        and f.signed
        and 0 < f.mantissa_bits < _src_of(flat_in.dtype).mbits
    )
    bf16_fast = (
        f is BF16 and flat_in.dtype == np.float32 and pol.rounding is Rounding.NEAREST_EVEN
        and pol.subnormals is Subnormals.KEEP and pol.overflow is Overflow.NONFINITE
    )

    def run(chunk_ids: range) -> None:
        scratch = _Scratch(_src_of(flat_in.dtype).uint, min(CHUNK, total)) if (numpy_fast or bf16_fast) else None
        for ci in chunk_ids:
            lo, hi = ci * CHUNK, min(total, (ci + 1) * CHUNK)
            xc = flat_in[lo:hi]
            rand = random_u32(key, lo, hi) if key is not None else None
            if bf16_fast:
                assert scratch is not None
                _encode_bf16_chunk(xc, flat_out[lo:hi], pol, scratch)
                continue
            if numpy_fast:
                assert scratch is not None and isinstance(f, FloatFormat)
                plan = _fast_plan(f, "float32" if xc.itemsize == 4 else "float64")
                _encode_fast_chunk(xc, flat_out[lo:hi], f, pol, plan, scratch, rand)
                continue
            if isinstance(f, IntFormat):
                codes = _encode_int(xc, f, pol, rand)
            else:
                codes = _encode_float_general(xc, f, pol, rand)
            flat_out[lo:hi] = codes.astype(f.code_dtype)

    if total >= _PARALLEL_MIN and _THREADS > 1:
        per = (n_chunks + _THREADS - 1) // _THREADS
        parts = [range(i * per, min(n_chunks, (i + 1) * per)) for i in range(_THREADS)]
        list(_pool().map(run, parts))
    else:
        run(range(n_chunks))


# ------------------------------------------------------------------------------------------------
# decode
# ------------------------------------------------------------------------------------------------

NAN_BITS = ("ml_dtypes", "torch", "canonical")


def _nan_float_bits(fmt: FloatFormat, code: int, nan_bits: str) -> int:
    """float32 bit pattern that a backend produces when it decodes NaN code `code`: the rule of
    the (convention, format) cell of the conventions table (`formats.conventions`
    `decode_nan_rule`); 'canonical' is 0x7FC00000 with the code's sign.

    canonical: the quiet NaN with the code's sign. payload: the code's payload shifted left, not
    quieted (ml_dtypes BF16/FP16, torch BF16). quiet_payload: quiet bit set, payload shifted
    (torch FP16, E5M2, E4M3FN; FP16 in the vectorised lanes only: elements in the scalar tail of
    torch's loop give 0x7FFFFFFF instead). snan1: 0x7F800001 (torch's fnuz types and E8M0).
    """
    from .conventions import decode_nan_rule

    m = fmt.mantissa_bits
    sign = (code >> fmt.sign_shift) & 1 if fmt.signed else 0
    payload = code & ((1 << m) - 1)
    s31 = sign << 31
    rule = "canonical" if nan_bits == "canonical" else decode_nan_rule(nan_bits, fmt)
    if rule == "payload":
        return s31 | 0x7F800000 | (payload << (23 - m))
    if rule == "quiet_payload":
        return s31 | 0x7FC00000 | (payload << (23 - m))
    if rule == "snan1":
        return 0x7F800001
    return s31 | 0x7FC00000


@lru_cache(maxsize=None)
def _decode_table(fmt: Format, nan_bits: str) -> np.ndarray:
    """float32 value of every code (exact), as a lookup table."""
    codes = np.arange(fmt.n_codes, dtype=np.int64)
    if isinstance(fmt, IntFormat):
        vals = np.where(codes >= (fmt.n_codes >> 1), codes - fmt.n_codes, codes) if fmt.signed else codes
        return vals.astype(np.float32)
    m = fmt.mantissa_bits
    sign = (codes >> fmt.sign_shift) & 1 if fmt.signed else np.zeros_like(codes)
    mag = codes & fmt.magnitude_mask
    E = mag >> m
    M = mag & ((1 << m) - 1)
    if fmt.subnormals:
        sig = np.where(E > 0, M + (1 << m), M)
        exp = np.maximum(E, 1) - fmt.bias - m
    else:
        sig = M + (1 << m)
        exp = E - fmt.bias - m
    vals = np.ldexp(sig.astype(np.float64), exp.astype(np.int32))
    vals = np.where(sign == 1, -vals, vals)
    with np.errstate(over="ignore"):  # special codes overflow here; they are set below
        table = vals.astype(np.float32)
    bits = table.view(np.uint32)
    for c in codes[classify_codes(fmt) == "nan"]:
        bits[c] = _nan_float_bits(fmt, int(c), nan_bits)
    if fmt.has_inf:
        inf_mag = fmt.inf_code
        table[inf_mag] = np.inf
        if fmt.signed:
            table[inf_mag | (1 << fmt.sign_shift)] = -np.inf
    table.setflags(write=False)
    return table


def classify_codes(fmt: str | Format, codes: np.ndarray | None = None) -> np.ndarray:
    """Class of each code: 'zero', 'subnormal', 'normal', 'inf' or 'nan' (all codes by default)."""
    fmt = get_format(fmt)
    c = (np.arange(fmt.n_codes, dtype=np.int64) if codes is None
         else _check_codes(_code_dtype_checked(codes), fmt).astype(np.int64))
    if isinstance(fmt, IntFormat):
        return np.where(c == 0, "zero", "normal").astype("<U9")
    m = fmt.mantissa_bits
    mag = c & fmt.magnitude_mask
    E = mag >> m
    out = np.full(c.shape, "normal", dtype="<U9")
    if fmt.subnormals:
        out[(E == 0) & (mag != 0)] = "subnormal"
        out[mag == 0] = "zero"
    maxc = fmt.max_magnitude_code
    if fmt.has_inf:
        out[mag == maxc + 1] = "inf"
    out[mag > maxc + int(fmt.has_inf)] = "nan"  # the NaN codes at the top of each sign
    if fmt.nan_at_negative_zero:
        out[c == (1 << fmt.sign_shift)] = "nan"
    return out


def _code_dtype_checked(codes: Any) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.dtype.kind not in "ui":
        raise TypeError(f"codes must be an integer array, got dtype {arr.dtype}")
    return arr


def _code_range_error(fmt: Format, lo: int, hi: int) -> ValueError | None:
    """The error for codes spanning lo..hi, or None when all are valid."""
    if lo < 0 or hi >= fmt.n_codes:
        bad = lo if lo < 0 else hi
        return ValueError(
            f"code {bad} is out of range for {fmt.name}: codes are 0..{fmt.n_codes - 1} "
            f"({fmt.bits} bits)"
        )
    return None


def _check_codes(codes: Any, fmt: Format) -> np.ndarray:
    arr = _code_dtype_checked(codes)
    if arr.size:
        error = _code_range_error(fmt, int(arr.min()), int(arr.max()))
        if error is not None:
            raise error
    return arr


def decode(codes: Any, fmt: str | Format, *, nan_bits: str = "ml_dtypes") -> np.ndarray:
    """float32 values of `codes` (exact: every format here up to FP32 fits in float32).

    `nan_bits` picks the float32 bit pattern of NaN results, which backends disagree on:
    'ml_dtypes' (default), 'torch' or 'canonical' (see `_nan_float_bits`). Raises ValueError for
    codes out of range, TypeError for non-integer codes.
    """
    f = get_format(fmt)
    if nan_bits not in NAN_BITS:
        raise ValueError(f"nan_bits={nan_bits!r} is not one of {', '.join(NAN_BITS)}")
    arr = _code_dtype_checked(codes)
    if isinstance(f, FloatFormat) and f.bits == 32:
        arr = _check_codes(arr, f)
        out32 = arr.astype(np.uint32).view(np.float32).copy()
        if nan_bits != "ml_dtypes":
            nan = np.isnan(out32)
            if nan.any():
                sign = (arr[nan].astype(np.int64) >> 31) & 1
                repl = np.uint32(0x7FC00000) | (sign.astype(np.uint32) << np.uint32(31))
                out32.view(np.uint32)[nan] = repl
        return out32
    table = _decode_table(f, nan_bits)
    kernels = _compiled_for(arr.size) if arr.dtype != np.uint64 else None
    if kernels is not None:
        return _decode_compiled(kernels, arr, f, table)
    arr = _check_codes(arr, f)
    if arr.dtype not in (np.uint8, np.uint16):
        arr = arr.astype(np.intp)
    out = np.empty(arr.shape, np.float32)
    flat = arr.reshape(-1)
    fout = out.reshape(-1)
    total = flat.shape[0]
    if total >= _PARALLEL_MIN and _THREADS > 1:
        step = (total + _THREADS - 1) // _THREADS

        def part(i: int) -> None:
            lo, hi = i * step, min(total, (i + 1) * step)
            np.take(table, flat[lo:hi], out=fout[lo:hi], mode="clip")  # range checked above

        list(_pool().map(part, range(_THREADS)))
    else:
        np.take(table, flat, out=fout, mode="clip")  # unbuffered; the range was checked above
    return out


_SHIFT_TABLES: dict[tuple[str, int], bool] = {}


def _table_is_shift(f: Format, table: np.ndarray) -> bool:
    """Whether the value table is exactly code << (32 - bits) as float32 bits (BF16's is)."""
    key = (f.name, id(table))
    if key not in _SHIFT_TABLES:
        codes = np.arange(f.n_codes, dtype=np.uint32)
        _SHIFT_TABLES[key] = bool(np.array_equal(table.view(np.uint32), codes << np.uint32(32 - f.bits)))
    return _SHIFT_TABLES[key]


def _decode_compiled(kernels: ModuleType, arr: np.ndarray, f: Format, table: np.ndarray) -> np.ndarray:
    """Table lookup in one pass; the range check is fused into it unless every value of the code
    dtype is a valid code (uint8 codes of an 8-bit format, uint16 codes of a 16-bit one)."""
    out = np.empty(arr.shape, np.float32)
    if arr.size == 0:
        return out
    flat = np.ascontiguousarray(arr).reshape(-1)
    fout = out.reshape(-1)
    ranges = _thread_ranges(flat.shape[0])
    all_valid = (flat.dtype == np.uint8 and f.n_codes == 256) or (flat.dtype == np.uint16 and f.n_codes == 65536)
    shift = 32 - f.bits if all_valid and _table_is_shift(f, table) else 0
    out_bits = fout.view(np.uint32)

    def part(r: tuple[int, int]) -> tuple[int, int]:
        if shift:
            kernels.decode_shifted(flat, out_bits, r[0], r[1], np.uint32(shift))
            return 0, 0
        if all_valid:
            kernels.decode_all_valid(flat, table, fout, r[0], r[1])
            return 0, 0
        lo, hi = kernels.decode_checked(flat, table, fout, r[0], r[1])
        return int(lo), int(hi)

    spans = [part(ranges[0])] if len(ranges) == 1 else list(_pool().map(part, ranges))
    error = _code_range_error(f, min(s[0] for s in spans), max(s[1] for s in spans))
    if error is not None:
        raise error
    return out


def quantize(x: Any, fmt: str | Format, policy: CastPolicy | None = None, *,
             rng: np.random.Generator | None = None, seed: int | None = None) -> np.ndarray:
    """decode(encode(x)): the values `x` takes in `fmt` under `policy` (float32 array)."""
    return decode(encode(x, fmt, policy, rng=rng, seed=seed), fmt)


def pack_fp4(codes: Any) -> np.ndarray:
    """Two 4-bit codes per byte along the last axis: the even element in the low nibble.

    The last axis must have even length; codes must be 0..15."""
    arr = np.asarray(codes)
    if arr.dtype.kind not in "ui":
        raise TypeError(f"FP4 codes must be integers, got dtype {arr.dtype}")
    if arr.ndim == 0 or arr.shape[-1] % 2:
        raise ValueError(f"pack_fp4 needs an even-length last axis, got shape {arr.shape}")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 15):
        raise ValueError("FP4 codes must be in 0..15")
    a = arr.astype(np.uint8)
    return (a[..., 0::2] | (a[..., 1::2] << np.uint8(4))).astype(np.uint8)


def unpack_fp4(packed: Any) -> np.ndarray:
    """Inverse of pack_fp4: the last axis doubles; low nibble first."""
    arr = np.asarray(packed)
    if arr.dtype != np.uint8:
        raise TypeError(f"packed FP4 must be uint8, got dtype {arr.dtype}")
    out = np.empty(arr.shape[:-1] + (arr.shape[-1] * 2,), np.uint8) if arr.ndim else None
    if out is None:
        raise ValueError("unpack_fp4 needs at least one axis")
    out[..., 0::2] = arr & np.uint8(0x0F)
    out[..., 1::2] = arr >> np.uint8(4)
    return out
