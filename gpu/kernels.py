"""Triton kernels whose output the format models must reproduce: a scaled cast FP32/BF16 → E4M3FN /
E5M2 that also returns amax, MXFP8 block quantization, an FP8 GEMM with FP32 accumulation, and an
fp8 → float32 decode.

Conventions. Scaled cast: `codes = fp8(fp32(x · encode_scale))`, the encode scale being
`F / amax`-style (multiply before the cast), read from a 1-element device tensor so delayed scaling
needs no host sync; the cast is Triton's `.to(tl.float8e4nv / tl.float8e5)`, which on NVIDIA
compiles to `cvt.rn.satfinite` (round to nearest even, saturate; convention `triton_nvidia`).
`amax = max |x|` over non-NaN elements (NaN is ignored; an Inf gives Inf). MX: OCP MX v1.0 §6.3
"floor" rule per 32 consecutive elements along the last axis: scale code
`E = clamp(floor(log2 amax) - emax_elem + 127, 0, 254)` read from the exponent field of amax (a zero
or float32-subnormal amax gives E = 0, i.e. 2^-127), elements `fp8(x · 2^(127 - E))` saturating.
GEMM: `C = (Σ_k A[m,k]·B[k,n]) · a_decode_scale[m] · b_decode_scale[n]` with the scales per tensor
(1 element) or per row of A / per column of B; products of fp8 operands are exact in FP32, the K-loop
accumulates BLOCK_K products per `tl.dot` and promotes to an FP32 accumulator after each
(`max_num_imprecise_acc=BLOCK_K`; see `gpu.gemm_reference.gemm_error_bound` for the stated bound).

`python -m lowprec.gpu.kernels OP IN.npz OUT.npz` runs one operation on CPU tensors; `gpu.backends` uses it
with TRITON_INTERPRET=1 in a child process (the interpreter's fp8 casts are not an oracle).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl

from lowprec.formats import get_format

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")

#: Triton's name for each fp8 format the kernels cast to (the formats' other names: `dtype_name`)
_FP8 = {"E4M3FN": tl.float8e4nv, "E5M2": tl.float8e5}
MX_BLOCK = 32


def _fp8(fmt: str) -> Any:
    key = str(fmt).upper()
    if key not in _FP8:
        raise ValueError(f"Triton kernels cast to {', '.join(_FP8)}, not {fmt!r}")
    return _FP8[key]


# ------------------------------------------------------------------------------------------------
# scaled cast with amax
# ------------------------------------------------------------------------------------------------


@triton.jit
def _scaled_cast_kernel(x_ptr, encode_scale_ptr, codes_ptr, amax_partial_ptr, n,  # type: ignore[no-untyped-def]
                        OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mag = tl.abs(x)
    mag = tl.where(mag == mag, mag, 0.0)  # NaN does not enter amax
    tl.store(amax_partial_ptr + pid, tl.max(mag, axis=0))
    encode_scale = tl.load(encode_scale_ptr)
    y = (x * encode_scale).to(OUT_DTYPE)
    tl.store(codes_ptr + offs, y.to(tl.uint8, bitcast=True), mask=mask)


def scaled_cast(x: torch.Tensor, fmt: str, encode_scale: torch.Tensor | float = 1.0, *,
                block: int = 4096, num_warps: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes uint8 shaped like x, amax float32 0-d tensor) for a float32 or bfloat16 tensor x."""
    if x.dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"scaled_cast reads float32 or bfloat16, got {x.dtype}")
    out_dtype = _fp8(fmt)
    xc = x.contiguous().reshape(-1)
    n = xc.numel()
    if not isinstance(encode_scale, torch.Tensor):
        encode_scale = torch.tensor([float(encode_scale)], dtype=torch.float32, device=x.device)
    encode_scale = encode_scale.to(device=x.device, dtype=torch.float32).reshape(-1)[:1]
    if INTERPRET:
        block = min(block, 1024)
    grid = max(1, triton.cdiv(n, block))
    codes = torch.empty(n, dtype=torch.uint8, device=x.device)
    partial = torch.zeros(grid, dtype=torch.float32, device=x.device)
    if n:
        _scaled_cast_kernel[(grid,)](xc, encode_scale, codes, partial, n, OUT_DTYPE=out_dtype,
                                     BLOCK=block, num_warps=num_warps)
    return codes.reshape(x.shape), partial.max()


@triton.jit
def _decode_kernel(codes_ptr, out_ptr, n, IN_DTYPE: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(codes_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, c.to(IN_DTYPE, bitcast=True).to(tl.float32), mask=mask)


def decode_fp8(codes: torch.Tensor, fmt: str, *, block: int = 1024) -> torch.Tensor:
    """float32 values of uint8 fp8 codes, converted by Triton."""
    in_dtype = _fp8(fmt)
    c = codes.contiguous().reshape(-1).to(torch.uint8)
    out = torch.empty(c.numel(), dtype=torch.float32, device=codes.device)
    if c.numel():
        _decode_kernel[(triton.cdiv(c.numel(), block),)](c, out, c.numel(), IN_DTYPE=in_dtype,
                                                        BLOCK=block)
    return out.reshape(codes.shape)


# ------------------------------------------------------------------------------------------------
# MXFP8 block quantization
# ------------------------------------------------------------------------------------------------


@triton.jit
def _mx_quantize_kernel(x_ptr, codes_ptr, scale_codes_ptr, n_blocks, OUT_DTYPE: tl.constexpr,  # type: ignore[no-untyped-def]
                        EMAX_ELEM: tl.constexpr, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * GROUPS + tl.arange(0, GROUPS)
    cols = tl.arange(0, BLOCK)
    row_mask = rows < n_blocks
    offs = rows[:, None] * BLOCK + cols[None, :]
    x = tl.load(x_ptr + offs, mask=row_mask[:, None], other=0.0).to(tl.float32)
    mag = tl.abs(x)
    has_nan = tl.max((mag != mag).to(tl.int32), axis=1) > 0
    amax = tl.max(tl.where(mag == mag, mag, 0.0), axis=1)
    biased = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF  # floor(log2 amax) + 127 for normals
    scale_code = tl.minimum(tl.maximum(biased - EMAX_ELEM, 0), 254)
    nonfinite = has_nan | (biased == 255)
    scale_code = tl.where(nonfinite, 255, scale_code)  # Inf/NaN in the block: NaN scale (0xFF)
    # 2^(127 - E) as float32 bits: biased exponent 254 - E, in 1..254 for finite blocks
    inv_bits = tl.maximum(254 - scale_code, 1).to(tl.int32) << 23
    inv_scale = tl.where(nonfinite, float("nan"), inv_bits.to(tl.float32, bitcast=True))
    y = (x * inv_scale[:, None]).to(OUT_DTYPE)
    tl.store(codes_ptr + offs, y.to(tl.uint8, bitcast=True), mask=row_mask[:, None])
    tl.store(scale_codes_ptr + rows, scale_code.to(tl.uint8), mask=row_mask)


def mx_quantize(x: torch.Tensor, elem_fmt: str = "E4M3FN", *,
                groups: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """MXFP8 of x along its last axis (length a multiple of 32): (element codes uint8 shaped like x,
    E8M0 scale codes uint8 of shape x.shape[:-1] + (x.shape[-1] // 32,))."""
    out_dtype = _fp8(elem_fmt)
    if x.dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"mx_quantize reads float32 or bfloat16, got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] % MX_BLOCK:
        raise ValueError(f"mx_quantize needs a last axis that is a multiple of {MX_BLOCK}, "
                         f"got shape {tuple(x.shape)}")
    xc = x.contiguous()
    n_blocks = xc.numel() // MX_BLOCK
    codes = torch.empty(xc.shape, dtype=torch.uint8, device=x.device)
    scale_codes = torch.empty((*xc.shape[:-1], xc.shape[-1] // MX_BLOCK), dtype=torch.uint8,
                              device=x.device)
    if n_blocks:
        grid = (triton.cdiv(n_blocks, groups),)
        _mx_quantize_kernel[grid](xc, codes, scale_codes, n_blocks, OUT_DTYPE=out_dtype,
                                  EMAX_ELEM=get_format(elem_fmt).emax, GROUPS=groups,
                                  BLOCK=MX_BLOCK)
    return codes, scale_codes


# ------------------------------------------------------------------------------------------------
# FP8 GEMM with FP32 accumulation and per-tensor / per-row decode scales
# ------------------------------------------------------------------------------------------------


@triton.jit
def _fp8_gemm_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K,  # type: ignore[no-untyped-def]
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     A_DTYPE: tl.constexpr, B_DTYPE: tl.constexpr,
                     SA_PER_ROW: tl.constexpr, SB_PER_COL: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    # grouped ordering: GROUP_M row-blocks share the B tiles in L2
    group = pid // (GROUP_M * num_n)
    first_m = group * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_n)) % size_m
    pid_n = (pid % (GROUP_M * num_n)) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # rows/columns past the edge wrap around (always valid loads); their results are not stored
    am = rm % M
    bn = rn % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + am[:, None].to(tl.int64) * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + bn[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_ok = (k0 + rk) < K
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0)
            b = tl.load(b_ptrs, mask=k_ok[:, None], other=0)
        # fp8 × fp8 products are exact; BLOCK_K of them are summed by the dot unit, then the
        # partial sum is promoted into the FP32 accumulator (max_num_imprecise_acc=BLOCK_K)
        acc = tl.dot(a.to(A_DTYPE, bitcast=True), b.to(B_DTYPE, bitcast=True), acc,
                     max_num_imprecise_acc=BLOCK_K)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if SA_PER_ROW:
        sa = tl.load(sa_ptr + rm, mask=rm < M, other=0.0)
    else:
        sa = tl.load(sa_ptr + rm * 0)
    if SB_PER_COL:
        sb = tl.load(sb_ptr + rn, mask=rn < N, other=0.0)
    else:
        sb = tl.load(sb_ptr + rn * 0)
    c = (acc * sa[:, None]) * sb[None, :]
    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


#: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) on a GPU / in the interpreter
GEMM_CONFIG_CUDA = (128, 256, 128, 8, 8, 3)
GEMM_CONFIG_INTERPRET = (16, 16, 32, 4, 4, 1)


def fp8_gemm(a_codes: torch.Tensor, b_codes: torch.Tensor, a_decode_scale: torch.Tensor,
             b_decode_scale: torch.Tensor, a_fmt: str = "E4M3FN", b_fmt: str = "E4M3FN", *,
             config: tuple[int, int, int, int, int, int] | None = None) -> torch.Tensor:
    """float32 C (M×N) = (A·B) · a_decode_scale[m] · b_decode_scale[n] from uint8 fp8 codes
    A (M×K) and B (K×N, any strides; a transposed (N×K) contiguous tensor is fastest on Hopper).
    Decode scales: 1 element (per tensor), M elements (per row of A), N elements (per column of B).
    """
    if a_codes.dtype != torch.uint8 or b_codes.dtype != torch.uint8:
        raise TypeError(f"fp8_gemm takes uint8 codes, got {a_codes.dtype} and {b_codes.dtype}")
    if a_codes.ndim != 2 or b_codes.ndim != 2 or a_codes.shape[1] != b_codes.shape[0]:
        raise ValueError(f"fp8_gemm needs A (M×K) and B (K×N), got {tuple(a_codes.shape)} and "
                         f"{tuple(b_codes.shape)}")
    M, K = a_codes.shape
    N = b_codes.shape[1]
    sa = a_decode_scale.to(device=a_codes.device, dtype=torch.float32).reshape(-1).contiguous()
    sb = b_decode_scale.to(device=a_codes.device, dtype=torch.float32).reshape(-1).contiguous()
    if sa.numel() not in (1, M) or sb.numel() not in (1, N):
        raise ValueError(f"decode scales must have 1 or M={M} (A) / 1 or N={N} (B) elements, got "
                         f"{sa.numel()} and {sb.numel()}")
    bm, bn, bk, gm, warps, stages = config or (GEMM_CONFIG_INTERPRET if INTERPRET
                                               else GEMM_CONFIG_CUDA)
    c = torch.empty((M, N), dtype=torch.float32, device=a_codes.device)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _fp8_gemm_kernel[grid](a_codes, b_codes, c, sa, sb, M, N, K,
                           a_codes.stride(0), a_codes.stride(1), b_codes.stride(0),
                           b_codes.stride(1), c.stride(0), c.stride(1),
                           A_DTYPE=_fp8(a_fmt), B_DTYPE=_fp8(b_fmt),
                           SA_PER_ROW=sa.numel() == M and M != 1,
                           SB_PER_COL=sb.numel() == N and N != 1,
                           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, EVEN_K=K % bk == 0,
                           num_warps=warps, num_stages=stages)
    return c


# ------------------------------------------------------------------------------------------------
# child-process entry point (used with TRITON_INTERPRET=1 by gpu.backends.run_interpreted)
# ------------------------------------------------------------------------------------------------


def _run_op(op: str, a: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if op == "cast":
        x = torch.from_numpy(np.ascontiguousarray(a["x"], np.float32))
        if str(a["source_dtype"]) == "bfloat16":
            x = x.to(torch.bfloat16)
        codes, amax = scaled_cast(x, str(a["fmt"]), float(a["encode_scale"]))
        return {"codes": codes.numpy(), "amax": np.array(amax.item(), np.float32)}
    if op == "decode":
        return {"values": decode_fp8(torch.from_numpy(a["codes"]), str(a["fmt"])).numpy()}
    if op == "mx":
        x = torch.from_numpy(np.ascontiguousarray(a["x"], np.float32))
        codes, scale_codes = mx_quantize(x, str(a["fmt"]))
        return {"codes": codes.numpy(), "scale_codes": scale_codes.numpy()}
    if op == "gemm":
        c = fp8_gemm(torch.from_numpy(a["a_codes"]), torch.from_numpy(a["b_codes"]),
                     torch.from_numpy(a["a_decode_scale"]), torch.from_numpy(a["b_decode_scale"]),
                     str(a["a_fmt"]), str(a["b_fmt"]))
        return {"c": c.numpy()}
    raise ValueError(f"unknown operation {op!r}; known: cast, decode, mx, gemm, batch")


def _main(argv: list[str]) -> int:
    """OP IN.npz OUT.npz; OP 'batch' runs jobs whose arrays are keyed 'JOB/OP/NAME' and writes
    results keyed 'JOB/NAME' (one child process for many small kernels)."""
    if len(argv) != 3:
        print("usage: python -m lowprec.gpu.kernels {cast,decode,mx,gemm,batch} IN.npz OUT.npz",
              file=sys.stderr)
        return 2
    op, src, dst = argv
    with np.load(src) as z:
        a = {k: z[k] for k in z.files}
    try:
        if op == "batch":
            jobs: dict[str, tuple[str, dict[str, np.ndarray]]] = {}
            for key, val in a.items():
                job, job_op, name = key.split("/", 2)
                jobs.setdefault(job, (job_op, {}))[1][name] = val
            out = {f"{job}/{k}": v for job, (job_op, arrays) in jobs.items()
                   for k, v in _run_op(job_op, arrays).items()}
        else:
            out = _run_op(op, a)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    np.savez(dst, **out)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
