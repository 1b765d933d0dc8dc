"""lowprec.formats — bit-exact models of low-precision number formats.

`get_format` and the constants describe layouts; `CastPolicy` and `policy_for` name every edge-case
decision; `encode`/`decode`/`quantize` run them exactly on numpy arrays; `code_table` and
`rounding_bin` explain them; `explain_cast`/`explain_value` explain one value (what `lowprec cast`
and the bin explorer show). Imports nothing of lowprec beyond its leaf modules (`lowprec.strictjson`,
`lowprec.config`), and never torch.
"""

from .codec import (
    CHUNK,
    as_float_array,
    classify_codes,
    decode,
    default_policy,
    encode,
    pack_fp4,
    quantize,
    unpack_fp4,
)
from .conventions import (
    CONVENTION_ROWS,
    CONVENTIONS,
    ML_DTYPES_RULES,
    ConventionRow,
    convention_row,
    ml_dtypes_version,
    policy_for,
    providers,
)
from .conventions_view import conventions_table
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
from .explain import (
    BinView,
    CastExplanation,
    explain_cast,
    explain_value,
    power_of_two_text,
    resolve_policy,
)
from .parse import parse_value
from .scalar import decode_scalar, encode_scalar
from .specs import (
    ALL_FORMATS,
    BF16,
    CORE_FORMATS,
    E2M1,
    E2M3,
    E3M2,
    E3M4,
    E4M3B11FNUZ,
    E4M3FN,
    E4M3FNUZ,
    E4M3IEEE,
    E5M2,
    E5M2FNUZ,
    E5M3FNU,
    E8M0,
    FLOAT_FORMATS,
    FP16,
    FP32,
    INT1,
    INT2,
    INT4,
    INT8,
    ML_DTYPES_EXTRA_FORMATS,
    P3109_FORMATS,
    UINT1,
    UINT2,
    UINT4,
    FloatFormat,
    Format,
    IntFormat,
    format_names,
    get_format,
    p3109_format,
)
from .tables import CodeTable, RoundingBin, code_table, rounding_bin

__all__ = [
    "ALL_FORMATS", "BF16", "BinView", "CHUNK", "CONVENTIONS", "CONVENTION_ROWS", "CORE_FORMATS",
    "CastExplanation", "CastPolicy", "ConventionRow",
    "CodeTable", "E2M1", "E2M3", "E3M2", "E3M4", "E4M3B11FNUZ", "E4M3FN", "E4M3FNUZ", "E4M3IEEE",
    "E5M2", "E5M2FNUZ", "E5M3FNU", "E8M0",
    "FLOAT_FORMATS", "FP16", "FP32", "FloatFormat", "Format", "INT1", "INT2", "INT4", "INT8", "IntFormat",
    "ML_DTYPES_EXTRA_FORMATS", "ML_DTYPES_RULES", "P3109_FORMATS", "SrFraction", "UINT1", "UINT2", "UINT4",
    "convention_row", "p3109_format", "providers",
    "NanPayload", "NanToFinite", "Overflow", "Rounding", "RoundingBin", "Subnormals",
    "UnsignedNegative", "UnsignedZero", "as_float_array", "classify_codes", "code_table",
    "conventions_table", "decode", "decode_scalar", "default_policy", "encode", "encode_scalar",
    "explain_cast", "explain_value", "format_names", "get_format", "ml_dtypes_version", "pack_fp4",
    "parse_value",
    "policy_for", "power_of_two_text", "quantize", "resolve_policy", "rounding_bin", "unpack_fp4",
]
