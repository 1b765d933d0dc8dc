"""Format descriptions as data: one frozen dataclass per bit layout, one registry keyed by name.

A `FloatFormat` says how a code's bits map to a real value; it holds no rounding behaviour (that is
`CastPolicy`'s job). Values follow the usual binary floating-point rule

    normal:    (-1)^s × 2^(E - bias) × (1 + M / 2^m)      for 1 ≤ E (or 0 ≤ E when there are no subnormals)
    subnormal: (-1)^s × 2^(1 - bias) × (M / 2^m)           for E = 0

with the special codes set by `nan_encoding` (IEEE 754 all-ones exponent; OCP "fn" single all-ones
code; "fnuz" negative-zero code; E8M0's 0xFF; or none). Sources: IEEE 754-2019 §3; OCP 8-bit
Floating Point Specification (OFP8) rev 1.0; OCP Microscaling Formats (MX) v1.0 §5.
`IntFormat` describes the two's-complement integer grids INT8 and INT4 with the same properties.
Each record also carries `dtype_name`, the name numpy/ml_dtypes and torch give the same layout
(`float8_e4m3fn`, `bfloat16` …): the one format ↔ backend dtype table, read by `gpu.backends` and
the tests' oracles (`getattr(ml_dtypes, fmt.dtype_name)`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

NanEncoding = Literal["ieee", "fn", "fnuz", "e8m0", "none"]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point bit layout (sign, exponent, mantissa) and its special codes."""

    name: str  # canonical name, e.g. "E4M3FN"
    exponent_bits: int  # width of the exponent field
    mantissa_bits: int  # width of the stored mantissa field (no implicit bit)
    bias: int  # exponent bias: value exponent = E - bias
    signed: bool = True  # has a sign bit (E8M0 does not)
    has_inf: bool = False  # IEEE-style ±Inf codes (all-ones exponent, zero mantissa)
    nan_encoding: NanEncoding = "none"  # where NaN lives: see module docstring
    subnormals: bool = True  # E = 0 is a subnormal binade; False: E = 0 is an ordinary binade (E8M0)
    aliases: tuple[str, ...] = field(default=(), compare=False)  # other names accepted by get_format
    description: str = field(default="", compare=False)  # one line for tables and the app
    # the dtype's name in the numpy ecosystem: the attribute of ml_dtypes / numpy and of torch
    # (where they have the type) that holds this layout; also accepted by get_format
    dtype_name: str = field(default="", compare=False)

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

    @property
    def has_nan(self) -> bool:
        return self.nan_encoding != "none"

    @property
    def has_zero(self) -> bool:
        """E8M0 (no subnormal binade) has no zero."""
        return self.subnormals

    @property
    def has_negative_zero(self) -> bool:
        return self.signed and self.subnormals and self.nan_encoding != "fnuz"

    # ---- exponents -----------------------------------------------------------------------------
    @property
    def emin(self) -> int:
        """Exponent of the smallest normal value (1 - bias; -bias when E = 0 is normal)."""
        return (1 if self.subnormals else 0) - self.bias

    @property
    def max_magnitude_code(self) -> int:
        """Code (without sign) of the largest finite value."""
        e_all = (1 << self.exponent_bits) - 1
        m_all = (1 << self.mantissa_bits) - 1
        if self.nan_encoding == "ieee":
            return ((e_all - 1) << self.mantissa_bits) | m_all
        if self.nan_encoding in ("fn", "e8m0"):
            return self.magnitude_mask - 1  # the all-ones code is NaN
        return self.magnitude_mask  # fnuz / none: every magnitude code is finite

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
    "FP32", 8, 23, _bias(8), has_inf=True, nan_encoding="ieee",
    aliases=("f32", "single", "binary32"), description="IEEE 754 binary32", dtype_name="float32",
)
FP16 = FloatFormat(
    "FP16", 5, 10, _bias(5), has_inf=True, nan_encoding="ieee",
    aliases=("f16", "half", "binary16"), description="IEEE 754 binary16", dtype_name="float16",
)
BF16 = FloatFormat(
    "BF16", 8, 7, _bias(8), has_inf=True, nan_encoding="ieee",
    aliases=("bf16",), description="bfloat16: FP32's range, 8 significant bits",
    dtype_name="bfloat16",
)
E5M2 = FloatFormat(
    "E5M2", 5, 2, _bias(5), has_inf=True, nan_encoding="ieee",
    aliases=("fp8_e5m2", "e5m2"), description="OCP FP8 E5M2 (IEEE-like: Inf and NaN)",
    dtype_name="float8_e5m2",
)
E4M3FN = FloatFormat(
    "E4M3FN", 4, 3, _bias(4), has_inf=False, nan_encoding="fn",
    aliases=("fp8_e4m3", "e4m3", "fp8_e4m3fn", "e4m3fn"),
    description="OCP FP8 E4M3: finite only, NaN = S.1111.111, max 448", dtype_name="float8_e4m3fn",
)
E4M3FNUZ = FloatFormat(
    "E4M3FNUZ", 4, 3, _bias(4) + 1, has_inf=False, nan_encoding="fnuz",
    aliases=("fp8_e4m3fnuz",),
    description="E4M3, bias 8, NaN = 0x80 (no -0), max 240", dtype_name="float8_e4m3fnuz",
)
E5M2FNUZ = FloatFormat(
    "E5M2FNUZ", 5, 2, _bias(5) + 1, has_inf=False, nan_encoding="fnuz",
    aliases=("fp8_e5m2fnuz",),
    description="E5M2, bias 16, NaN = 0x80 (no -0), max 57344", dtype_name="float8_e5m2fnuz",
)
E3M2 = FloatFormat(
    "E3M2", 3, 2, _bias(3), aliases=("fp6_e3m2", "e3m2fn", "mxfp6_e3m2"),
    description="OCP MX FP6 E3M2: finite only, max 28", dtype_name="float6_e3m2fn",
)
E2M3 = FloatFormat(
    "E2M3", 2, 3, _bias(2), aliases=("fp6_e2m3", "e2m3fn", "mxfp6_e2m3"),
    description="OCP MX FP6 E2M3: finite only, max 7.5", dtype_name="float6_e2m3fn",
)
E2M1 = FloatFormat(
    "E2M1", 2, 1, _bias(2), aliases=("fp4_e2m1", "fp4", "e2m1fn", "mxfp4_e2m1"),
    description="OCP MX FP4 E2M1: values 0, 0.5, 1, 1.5, 2, 3, 4, 6", dtype_name="float4_e2m1fn",
)
E8M0 = FloatFormat(
    "E8M0", 8, 0, _bias(8), signed=False, has_inf=False, nan_encoding="e8m0", subnormals=False,
    aliases=("e8m0fnu", "fp8_e8m0", "ue8m0"),
    description="OCP MX scale: unsigned powers of two 2^-127..2^127, NaN = 0xFF, no zero",
    dtype_name="float8_e8m0fnu",
)
INT8 = IntFormat("INT8", 8, aliases=("i8",), description="two's-complement integers -128..127",
                 dtype_name="int8")
INT4 = IntFormat("INT4", 4, aliases=("i4",), description="two's-complement integers -8..7",
                 dtype_name="int4")

ALL_FORMATS: tuple[Format, ...] = (
    E4M3FN, E5M2, E2M1, E8M0, BF16, FP16, FP32, E3M2, E2M3, E4M3FNUZ, E5M2FNUZ, INT8, INT4,
)
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
    try:
        return _REGISTRY[name.strip().lower()]
    except KeyError:
        raise ValueError(
            f"unknown format {name!r}; known formats: {', '.join(format_names())} "
            f"(aliases such as float8_e4m3fn, bfloat16, fp4 are accepted too)"
        ) from None
