"""The fp64 tensor-core kernels of the generated CUDA matrix product (``targets.cuda_matmul``).

* ``DMMA_PRIMITIVES``: the ``cp.async`` copies and one ``mma.sync`` fp64 instruction
  (m16n8k4/k8/k16 on sm_90 and later, m8n8k4 on sm_80/sm_89).
* ``DMMA_KERNELS``: ``kt_matmul_dmma`` (WMMA 8x8x4 double, register-staged: the fallback where
  shared memory is too small) and ``kt_matmul_dmma_async`` (``mma.sync`` with a ``cp.async``
  ring of K slabs in dynamic shared memory) with its shared-memory size and launcher.

Both are C++ text with ``@DMMA_*@`` / ``@DA_*@`` block-shape placeholders that
``targets.cuda_matmul.cuda_matmul_source`` fills in.
"""

# BM, BN, BK, WM, WN of the register-staged WMMA kernel (the fallback where the cp.async ring does not fit)
DMMA_TILE = (128, 128, 8, 32, 64)
# BM, BN, BK, WM, WN, STAGES, KI of the cp.async kernel; KI: the k of the sm_90 shape m16n8kKI (4, 8, 16; 0: m8n8k4).
# Chosen by timing candidates side by side against cuBLAS on fp64 4096^3 and 8192^3 products (the
# matmul tile probes under docs/measurements): 128x128 tiles, BK 32, 32x32 per warp (16 warps) and 3
# stages beat 128x64 tiles, 64x64 tiles, 64x32 or 32x64 warp tiles and m16n8k8. The k-permuted
# fragments (B as double2, strides BM + 1 and BK + 2) avoid shared-memory bank conflicts; B is copied
# 16 bytes at a time where k is its unit stride, and row-major products are computed as C^T = B^T A^T.
# Copies and MMAs each take about as long as cuBLAS's whole product, and the kernel about their sum:
# overlapping them is what would gain more.
DMMA_ASYNC_TILE = (128, 128, 32, 32, 32, 3, 16)

DMMA_PRIMITIVES = r"""
// ---- asynchronous global -> shared copies (sm_80+): 8 bytes, zero-filled when the element is out of range
// (src-size 0 reads nothing; src must still be a valid address)
__device__ __forceinline__ void kt_cp_async8(void* dst, const void* src, const bool in_range) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(d), "l"(src), "r"(in_range ? 8 : 0) : "memory");
#endif
}
// 16 bytes, the last 16 - bytes of them zero-filled (bytes 0, 8 or 16; src and dst 16-byte aligned)
__device__ __forceinline__ void kt_cp_async16(void* dst, const void* src, const int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void kt_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// wait until at most N of this thread's most recent copy groups are still in flight
template <int N>
__device__ __forceinline__ void kt_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ---- one fp64 tensor-core MMA, D += A B on an MR x 8 x KI tile; lane = 4 g + t holds
//   A[g + 8 r][t + 4 q] in a[r + (MR / 8) q], B[t + 4 q][g] in b[q], D[g + 8 r][2 t + j] in d[j + 2 r]
// MR = 8, KI = 4: m8n8k4 (sm_80+); MR = 16, KI = 4, 8 or 16: m16n8kKI (sm_90+)
template <int MR, int KI>
__device__ __forceinline__ void kt_dmma(double (&d)[MR / 4], const double (&a)[MR * KI / 32],
                                        const double (&b)[KI / 4]) {
    static_assert((MR == 8 && KI == 4) || (MR == 16 && (KI == 4 || KI == 8 || KI == 16)), "no such fp64 mma shape");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (MR == 8) {
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
            : "+d"(d[0]), "+d"(d[1])
            : "d"(a[0]), "d"(b[0]));
    } else {
#if __CUDA_ARCH__ >= 900
        if constexpr (KI == 4) {
            asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                : "d"(a[0]), "d"(a[1]), "d"(b[0]));
        } else if constexpr (KI == 8) {
            asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                "{%0, %1, %2, %3};\n"
                : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
        } else {
            asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
                : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                  "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
        }
#endif
    }
#endif
}

"""[1:]  # [1:]: without the newline after the opening quotes

DMMA_KERNELS = r"""
// fp64 on tensor cores (WMMA 8x8x4 double, sm_80+): a BM x BN tile per block, WM x WN per warp;
// the next BK slab is fetched into registers while the current one is multiplied
template <int BM, int BN, int BK, int WM, int WN>
__global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))
kt_matmul_dmma(const double* __restrict__ a, const double* __restrict__ b, double* __restrict__ c,
               const int m, const int n, const int k, const KtMatmulStrides s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    constexpr int WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * WARPS_N;
    constexpr int FM = WM / 8, FN = WN / 8;
    constexpr int LDA = BM + 4, LDB = BK + 4;  // A tile column-major (m fastest), B tile k fastest
    constexpr int A_PER = BM * BK / THREADS, B_PER = BK * BN / THREADS;
    static_assert(A_PER * THREADS == BM * BK && B_PER * THREADS == BK * BN, "tile not divisible by threads");
    __shared__ __align__(32) double as[BK * LDA];
    __shared__ __align__(32) double bs[BN * LDB];
    __shared__ __align__(32) double stage[THREADS / 32][64];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    a += blockIdx.z * s.ab;
    b += blockIdx.z * s.bb;
    c += blockIdx.z * s.cb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0);
    double ra[A_PER], rb[B_PER];
    auto fetch = [&](const int k0) {
#pragma unroll
        for (int r = 0; r < A_PER; ++r) {
            const int e = tid + r * THREADS;
            const int i = s.am == 1 ? e % BM : e / BK, kk = s.am == 1 ? e / BM : e % BK;
            const int gi = m0 + i, gk = k0 + kk;
            ra[r] = (gi < m && gk < k) ? a[gi * s.am + gk * s.ak] : 0.0;
        }
#pragma unroll
        for (int r = 0; r < B_PER; ++r) {
            const int e = tid + r * THREADS;
            const int j = s.bk == 1 ? e / BK : e % BN, kk = s.bk == 1 ? e % BK : e / BN;
            const int gj = n0 + j, gk = k0 + kk;
            rb[r] = (gj < n && gk < k) ? b[gk * s.bk + gj * s.bn] : 0.0;
        }
    };
    fetch(0);
    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int r = 0; r < A_PER; ++r) {
            const int e = tid + r * THREADS;
            const int i = s.am == 1 ? e % BM : e / BK, kk = s.am == 1 ? e / BM : e % BK;
            as[kk * LDA + i] = ra[r];
        }
#pragma unroll
        for (int r = 0; r < B_PER; ++r) {
            const int e = tid + r * THREADS;
            const int j = s.bk == 1 ? e / BK : e % BN, kk = s.bk == 1 ? e % BK : e / BN;
            bs[j * LDB + kk] = rb[r];
        }
        __syncthreads();
        if (k0 + BK < k) fetch(k0 + BK);
#pragma unroll
        for (int kk = 0; kk < BK; kk += 4) {
            wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::col_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], as + kk * LDA + wm * WM + i * 8, LDA);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], bs + (wn * WN + j * 8) * LDB + kk, LDB);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
    // each 8x8 fragment through the warp's staging tile, stored with bounds checks
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            wmma::store_matrix_sync(stage[warp], acc[i][j], 8, wmma::mem_col_major);
            __syncwarp();
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int e = lane + 32 * h, gi = m0 + wm * WM + i * 8 + e % 8, gj = n0 + wn * WN + j * 8 + e / 8;
                if (gi < m && gj < n) c[gi * s.cm + gj * s.cn] = stage[warp][e];
            }
            __syncwarp();
        }
    }
#endif
}

// fp64 on tensor cores through mma.sync: a BM x BN tile per block, WM x WN per warp, K in BK slabs held in a
// STAGES-deep ring of dynamic shared memory that cp.async fills STAGES - 1 slabs ahead of the multiply.
// Shared tiles: A column-major as[kk * (BM + 1) + i], B as bs[j * (BK + 2) + kk]. The k of one instruction
// is permuted (a product's sum over k is the same in any order): lane 4 g + t holds the instruction's k
// t + 4 q at slab row (KS / 4) t + q for A and B alike, so its B values are consecutive and load as
// double2 (KS >= 8). With these strides the A reads of a half-warp, the B double2 reads of a quarter-warp
// and the cp.async writes of either layout hit distinct banks. A B whose k is its unit stride and whose
// columns start on 16 bytes is copied two k at a time (16-byte cp.async, half the copy instructions, which
// made both the dot and the accumulate form faster; an A tile stored k-fast for the same copies spilled
// registers and ran slower, so A keeps its layout).
// KI: the k of the sm_90 instruction m16n8kKI (4, 8 or 16); KI = 0, and every device below sm_90, use m8n8k4.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int KI = 16>
__global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))
kt_matmul_dmma_async(const double* __restrict__ a, const double* __restrict__ b, double* __restrict__ c,
                     const int m, const int n, const int k, const KtMatmulStrides s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#if __CUDA_ARCH__ >= 900
    constexpr int MR = KI == 0 ? 8 : 16, KS = KI == 0 ? 4 : KI;  // instruction m and k
#else
    constexpr int MR = 8, KS = 4;
#endif
    constexpr int WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * WARPS_N;
    constexpr int FM = WM / MR, FN = WN / 8;           // instructions per warp tile along m and n
    constexpr int AR = MR * KS / 32, BR = KS / 4;      // A and B registers per instruction
    constexpr int LDA = BM + 1, LDB = BK + 2;          // odd A stride; B rows 16-byte aligned
    constexpr int KQ = KS / 4;                         // slab rows per lane and instruction
    constexpr int STAGE = BK * LDA + BN * LDB;         // doubles per ring slot: the A tile, then the B tile
    constexpr int A_PER = BM * BK / THREADS, B_PER = BK * BN / THREADS, HALF_BK = BK / 2;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0, "warp tile");
    static_assert(KI == 0 || KI == 4 || KI == 8 || KI == 16, "KI is 0, 4, 8 or 16");
    static_assert(BK % (KI == 0 ? 4 : KI) == 0, "BK a multiple of the instruction k");
    static_assert(BK % KS == 0 && BK % 4 == 0 && BN % 4 == 0, "slab");
    static_assert(A_PER * THREADS == BM * BK && B_PER * THREADS == BK * BN, "tile not divisible by threads");
    static_assert(B_PER % 2 == 0, "B copied in pairs of k");
    static_assert(STAGES >= 2, "at least two ring slots");
    extern __shared__ __align__(16) double kt_mm_smem[];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    int tile_m, tile_n;
    kt_matmul_tile(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, tile_m, tile_n);
    const int m0 = tile_m * BM, n0 = tile_n * BN;
    a += blockIdx.z * s.ab;
    b += blockIdx.z * s.bb;
    c += blockIdx.z * s.cb;
    const bool a_unit = s.am == 1, b_unit = s.bk == 1;  // operand's unit stride along the tile's fast dimension
    // B in 16-byte copies: k its unit stride, its columns (and this batch's matrix) starting on 16 bytes
    const bool b_pairs = b_unit && s.bn % 2 == 0 && reinterpret_cast<unsigned long long>(b) % 16 == 0;

    // issue the copies of the slab starting at k0 into ring slot `slot` (zero-filled outside the matrices).
    // The slot indices are recomputed per slab from an opaque copy of tid: kept live across the K loop they
    // would cost about three registers per copy and spill.
    auto load_slab = [&](const int slot, const int k0) {
        double* as = kt_mm_smem + slot * STAGE;
        double* bs = as + BK * LDA;
        int e0 = tid;
        asm volatile("" : "+r"(e0));
#pragma unroll
        for (int r = 0; r < A_PER; ++r) {
            int i, kk;
            kt_tile_slot(e0 + r * THREADS, BM, a_unit, i, kk);
            const int gi = m0 + i, gk = k0 + kk;
            const bool ok = gi < m && gk < k;
            kt_cp_async8(as + kk * LDA + i, ok ? a + gi * s.am + gk * s.ak : a, ok);
        }
        if (b_pairs) {
#pragma unroll
            for (int r = 0; r < B_PER / 2; ++r) {
                const int e = e0 + r * THREADS, j = e / HALF_BK, kk = 2 * (e % HALF_BK);
                const int gj = n0 + j, gk = k0 + kk;
                const int bytes = gj < n ? (gk + 1 < k ? 16 : gk < k ? 8 : 0) : 0;
                kt_cp_async16(bs + j * LDB + kk, bytes ? b + gk + gj * s.bn : b, bytes);
            }
            return;
        }
#pragma unroll
        for (int r = 0; r < B_PER; ++r) {
            int kk, j;
            kt_tile_slot(e0 + r * THREADS, BK, b_unit, kk, j);
            const int gj = n0 + j, gk = k0 + kk;
            const bool ok = gj < n && gk < k;
            kt_cp_async8(bs + j * LDB + kk, ok ? b + gk * s.bk + gj * s.bn : b, ok);
        }
    };

    double acc[FM][FN][MR / 4];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
#pragma unroll
            for (int v = 0; v < MR / 4; ++v) acc[i][j][v] = 0.0;

    // prologue: slabs 0 .. STAGES - 2 in flight, one commit group each (empty groups keep the count uniform)
    const int slabs = (k + BK - 1) / BK;
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (st < slabs) load_slab(st, st * BK);
        kt_cp_async_commit();
    }
    for (int kt = 0; kt < slabs; ++kt) {
        // slab kt has landed (this thread's copies), and after the barrier everyone's; every warp is also
        // done with slot (kt - 1) % STAGES, which the prefetch below refills
        kt_cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < slabs) load_slab(next % STAGES, next * BK);
        kt_cp_async_commit();

        const double* as = kt_mm_smem + (kt % STAGES) * STAGE + KQ * t * LDA + wm * WM + g;
        const double* bs = kt_mm_smem + (kt % STAGES) * STAGE + BK * LDA + (wn * WN + g) * LDB + KQ * t;
#pragma unroll
        for (int kk = 0; kk < BK; kk += KS) {
            double fa[FM][AR], fb[FN][BR];
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int q = 0; q < KS / 4; ++q)
#pragma unroll
                    for (int r = 0; r < MR / 8; ++r)
                        fa[i][r + (MR / 8) * q] = as[(kk + q) * LDA + i * MR + 8 * r];
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                if constexpr (KQ % 2 == 0) {
#pragma unroll
                    for (int q = 0; q < KQ; q += 2) {
                        const double2 v = *reinterpret_cast<const double2*>(bs + j * 8 * LDB + kk + q);
                        fb[j][q] = v.x;
                        fb[j][q + 1] = v.y;
                    }
                } else {
                    fb[j][0] = bs[j * 8 * LDB + kk];
                }
            }
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) kt_dmma<MR, KS>(acc[i][j], fa[i], fb[j]);
        }
    }
    kt_cp_async_wait<0>();  // only empty groups can remain; nothing may be in flight at exit

    // each lane stores its accumulators straight from registers, bounds-checked: D[g + 8 r][2 t + j]
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int r = 0; r < MR / 8; ++r) {
            const int gi = m0 + wm * WM + i * MR + 8 * r + g;
            if (gi >= m) continue;
#pragma unroll
            for (int j = 0; j < FN; ++j) {
#pragma unroll
                for (int v = 0; v < 2; ++v) {
                    const int gj = n0 + wn * WN + j * 8 + 2 * t + v;
                    if (gj < n) c[gi * s.cm + gj * s.cn] = acc[i][j][v + 2 * r];
                }
            }
        }
    }
#endif
}

// dynamic shared memory of kt_matmul_dmma_async: STAGES ring slots of the A and B tiles
template <int BM, int BN, int BK, int STAGES>
constexpr size_t kt_dmma_async_smem() {
    return size_t(STAGES) * (BK * (BM + 1) + BN * (BK + 2)) * sizeof(double);
}

// launches kt_matmul_dmma_async (opting in to its dynamic shared memory first)
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int KI>
cudaError_t kt_matmul_dmma_async_launch(const double* a, const double* b, double* c, const int m, const int n,
                                        const int k, const int batch, const KtMatmulStrides s, cudaStream_t stream) {
    constexpr size_t smem = kt_dmma_async_smem<BM, BN, BK, STAGES>();
    void (*kernel)(const double*, const double*, double*, int, int, int, KtMatmulStrides) =
        kt_matmul_dmma_async<BM, BN, BK, WM, WN, STAGES, KI>;
    KT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM, batch);
    kernel<<<grid, 32 * (BM / WM) * (BN / WN), smem, stream>>>(a, b, c, m, n, k, s);
    return cudaGetLastError();
}

"""[1:]  # [1:]: without the newline after the opening quotes
