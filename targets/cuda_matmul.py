"""The generated CUDA matrix product that ``ir.Extern`` matmuls launch.

Four kernels, all reading every operand through element strides (transposes,
column-major storage, leading dimensions larger than the matrix and broadcast
batches need no copies), the batch on ``blockIdx.z``, every edge bounds-checked:

* ``kt_matmul_dmma_async``: fp64 on tensor cores through ``mma.sync`` PTX
  (m16n8k4/k8/k16 on sm_90 and later, m8n8k4 on sm_80/sm_89): a BM x BN block
  tile, a WM x WN tile per warp, a STAGES-deep ring of BK slabs in dynamic
  shared memory filled with ``cp.async`` (out-of-range elements zero-filled),
  so no register staging.
* ``kt_matmul_dmma``: fp64 on tensor cores (WMMA 8x8x4 double, sm_80 and
  later): the next K slab fetched into registers while the current one is
  multiplied; used where the device's shared memory is too small for the above.
* ``kt_matmul_simt4``: float accumulation on the CUDA cores: 8 x 8 outputs per
  thread as four 4 x 4 quadrants read from shared memory as float4, the next K
  slab prefetched into registers, double-buffered shared tiles.
* ``kt_matmul_simt``: any float type, accumulated in ``Acc``: a BM x BN block
  tile, TM x TN outputs per thread held in registers (also fp64 below sm_80).

The two fp64 tensor-core kernels are written in :mod:`targets.cuda_dmma`. ``kt_matmul`` picks
between the four at run time from the device's compute capability and shared memory. The host
passes the operand strides in a ``KtMatmulStrides``; the including file defines ``KT_CUDA_CHECK``.
"""

from __future__ import annotations

import re

from targets.cuda_dmma import DMMA_ASYNC_TILE, DMMA_KERNELS, DMMA_PRIMITIVES, DMMA_TILE

# block shapes of the SIMT kernels, chosen by timing candidates (docs/measurements); the fp64
# tensor-core kernels' are in targets.cuda_dmma
SIMT_TILE = {"float": (128, 128, 8, 8, 8), "double": (64, 64, 8, 4, 4)}  # BM, BN, BK, TM, TN
# BM, BN, BK of the float4 SIMT kernel (8 x 8 outputs per thread): the fastest fp32 shape of those timed
SIMT4_TILE = (128, 128, 8)

_HEAD = r"""
// ---- generated matrix product: C[z] = A[z] @ B[z], every operand read through element strides
#include <mma.h>
#include <type_traits>

struct KtMatmulStrides {
    long long ab, am, ak;  // A: batch, row (m), column (k)
    long long bb, bk, bn;  // B: batch, row (k), column (n)
    long long cb, cm, cn;  // C: batch, row (m), column (n)
};

// block tile (tile_m, tile_n) of block (bx, by) in a gx x gy grid: consecutive blocks walk GROUP tile rows
// down one tile column before moving right, so the blocks in flight share their A and B panels in L2
__host__ __device__ inline void kt_matmul_tile(const int bx, const int by, const int gx, const int gy,
                                               int& tile_m, int& tile_n) {
    constexpr int GROUP = 8;
    const int id = by * gx + bx, per_group = GROUP * gx;
    const int first = (id / per_group) * GROUP;
    const int rows = gy - first < GROUP ? gy - first : GROUP;
    tile_m = first + (id % per_group) % rows;
    tile_n = (id % per_group) / rows;
}

// slot (r, c) of copy e in an R x C shared tile stored r-fastest (offset c * ld + r): when the operand's
// unit-stride dimension is r, consecutive threads walk r; otherwise groups of 4 lanes read 4 consecutive c
// (one 32-byte sector of fp64) while a warp covers 8 consecutive r, which keeps the shared writes
// conflict-free for ld = 4 (mod 16) or 12 (mod 16) doubles. Needs C % 4 == 0.
__host__ __device__ inline void kt_tile_slot(const int e, const int R, const bool r_unit, int& r, int& c) {
    if (r_unit) {
        r = e % R;
        c = e / R;
    } else {
        r = (e / 4) % R;
        c = (e / (4 * R)) * 4 + e % 4;
    }
}

"""[1:]  # [1:]: without the newline after the opening quotes

_SIMT = r"""
// SIMT: a BM x BN tile per block, TM x TN outputs per thread in registers, K in slabs of BK
template <typename T, typename Acc, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
kt_matmul_simt(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
               const int m, const int n, const int k, const KtMatmulStrides s) {
    constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
    __shared__ Acc as[BK][BM + 4];
    __shared__ Acc bs[BK][BN + 4];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    a += blockIdx.z * s.ab;
    b += blockIdx.z * s.bb;
    c += blockIdx.z * s.cb;
    Acc acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = Acc(0);
    for (int k0 = 0; k0 < k; k0 += BK) {
        // consecutive threads walk each operand's unit-stride dimension (coalesced loads)
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int i = s.am == 1 ? e % BM : e / BK, kk = s.am == 1 ? e / BM : e % BK;
            const int gi = m0 + i, gk = k0 + kk;
            as[kk][i] = (gi < m && gk < k) ? static_cast<Acc>(a[gi * s.am + gk * s.ak]) : Acc(0);
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
            const int j = s.bn == 1 ? e % BN : e / BK, kk = s.bn == 1 ? e / BN : e % BK;
            const int gj = n0 + j, gk = k0 + kk;
            bs[kk][j] = (gj < n && gk < k) ? static_cast<Acc>(b[gk * s.bk + gj * s.bn]) : Acc(0);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            Acc af[TM], bf[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) af[i] = as[kk][ty + i * TY];
#pragma unroll
            for (int j = 0; j < TN; ++j) bf[j] = bs[kk][tx + j * TX];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += af[i] * bf[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gi = m0 + ty + i * TY;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gj = n0 + tx + j * TX;
            if (gi < m && gj < n) c[gi * s.cm + gj * s.cn] = static_cast<T>(acc[i][j]);
        }
    }
}

"""[1:]  # [1:]: without the newline after the opening quotes

_SIMT4_AND_DISPATCH = r"""
// SIMT with float accumulation and float4 fragments: a BM x BN tile per block, 8 x 8 outputs per thread as
// four 4 x 4 quadrants (rows ty * 4 + [0, 4) and BM / 2 + ty * 4 + [0, 4), columns likewise with tx), a warp
// 8 threads across by 4 down so each float4 read touches at most 128 contiguous bytes. The next BK slab is
// fetched into registers while the current one is multiplied; the shared tiles are double-buffered, one
// barrier per slab.
template <typename T, int BM, int BN, int BK>
__global__ void __launch_bounds__((BM / 8) * (BN / 8), 2)
kt_matmul_simt4(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                const int m, const int n, const int k, const KtMatmulStrides s) {
    constexpr int TX = BN / 8, TY = BM / 8, THREADS = TX * TY, WARPS_X = TX / 8;
    constexpr int LDA = BM + 4, LDB = BN + 4;  // padding: the transposed-operand stores are conflict-free
    constexpr int A_PER = BM * BK / THREADS, B_PER = BK * BN / THREADS;
    static_assert(TX % 8 == 0 && TY % 4 == 0, "a warp is 8 x 4 threads");
    static_assert(A_PER * THREADS == BM * BK && B_PER * THREADS == BK * BN, "tile not divisible by threads");
    __shared__ __align__(16) float as[2][BK][LDA];
    __shared__ __align__(16) float bs[2][BK][LDB];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int tx = (warp % WARPS_X) * 8 + lane % 8, ty = (warp / WARPS_X) * 4 + lane / 8;
    int tile_m, tile_n;
    kt_matmul_tile(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, tile_m, tile_n);
    const int m0 = tile_m * BM, n0 = tile_n * BN;
    a += blockIdx.z * s.ab;
    b += blockIdx.z * s.bb;
    c += blockIdx.z * s.cb;

    // this thread's share of a slab: element r is A[ia + r * a_di][ka + r * a_dk] and B[kb + r * b_dk][jb + r * b_dj]
    // (slab-relative); consecutive threads walk each operand's unit-stride dimension (coalesced loads)
    static_assert(THREADS % BM == 0 && THREADS % BN == 0 && THREADS % BK == 0, "affine per-thread element walk");
    const bool a_mfast = s.am == 1, b_nfast = s.bn == 1;
    const int ia = a_mfast ? tid % BM : tid / BK, ka = a_mfast ? tid / BM : tid % BK;
    const int a_di = a_mfast ? 0 : THREADS / BK, a_dk = a_mfast ? THREADS / BM : 0;
    const int jb = b_nfast ? tid % BN : tid / BK, kb = b_nfast ? tid / BN : tid % BK;
    const int b_dj = b_nfast ? 0 : THREADS / BK, b_dk = b_nfast ? THREADS / BN : 0;
    const long long a_step = a_di * s.am + a_dk * s.ak, b_step = b_dk * s.bk + b_dj * s.bn;
    const T* pa = a + (m0 + ia) * s.am + ka * s.ak;  // element 0 of the next slab to fetch
    const T* pb = b + kb * s.bk + (n0 + jb) * s.bn;
    float ra[A_PER], rb[B_PER];
    auto fetch = [&](const int k0) {
#pragma unroll
        for (int r = 0; r < A_PER; ++r)
            ra[r] = (m0 + ia + r * a_di < m && k0 + ka + r * a_dk < k) ? static_cast<float>(pa[r * a_step]) : 0.0f;
#pragma unroll
        for (int r = 0; r < B_PER; ++r)
            rb[r] = (n0 + jb + r * b_dj < n && k0 + kb + r * b_dk < k) ? static_cast<float>(pb[r * b_step]) : 0.0f;
        pa += BK * s.ak;
        pb += BK * s.bk;
    };
    auto stash = [&](const int buf) {
#pragma unroll
        for (int r = 0; r < A_PER; ++r) as[buf][ka + r * a_dk][ia + r * a_di] = ra[r];
#pragma unroll
        for (int r = 0; r < B_PER; ++r) bs[buf][kb + r * b_dk][jb + r * b_dj] = rb[r];
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    fetch(0);
    stash(0);
    __syncthreads();
    for (int k0 = 0, buf = 0; k0 < k; k0 += BK, buf ^= 1) {
        const bool more = k0 + BK < k;
        if (more) fetch(k0 + BK);  // in flight during the multiply below
        // the fragments of step kk + 1 are read while step kk is multiplied (two register sets)
        float af[2][8], bf[2][8];
        auto frags = [&](const int set, const int kk) {
            *reinterpret_cast<float4*>(&af[set][0]) = *reinterpret_cast<const float4*>(&as[buf][kk][ty * 4]);
            *reinterpret_cast<float4*>(&af[set][4]) = *reinterpret_cast<const float4*>(&as[buf][kk][BM / 2 + ty * 4]);
            *reinterpret_cast<float4*>(&bf[set][0]) = *reinterpret_cast<const float4*>(&bs[buf][kk][tx * 4]);
            *reinterpret_cast<float4*>(&bf[set][4]) = *reinterpret_cast<const float4*>(&bs[buf][kk][BN / 2 + tx * 4]);
        };
        frags(0, 0);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk + 1 < BK) frags((kk + 1) % 2, kk + 1);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(af[kk % 2][i], bf[kk % 2][j], acc[i][j]);
        }
        // the other buffer was last read before the previous barrier, so it can be refilled now
        if (more) stash(buf ^ 1);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int gi = m0 + (i / 4) * (BM / 2) + ty * 4 + i % 4;
        if (gi >= m) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int gj = n0 + (j / 4) * (BN / 2) + tx * 4 + j % 4;
            if (gj < n) c[gi * s.cm + gj * s.cn] = static_cast<T>(acc[i][j]);
        }
    }
}

// launches kt_matmul_simt4
template <typename T, int BM, int BN, int BK>
cudaError_t kt_matmul_simt4_launch(const T* a, const T* b, T* c, const int m, const int n, const int k,
                                   const int batch, const KtMatmulStrides s, cudaStream_t stream) {
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM, batch);
    kt_matmul_simt4<T, BM, BN, BK><<<grid, (BM / 8) * (BN / 8), 0, stream>>>(a, b, c, m, n, k, s);
    return cudaGetLastError();
}

// launches the product of one (m, n, k, batch) problem on stream
template <typename T, typename Acc>
cudaError_t kt_matmul(const T* a, const T* b, T* c, const int m, const int n, const int k, const int batch,
                      const KtMatmulStrides s, cudaStream_t stream) {
    if (m <= 0 || n <= 0 || batch <= 0) return cudaSuccess;
    if constexpr (std::is_same<T, double>::value) {
        int device = 0, major = 0, smem_optin = 0;
        KT_CUDA_CHECK(cudaGetDevice(&device));
        KT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        if (major >= 8) {
            // the cp.async pipeline where its shared-memory ring fits, else the register-staged WMMA kernel
            constexpr int BM = @DA_BM@, BN = @DA_BN@, BK = @DA_BK@, WM = @DA_WM@, WN = @DA_WN@, STAGES = @DA_STAGES@,
                          KI = @DA_KI@;
            KT_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
            if (kt_dmma_async_smem<BM, BN, BK, STAGES>() <= static_cast<size_t>(smem_optin)) {
                if (s.ak == 1 && s.bn == 1 && !(s.am == 1 && s.bk == 1)) {
                    // row-major A and B: C^T = B^T A^T, whose A (B^T) is read along m and whose B (A^T) along k,
                    // the layouts the kernel copies best
                    const KtMatmulStrides t{s.bb, s.bn, s.bk, s.ab, s.ak, s.am, s.cb, s.cn, s.cm};
                    return kt_matmul_dmma_async_launch<BM, BN, BK, WM, WN, STAGES, KI>(b, a, c, n, m, k, batch, t,
                                                                                       stream);
                }
                return kt_matmul_dmma_async_launch<BM, BN, BK, WM, WN, STAGES, KI>(a, b, c, m, n, k, batch, s, stream);
            }
            constexpr int RBM = @DMMA_BM@, RBN = @DMMA_BN@, RBK = @DMMA_BK@, RWM = @DMMA_WM@, RWN = @DMMA_WN@;
            const dim3 grid((n + RBN - 1) / RBN, (m + RBM - 1) / RBM, batch);
            kt_matmul_dmma<RBM, RBN, RBK, RWM, RWN>
                <<<grid, 32 * (RBM / RWM) * (RBN / RWN), 0, stream>>>(a, b, c, m, n, k, s);
            return cudaGetLastError();
        }
        constexpr int BM = @D_BM@, BN = @D_BN@, BK = @D_BK@, TM = @D_TM@, TN = @D_TN@;
        const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM, batch);
        kt_matmul_simt<T, Acc, BM, BN, BK, TM, TN><<<grid, (BM / TM) * (BN / TN), 0, stream>>>(a, b, c, m, n, k, s);
        return cudaGetLastError();
    } else if constexpr (std::is_same<Acc, float>::value) {
        // float accumulation: the float4-fragment kernel
        return kt_matmul_simt4_launch<T, @F4_BM@, @F4_BN@, @F4_BK@>(a, b, c, m, n, k, batch, s, stream);
    } else {
        constexpr int BM = @F_BM@, BN = @F_BN@, BK = @F_BK@, TM = @F_TM@, TN = @F_TN@;
        const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM, batch);
        kt_matmul_simt<T, Acc, BM, BN, BK, TM, TN><<<grid, (BM / TM) * (BN / TN), 0, stream>>>(a, b, c, m, n, k, s);
        return cudaGetLastError();
    }
}"""[1:]  # [1:]: without the newline after the opening quotes

CUDA_MATMUL = _HEAD + DMMA_PRIMITIVES + _SIMT + DMMA_KERNELS + _SIMT4_AND_DISPATCH


def cuda_matmul_source(dmma: tuple[int, ...] = DMMA_TILE, simt_f64: tuple[int, ...] = SIMT_TILE["double"],
                       simt_f32: tuple[int, ...] = SIMT_TILE["float"], *,
                       dmma_async: tuple[int, ...] = DMMA_ASYNC_TILE, simt4: tuple[int, ...] = SIMT4_TILE) -> str:
    """The kernels and ``kt_matmul`` with the given block shapes filled in.

    ``dmma_async`` is (BM, BN, BK, WM, WN, STAGES, KI) of the cp.async fp64 kernel (``dmma`` that of the
    register-staged fallback), ``simt4`` (BM, BN, BK) of the float-accumulating kernel."""
    text = CUDA_MATMUL
    for prefix, values, keys in (("DMMA", dmma, ("BM", "BN", "BK", "WM", "WN")),
                                 ("DA", dmma_async, ("BM", "BN", "BK", "WM", "WN", "STAGES", "KI")),
                                 ("D", simt_f64, ("BM", "BN", "BK", "TM", "TN")),
                                 ("F", simt_f32, ("BM", "BN", "BK", "TM", "TN")),
                                 ("F4", simt4, ("BM", "BN", "BK"))):
        for key, value in zip(keys, values, strict=True):
            text = text.replace(f"@{prefix}_{key}@", str(value))
    assert re.search(r"@[A-Z0-9]+_[A-Z]+@", text) is None, "unfilled block-shape placeholder"
    return text
