"""Format descriptions as data: one frozen dataclass per bit layout, one registry keyed by name.

A `FloatFormat` says how a code's bits map to a real value; it holds no rounding behaviour (that is
`CastPolicy`'s job). Values follow the usual binary floating-point rule

    normal:    (-1)^s × 2^(E - bias) × (1 + M / 2^m)      for 1 ≤ E (or 0 ≤ E when there are no subnormals)
    subnormal: (-1)^s × 2^(1 - bias) × (M / 2^m)           for E = 0

Special values are described by **capabilities**, not by a closed list of layouts:

- `has_inf`: ±Inf is the magnitude code just above the largest finite one;
- `nan_codes`: how many magnitude codes at the top of each sign are NaN (IEEE 754: every code of the
  all-ones exponent but Inf, 2^m - 1; OCP E4M3FN and E8M0: the one all-ones code; none: 0);
- `nan_at_negative_zero`: the code of -0 (sign bit alone) is NaN, so there is no -0 (the "fnuz"
  formats, IEEE P3109's signed formats);
- `subnormals`: E = 0 is a subnormal binade holding zero (False: an ordinary binade, no zero: E8M0);
- `signed`: a sign bit (unsigned formats: E8M0, E5M3FNU, P3109's unsigned formats).

Everything else is derived: the largest finite code is the magnitude mask less the NaN and Inf codes
above it; a format whose every code is finite has a *saturating* domain (`saturating`: a cast has no
code for overflow or NaN). The old one-word summary `nan_encoding` ("ieee", "fn", "fnuz", "e8m0",
"none"; "fn+inf" / "fnuz+inf" for P3109's extended formats) is derived from the capabilities and is
still accepted as a constructor shorthand. Sources: IEEE 754-2019 §3; OCP 8-bit Floating Point
Specification (OFP8) rev 1.0; OCP Microscaling Formats (MX) v1.0 §5; IEEE P3109 interim report v3
(as gfloat 0.5 models it: `format_info_p3109`); ml_dtypes 0.7's types.
`IntFormat` describes the two's-complement (or unsigned) integer grids INT8 … UINT1 with the same
properties. Each record also carries `dtype_name`, the name numpy/ml_dtypes and torch give the same
layout (`float8_e4m3fn`, `bfloat16` …), accepted by `get_format`; which backend provides which cast
is the conventions table's data (`formats.conventions.CONVENTION_ROWS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Union

#: the legacy one-word names of special-value layouts (constructor shorthand; derived otherwise)
NanEncoding = Literal["ieee", "fn", "fnuz", "e8m0", "none"]
_LEGACY_NAN = ("ieee", "fn", "fnuz", "e8m0", "none")

#: where a NaN input's code comes from (`nan_kind`): no NaN; the -0 code; the unsigned top code;
#: the top magnitude code with the input's sign; a block of NaN codes (IEEE: payload rules apply)
NanKind = Literal["none", "negative_zero", "unsigned_top", "top", "block"]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point bit layout (sign, exponent, mantissa) and its special codes."""

    name: str  # canonical name, e.g. "E4M3FN"
    exponent_bits: int  # width of the exponent field
    mantissa_bits: int  # width of the stored mantissa field (no implicit bit)
    bias: int  # exponent bias: value exponent = E - bias
    signed: bool = True  # has a sign bit (E8M0 does not)
    has_inf: bool = False  # ±Inf: the magnitude code just above the largest finite one
    # legacy shorthand for the capabilities below ("ieee", "fn", "fnuz", "e8m0", "none"); after
    # construction it holds the derived summary (see the module docstring)
    nan_encoding: str | None = None
    subnormals: bool = True  # E = 0 is a subnormal binade; False: E = 0 is an ordinary binade (E8M0)
    aliases: tuple[str, ...] = field(default=(), compare=False)  # other names accepted by get_format
    description: str = field(default="", compare=False)  # one line for tables and the app
    # the dtype's name in the numpy ecosystem: the attribute of ml_dtypes / numpy and of torch
    # (where they have the type) that holds this layout; also accepted by get_format
    dtype_name: str = field(default="", compare=False)
    nan_codes: int | None = None  # magnitude codes at the top of each sign that are NaN
    nan_at_negative_zero: bool | None = None  # the -0 code is NaN (no -0)
    family: str = field(default="", compare=False)  # "ocp", "ieee", "ml_dtypes", "p3109" … (lists)

    def __post_init__(self) -> None:
        for name in ("exponent_bits", "mantissa_bits"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{self.name}: {name}={v!r} must be a non-negative integer")
        codes, negzero, legacy = self.nan_codes, self.nan_at_negative_zero, self.nan_encoding
        if codes is None and negzero is None and legacy is not None:
            if legacy not in _LEGACY_NAN:  # the shorthand names a legacy layout
                raise ValueError(f"{self.name}: nan_encoding={legacy!r} is not one of "
                                 f"{', '.join(_LEGACY_NAN)} (or give nan_codes / nan_at_negative_zero)")
            if legacy == "ieee" and not self.has_inf:
                raise ValueError(f"{self.name}: nan_encoding='ieee' needs has_inf=True (the all-ones "
                                 f"exponent holds ±Inf and the NaNs)")
            codes, negzero = {"ieee": ((1 << self.mantissa_bits) - 1, False), "fn": (1, False),
                              "e8m0": (1, False), "fnuz": (0, True), "none": (0, False)}[legacy]
        codes = 0 if codes is None else codes
        if isinstance(codes, bool) or not isinstance(codes, int) or codes < 0:
            raise ValueError(f"{self.name}: nan_codes={codes!r} must be a non-negative integer")
        negzero = bool(negzero)
        if codes + int(self.has_inf) >= 1 << (self.exponent_bits + self.mantissa_bits):
            raise ValueError(f"{self.name}: {codes} NaN codes and {int(self.has_inf)} Inf leave no finite code")
        if negzero and not (self.signed and self.subnormals):
            raise ValueError(f"{self.name}: nan_at_negative_zero needs a signed format with a zero")
        object.__setattr__(self, "nan_codes", codes)
        object.__setattr__(self, "nan_at_negative_zero", negzero)
        object.__setattr__(self, "nan_encoding", self._summary())

    def _summary(self) -> str:
        """The one-word layout name of the capabilities (the legacy `nan_encoding` values)."""
        m = self.mantissa_bits
        codes, negzero = int(self.nan_codes or 0), bool(self.nan_at_negative_zero)
        if self.has_inf and codes == (1 << m) - 1 and codes > 0 and not negzero:
            return "ieee"
        if negzero and codes == 0:
            base = "fnuz"
        elif codes == 1 and not negzero:
            base = "fn" if self.subnormals else "e8m0"
        elif codes == 0 and not negzero:
            base = "none"
        else:
            base = "custom"
        return base + "+inf" if self.has_inf and base != "none" else (
            "inf" if self.has_inf else base)

    # ---- layout --------------------------------------------------------------------------------
    @property
    def bits(self) -> int:
        """Total width in bits."""
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def n_codes(self) -> int:
        """Number of distinct bit patterns, 2**bits."""
        return 1 << self.bits

    @property
    def sign_shift(self) -> int:
        """Position of the sign bit (== bits - 1 when signed)."""
        return self.exponent_bits + self.mantissa_bits

    @property
    def magnitude_mask(self) -> int:
        """Mask of the exponent and mantissa fields."""
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1

    # ---- special values (derived from the capabilities) ----------------------------------------
    @property
    def has_nan(self) -> bool:
        return bool(self.nan_codes) or bool(self.nan_at_negative_zero)

    @property
    def has_zero(self) -> bool:
        """E8M0 (no subnormal binade) has no zero."""
        return self.subnormals

    @property
    def has_negative_zero(self) -> bool:
        return self.signed and self.subnormals and not self.nan_at_negative_zero

    @property
    def saturating(self) -> bool:
        """Every code is finite (no Inf, no NaN): a cast can only saturate, and NaN has no code."""
        return not (self.has_inf or self.has_nan)

    @property
    def nan_kind(self) -> NanKind:
        """Which code a NaN input gets: 'none' (no NaN), 'negative_zero' (the -0 code, sign bit
        alone), 'unsigned_top' (the all-ones code of an unsigned format), 'top' (the top magnitude
        code, with the input's sign), 'block' (IEEE: 2^m - 1 NaN codes above Inf; payload rules
        choose one)."""
        if not self.has_nan:
            return "none"
        if not self.nan_codes:
            return "negative_zero"
        if not self.signed:
            return "unsigned_top"
        if self.has_inf and self.nan_codes == (1 << self.mantissa_bits) - 1:
            return "block"
        return "top"

    @property
    def inf_code(self) -> int:
        """Magnitude code of +Inf (ValueError without Inf)."""
        if not self.has_inf:
            raise ValueError(f"{self.name} has no Inf")
        return self.max_magnitude_code + 1

    def is_nan_code(self, code: int) -> bool:
        """Whether `code` decodes to NaN."""
        mag = code & self.magnitude_mask
        if self.nan_at_negative_zero and code == 1 << self.sign_shift:
            return True
        return mag > self.max_magnitude_code + int(self.has_inf)

    # ---- exponents -----------------------------------------------------------------------------
    @property
    def emin(self) -> int:
        """Exponent of the smallest normal value (1 - bias; -bias when E = 0 is normal)."""
        return (1 if self.subnormals else 0) - self.bias

    @property
    def max_magnitude_code(self) -> int:
        """Code (without sign) of the largest finite value: below the NaN and Inf codes."""
        return self.magnitude_mask - int(self.nan_codes or 0) - int(self.has_inf)

    @property
    def emax(self) -> int:
        """Exponent of the largest finite value."""
        return (self.max_magnitude_code >> self.mantissa_bits) - self.bias

    # ---- numpy.finfo-style values (Python floats, exact) ---------------------------------------
    @property
    def max(self) -> float:
        """Largest finite value."""
        m = self.mantissa_bits
        frac = self.max_magnitude_code & ((1 << m) - 1)
        if self.subnormals and self.max_magnitude_code >> m == 0:  # every code subnormal
            return frac / (1 << m) * 2.0**self.emin
        return (1 + frac / (1 << m)) * 2.0**self.emax

    @property
    def smallest_normal(self) -> float:
        """Smallest positive normal value, 2**emin."""
        return 2.0**self.emin

    @property
    def smallest_subnormal(self) -> float:
        """Smallest positive value: 2**(emin - m) with subnormals, else 2**emin."""
        return 2.0 ** (self.emin - self.mantissa_bits) if self.subnormals else 2.0**self.emin

    @property
    def eps(self) -> float:
        """Gap between 1 and the next value, 2**-m (machine epsilon as numpy.finfo defines it)."""
        return 2.0**-self.mantissa_bits

    @property
    def min(self) -> float:
        """Most negative finite value (smallest positive value when unsigned)."""
        return -self.max if self.signed else self.smallest_subnormal

    @property
    def code_dtype(self) -> str:
        """numpy dtype name of one code: uint8 up to 8 bits, uint16 up to 16, else uint32."""
        return "uint8" if self.bits <= 8 else "uint16" if self.bits <= 16 else "uint32"

    @property
    def kind(self) -> str:
        return "float"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class IntFormat:
    """A two's-complement (or unsigned) integer grid: codes are the integers' bit patterns."""

    name: str
    int_bits: int
    signed: bool = True
    aliases: tuple[str, ...] = field(default=(), compare=False)
    description: str = field(default="", compare=False)
    dtype_name: str = field(default="", compare=False)  # as FloatFormat.dtype_name (int8, int4)
    family: str = field(default="", compare=False)  # as FloatFormat.family

    def __post_init__(self) -> None:
        if isinstance(self.int_bits, bool) or not isinstance(self.int_bits, int) or not 1 <= self.int_bits <= 16:
            raise ValueError(f"{self.name}: int_bits={self.int_bits!r} must be an integer in 1..16")

    @property
    def bits(self) -> int:
        return self.int_bits

    @property
    def n_codes(self) -> int:
        return 1 << self.int_bits

    @property
    def max(self) -> float:
        return float((1 << (self.int_bits - 1)) - 1 if self.signed else (1 << self.int_bits) - 1)

    @property
    def min(self) -> float:
        return float(-(1 << (self.int_bits - 1)) if self.signed else 0)

    @property
    def smallest_normal(self) -> float:
        return 1.0

    @property
    def smallest_subnormal(self) -> float:
        return 1.0

    @property
    def eps(self) -> float:
        return 1.0

    @property
    def emax(self) -> int:
        return self.int_bits - 1 - int(self.signed)

    @property
    def emin(self) -> int:
        return 0

    @property
    def has_nan(self) -> bool:
        return False

    @property
    def has_inf(self) -> bool:
        return False

    @property
    def has_zero(self) -> bool:
        return True

    @property
    def has_negative_zero(self) -> bool:
        return False

    @property
    def saturating(self) -> bool:
        return True

    @property
    def nan_kind(self) -> NanKind:
        return "none"

    @property
    def code_dtype(self) -> str:
        return "uint8" if self.bits <= 8 else "uint16"

    @property
    def kind(self) -> str:
        return "int"

    def __str__(self) -> str:
        return self.name


Format = Union[FloatFormat, IntFormat]


def _bias(exponent_bits: int) -> int:
    """IEEE-style bias 2**(e-1) - 1."""
    return 2 ** (exponent_bits - 1) - 1


FP32 = FloatFormat(
    "FP32", 8, 23, _bias(8), has_inf=True, nan_encoding="ieee", family="ieee",
    aliases=("f32", "single", "binary32"), description="IEEE 754 binary32", dtype_name="float32",
)
FP16 = FloatFormat(
    "FP16", 5, 10, _bias(5), has_inf=True, nan_encoding="ieee", family="ieee",
    aliases=("f16", "half", "binary16"), description="IEEE 754 binary16", dtype_name="float16",
)
BF16 = FloatFormat(
    "BF16", 8, 7, _bias(8), has_inf=True, nan_encoding="ieee", family="ieee",
    aliases=("bf16",), description="bfloat16: FP32's range, 8 significant bits",
    dtype_name="bfloat16",
)
E5M2 = FloatFormat(
    "E5M2", 5, 2, _bias(5), has_inf=True, nan_encoding="ieee", family="ocp",
    aliases=("fp8_e5m2", "e5m2"), description="OCP FP8 E5M2 (IEEE-like: Inf and NaN)",
    dtype_name="float8_e5m2",
)
E4M3FN = FloatFormat(
    "E4M3FN", 4, 3, _bias(4), has_inf=False, nan_encoding="fn", family="ocp",
    aliases=("fp8_e4m3", "e4m3", "fp8_e4m3fn", "e4m3fn"),
    description="OCP FP8 E4M3: finite only, NaN = S.1111.111, max 448 (the short name E4M3 means this "
                "one; ml_dtypes' IEEE-style float8_e4m3 is E4M3IEEE)", dtype_name="float8_e4m3fn",
)
E4M3FNUZ = FloatFormat(
    "E4M3FNUZ", 4, 3, _bias(4) + 1, has_inf=False, nan_encoding="fnuz", family="fnuz",
    aliases=("fp8_e4m3fnuz",),
    description="E4M3, bias 8, NaN = 0x80 (no -0), max 240", dtype_name="float8_e4m3fnuz",
)
E5M2FNUZ = FloatFormat(
    "E5M2FNUZ", 5, 2, _bias(5) + 1, has_inf=False, nan_encoding="fnuz", family="fnuz",
    aliases=("fp8_e5m2fnuz",),
    description="E5M2, bias 16, NaN = 0x80 (no -0), max 57344", dtype_name="float8_e5m2fnuz",
)
E3M2 = FloatFormat(
    "E3M2", 3, 2, _bias(3), aliases=("fp6_e3m2", "e3m2fn", "mxfp6_e3m2"), family="ocp",
    description="OCP MX FP6 E3M2: finite only, max 28", dtype_name="float6_e3m2fn",
)
E2M3 = FloatFormat(
    "E2M3", 2, 3, _bias(2), aliases=("fp6_e2m3", "e2m3fn", "mxfp6_e2m3"), family="ocp",
    description="OCP MX FP6 E2M3: finite only, max 7.5", dtype_name="float6_e2m3fn",
)
E2M1 = FloatFormat(
    "E2M1", 2, 1, _bias(2), aliases=("fp4_e2m1", "fp4", "e2m1fn", "mxfp4_e2m1"), family="ocp",
    description="OCP MX FP4 E2M1: values 0, 0.5, 1, 1.5, 2, 3, 4, 6", dtype_name="float4_e2m1fn",
)
E8M0 = FloatFormat(
    "E8M0", 8, 0, _bias(8), signed=False, has_inf=False, nan_encoding="e8m0", subnormals=False,
    aliases=("e8m0fnu", "fp8_e8m0", "ue8m0"), family="ocp",
    description="OCP MX scale: unsigned powers of two 2^-127..2^127, NaN = 0xFF, no zero",
    dtype_name="float8_e8m0fnu",
)
INT8 = IntFormat("INT8", 8, aliases=("i8",), description="two's-complement integers -128..127",
                 dtype_name="int8", family="int")
INT4 = IntFormat("INT4", 4, aliases=("i4",), description="two's-complement integers -8..7",
                 dtype_name="int4", family="int")

# ---- ml_dtypes 0.7's other types: each dtype name means exactly that dtype ----------------------
E3M4 = FloatFormat(
    "E3M4", 3, 4, _bias(3), has_inf=True, nan_codes=15, family="ml_dtypes", aliases=("fp8_e3m4",),
    description="ml_dtypes float8_e3m4: IEEE-style (±Inf, NaNs), bias 3, max 15.5",
    dtype_name="float8_e3m4",
)
E4M3IEEE = FloatFormat(
    "E4M3IEEE", 4, 3, _bias(4), has_inf=True, nan_codes=7, family="ml_dtypes",
    aliases=("e4m3_ieee", "fp8_e4m3_ieee"),
    description="ml_dtypes float8_e4m3: IEEE-style E4M3 (±Inf = S.1111.000, NaNs), max 240 — not "
                "OCP E4M3FN (the short name E4M3 means E4M3FN)", dtype_name="float8_e4m3",
)
E4M3B11FNUZ = FloatFormat(
    "E4M3B11FNUZ", 4, 3, 11, nan_at_negative_zero=True, family="ml_dtypes",
    aliases=("fp8_e4m3b11fnuz", "e4m3b11"),
    description="ml_dtypes float8_e4m3b11fnuz: E4M3 with bias 11, NaN = 0x80 (no -0), max 30",
    dtype_name="float8_e4m3b11fnuz",
)
E5M3FNU = FloatFormat(
    "E5M3FNU", 5, 3, _bias(5), signed=False, nan_codes=1, family="ml_dtypes",
    aliases=("fp8_e5m3fnu", "ue5m3"),
    description="ml_dtypes float8_e5m3fnu: unsigned E5M3 (a scale format), NaN = 0xFF, max 114688",
    dtype_name="float8_e5m3fnu",
)
INT2 = IntFormat("INT2", 2, description="two's-complement integers -2..1", dtype_name="int2", family="int")
UINT2 = IntFormat("UINT2", 2, signed=False, description="unsigned integers 0..3", dtype_name="uint2",
                  family="int")
UINT4 = IntFormat("UINT4", 4, signed=False, description="unsigned integers 0..15", dtype_name="uint4",
                  family="int")
INT1 = IntFormat("INT1", 1, description="two's-complement integers -1..0", dtype_name="int1", family="int")
UINT1 = IntFormat("UINT1", 1, signed=False, description="unsigned integers 0..1", dtype_name="uint1",
                  family="int")


# ---- IEEE P3109 binary8: the family as gfloat 0.5 names and models it ---------------------------

P3109_K = 8  #: the width of the binary8 family
_P3109_NAME = re.compile(r"^p3109_k(\d+)p(\d+)([su])([ef])$")


def p3109_format(precision: int, signed: bool = True, extended: bool = True) -> FloatFormat:
    """The IEEE P3109 binary8 format K8P<precision>, named as gfloat names it (`p3109_k8p3se`).

    Layout (P3109 interim report v3; gfloat `format_info_p3109`): precision p counts the implicit
    bit, so m = p - 1 mantissa bits and 8 - p (signed) or 9 - p (unsigned) exponent bits; bias
    2^(7 - p) (signed) or 2^(8 - p) (unsigned); subnormals. Signed: NaN is the -0 code 0x80 (no -0),
    extended formats have ±Inf at the top codes 0x7F / 0xFF. Unsigned: NaN is 0xFF, extended ones
    have +Inf at 0xFE. Precision 1..7 when signed (a sign and at least one exponent bit), 1..8
    unsigned."""
    top = P3109_K - 1 if signed else P3109_K
    if isinstance(precision, bool) or not isinstance(precision, int) or not 1 <= precision <= top:
        raise ValueError(f"P3109 binary8 precision {precision!r} is not in 1..{top} "
                         f"({'signed' if signed else 'unsigned'} formats)")
    m = precision - 1
    e = P3109_K - m - int(signed)
    bias = 2 ** (P3109_K - precision - 1) if signed else 2 ** (P3109_K - precision)
    name = f"p3109_k{P3109_K}p{precision}{'s' if signed else 'u'}{'e' if extended else 'f'}"
    fmt = FloatFormat(name, e, m, bias, signed=signed, has_inf=extended,
                      nan_codes=0 if signed else 1, nan_at_negative_zero=signed, family="p3109")
    nan = "0x80" if signed else "0xFF"
    inf = (", ±Inf = 0x7F/0xFF" if signed else ", +Inf = 0xFE") if extended else ""
    text = (f"IEEE P3109 binary8 K8P{precision}, {'signed' if signed else 'unsigned'}, "
            f"{'extended' if extended else 'finite'}: NaN = {nan}{inf}, max {fmt.max:.6g}")
    return FloatFormat(name, e, m, bias, signed=signed, has_inf=extended, nan_codes=0 if signed else 1,
                       nan_at_negative_zero=signed, family="p3109", description=text)


#: the whole IEEE P3109 binary8 family: precision 1..7 signed and 1..8 unsigned, extended and finite
P3109_FORMATS: tuple[FloatFormat, ...] = tuple(
    p3109_format(p, signed, extended)
    for signed in (True, False)
    for p in range(1, P3109_K + (0 if signed else 1))
    for extended in (True, False)
)

#: the P3109 binary8 formats gfloat itself lists (`gfloat.formats.p3109_binary8_formats`): K8P1
#: signed/unsigned extended, K8P3 and K8P4 in all four variants, K8P7 signed and K8P8 unsigned
#: finite — what an exported page's offline bin explorer carries tables for
P3109_LISTED: tuple[FloatFormat, ...] = tuple(
    f for f in P3109_FORMATS
    if f.name in ("p3109_k8p1se", "p3109_k8p1ue", "p3109_k8p7sf", "p3109_k8p8uf")
    or f.name[:-2].endswith(("p3", "p4"))
)

#: the formats the simulations, lessons and widgets other than the format explorers offer (OCP and
#: IEEE formats, the fnuz pair, INT8/INT4): every registered format is in ALL_FORMATS
CORE_FORMATS: tuple[Format, ...] = (
    E4M3FN, E5M2, E2M1, E8M0, BF16, FP16, FP32, E3M2, E2M3, E4M3FNUZ, E5M2FNUZ, INT8, INT4,
)
#: ml_dtypes 0.7's types beyond the core ones
ML_DTYPES_EXTRA_FORMATS: tuple[Format, ...] = (
    E3M4, E4M3IEEE, E4M3B11FNUZ, E5M3FNU, INT2, UINT2, UINT4, INT1, UINT1,
)
#: every registered format: `lowprec formats`, the bin explorer and the conventions table list these
ALL_FORMATS: tuple[Format, ...] = CORE_FORMATS + ML_DTYPES_EXTRA_FORMATS + P3109_FORMATS
FLOAT_FORMATS: tuple[FloatFormat, ...] = tuple(f for f in ALL_FORMATS if isinstance(f, FloatFormat))

_REGISTRY: dict[str, Format] = {}
for _fmt in ALL_FORMATS:
    for _key in filter(None, (_fmt.name, _fmt.dtype_name, *_fmt.aliases)):
        _k = _key.lower()
        if _k in _REGISTRY and _REGISTRY[_k] is not _fmt:
            raise RuntimeError(f"format alias {_key!r} is used twice")
        _REGISTRY[_k] = _fmt


def format_names() -> list[str]:
    """Canonical names of every registered format."""
    return [f.name for f in ALL_FORMATS]


def get_format(name: str | Format) -> Format:
    """Look a format up by name or alias, case-insensitively; a format object passes through.

    Raises ValueError naming the known formats when the name is unknown.
    """
    if isinstance(name, (FloatFormat, IntFormat)):
        return name
    if not isinstance(name, str):
        raise TypeError(f"format must be a name or a FloatFormat, got {type(name).__name__}")
    key = name.strip().lower()
    try:
        return _REGISTRY[key]
    except KeyError:
        pass
    match = _P3109_NAME.match(key)
    if match is not None:  # a P3109 name outside the binary8 family: say which part is wrong
        k, p = int(match.group(1)), int(match.group(2))
        if k != P3109_K:
            raise ValueError(f"unknown format {name!r}: lowprec models the P3109 binary8 family "
                             f"(k8), not k{k}")
        p3109_format(p, match.group(3) == "s", match.group(4) == "e")  # raises for a bad precision
    core = ", ".join(f.name for f in CORE_FORMATS + ML_DTYPES_EXTRA_FORMATS)
    raise ValueError(
        f"unknown format {name!r}; known formats: {core}, and the P3109 binary8 family "
        f"p3109_k8p<1..7>s<e|f>, p3109_k8p<1..8>u<e|f> (aliases such as float8_e4m3fn, bfloat16, "
        f"fp4 are accepted too)"
    )
