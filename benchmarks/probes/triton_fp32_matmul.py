"""Triton fp32 matrix products (``tl.dot`` with ``input_precision="ieee"``, no TF32) against cuBLAS
through torch (TF32 off), side by side: ``x @ w^T`` (a linear layer, the weight read transposed:
its k is contiguous) and ``x @ w`` at 4096^3, over tile shapes, warps and stages, with the
transposed operand loaded as given or as a [BN, BK] tile transposed in registers (``tl.trans``).
Every form is checked against torch first. On a GPU: ``python benchmarks/probes/triton_fp32_matmul.py``
(with TRITON_INTERPRET=1 on a CPU: small sizes, the checks only)."""

import os
import sys

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def mm_kernel(a, b, c, m, n, k, sam, sak, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              GROUP_M: tl.constexpr, B_ROWS_N: tl.constexpr):
    """c[m, n] = a[m, k] @ b[k, n] through strides; B_ROWS_N: b's tile loaded as [BN, BK] and
    transposed in registers."""
    pid = tl.program_id(0)
    num_m = tl.cdiv(m, BM)
    num_n = tl.cdiv(n, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    rows = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows
    pid_n = (pid % group) // rows
    offs_m = pid_m.to(tl.int64) * BM + tl.arange(0, BM)
    offs_n = pid_n.to(tl.int64) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a + offs_m[:, None] * sam + offs_k[None, :] * sak
    if B_ROWS_N:
        b_ptrs = b + offs_n[:, None] * sbn + offs_k[None, :] * sbk
    else:
        b_ptrs = b + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros([BM, BN], tl.float32)
    for k0 in range(0, k, BK):
        left = k - k0
        a_t = tl.load(a_ptrs, mask=(offs_m[:, None] < m) & (offs_k[None, :] < left), other=0.0)
        if B_ROWS_N:
            b_t = tl.trans(tl.load(b_ptrs, mask=(offs_n[:, None] < n) & (offs_k[None, :] < left), other=0.0))
        else:
            b_t = tl.load(b_ptrs, mask=(offs_k[:, None] < left) & (offs_n[None, :] < n), other=0.0)
        acc = tl.dot(a_t, b_t, acc, input_precision="ieee")
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    mask = (offs_m[:, None] < m) & (offs_n[None, :] < n)
    tl.store(c + offs_m[:, None] * n + offs_n[None, :], acc, mask=mask)


def launch(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, transposed: bool, cfg: tuple[int, ...],
           rows_n: bool) -> None:
    bm, bn, bk, warps, stages = cfg
    m, k = x.shape
    n = w.shape[0] if transposed else w.shape[1]
    sbk, sbn = (w.stride(1), w.stride(0)) if transposed else (w.stride(0), w.stride(1))
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    mm_kernel[grid](x, w, out, m, n, k, x.stride(0), x.stride(1), sbk, sbn, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                    B_ROWS_N=rows_n, num_warps=warps, num_stages=stages)


CONFIGS = [(128, 128, 32, 8, 3), (128, 128, 16, 8, 3), (128, 128, 16, 8, 4), (64, 128, 32, 4, 3),
           (128, 64, 32, 4, 3), (64, 64, 32, 4, 4), (128, 128, 64, 8, 2), (128, 256, 16, 8, 3),
           (256, 128, 16, 8, 3), (64, 128, 16, 4, 4)]


def main() -> None:
    size = 64 if INTERPRET else int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    configs = [(16, 16, 16, 4, 2), (32, 16, 8, 4, 2)] if INTERPRET else CONFIGS
    dev = "cpu" if INTERPRET else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device=dev).manual_seed(0)
    m, n, k = size, size, size + (3 if INTERPRET else 0)
    x = torch.randn(m, k, device=dev, generator=g)
    if not INTERPRET:
        print(torch.cuda.get_device_name(), f"torch {torch.__version__}, triton {triton.__version__}, {m}x{n}x{k} fp32")
    for transposed in (True, False):
        w = torch.randn(n, k, device=dev, generator=g) if transposed else torch.randn(k, n, device=dev, generator=g)
        want = x @ (w.t() if transposed else w)
        out = torch.empty(m, n, device=dev)
        flops = 2.0 * m * n * k
        label = "x @ w^T" if transposed else "x @ w"
        if not INTERPRET:
            ms_ref = triton.testing.do_bench(lambda: torch.matmul(x, w.t() if transposed else w))  # noqa: B023
            print(f"{label:8s} cuBLAS                      {ms_ref:7.3f} ms  {flops / ms_ref / 1e9:6.1f} TFLOP/s")
        for cfg in configs:
            for rows_n in ((False, True) if transposed else (False,)):
                out.fill_(float("nan"))
                try:
                    launch(x, w, out, transposed, cfg, rows_n)
                except Exception as exc:  # a shape that does not fit (shared memory, registers)
                    print(f"{label:8s} {cfg} rows_n={rows_n}: {type(exc).__name__}: {str(exc)[:80]}")
                    continue
                err = float((out - want).abs().max() / want.abs().max())
                if not err < 1e-5:
                    print(f"{label:8s} {cfg} rows_n={rows_n}: WRONG (max rel. error {err:.2e})")
                    continue
                if INTERPRET:
                    print(f"{label:8s} {cfg} rows_n={rows_n}: ok ({err:.1e})")
                    continue
                ms = triton.testing.do_bench(lambda: launch(x, w, out, transposed, cfg, rows_n))  # noqa: B023
                print(f"{label:8s} {str(cfg):22s} rows_n={rows_n:d} {ms:7.3f} ms  {flops / ms / 1e9:6.1f} TFLOP/s"
                      f"  {ms_ref / ms:4.2f}x cuBLAS", flush=True)
        if transposed and not INTERPRET:  # the weight transposed once into a contiguous copy, then x @ w
            wt = torch.empty(k, n, device=dev)
            ms_t = triton.testing.do_bench(lambda: wt.copy_(w.t()))  # noqa: B023
            print(f"{label:8s} copy of w^T alone {ms_t:7.3f} ms")


if __name__ == "__main__":
    main()
