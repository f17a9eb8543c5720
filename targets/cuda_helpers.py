"""The C++ text every generated ``.cu`` file may carry in its detail namespace or above it:
the error check around CUDA calls, the launcher's device buffer, the reduction operators with
the block reduction and atomic combine, the grid helpers of the launches and the ordered
16-byte load."""

CHECK = """#ifndef KT_CUDA_CHECK
// every CUDA call is checked: print file:line and the error string, then return the error
#define KT_CUDA_CHECK(call)                                                                  \\
    do {                                                                                     \\
        const cudaError_t kt_err_ = (call);                                                  \\
        if (kt_err_ != cudaSuccess) {                                                        \\
            fprintf(stderr, "%s:%d: %s: %s\\n", __FILE__, __LINE__, #call, cudaGetErrorString(kt_err_)); \\
            return kt_err_;                                                                  \\
        }                                                                                    \\
    } while (0)
#endif"""

BUFFER = """// a device allocation freed when the launcher returns (also on its early returns)
template <typename T>
struct kt_buffer {
    T* ptr = nullptr;
    cudaError_t status;
    explicit kt_buffer(size_t count) { status = cudaMalloc(&ptr, (count > 0 ? count : 1) * sizeof(T)); }
    ~kt_buffer() { if (ptr) cudaFree(ptr); }
    kt_buffer(const kt_buffer&) = delete;
    kt_buffer& operator=(const kt_buffer&) = delete;
};"""

REDUCE = """// reduction operators
struct KtSum { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct KtProd { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct KtMax { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
struct KtMin { template <typename T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };

// block-wide reduction (blockDim.x a multiple of 32, at most 1024): warp shuffles, then
// one value per warp through shared memory; the result is valid in thread 0 (warps are
// numbered by the linear thread index, so 2-D and 3-D blocks of whole warps work too)
template <typename T, typename Op>
__device__ T kt_block_reduce(T v, Op op, T identity) {
    __shared__ T warp_vals[32];
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int lane = t % 32;
    const int warp = t / 32;
    for (int offset = 16; offset > 0; offset /= 2) {
        v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    __syncthreads();  // warp_vals may still be read by a previous reduction
    if (lane == 0) {
        warp_vals[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x * blockDim.y * blockDim.z / 32) ? warp_vals[lane] : identity;
        for (int offset = 16; offset > 0; offset /= 2) {
            v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
        }
    }
    return v;
}

// combine v into *acc atomically: native atomicAdd where it exists, else a CAS loop
template <typename T, typename Op>
__device__ void kt_atomic_combine(T* acc, T v, Op op) {
    if constexpr (std::is_same_v<Op, KtSum> && (std::is_same_v<T, double> || std::is_same_v<T, float> ||
                                                 std::is_same_v<T, int>)) {
        atomicAdd(acc, v);
    } else {
        static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte reductions only");
        using U = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
        U* address = reinterpret_cast<U*>(acc);
        U old = *address;
        U assumed;
        do {
            assumed = old;
            T current;
            memcpy(&current, &assumed, sizeof(T));
            const T next = op(current, v);
            U bits;
            memcpy(&bits, &next, sizeof(T));
            old = atomicCAS(address, assumed, bits);
        } while (assumed != old);
    }
}"""

FIT_WIDTH = """// threads along x of a block of `block` threads for a loop of `trip` iterations: the widest of
// block, block / 2, ..., 32 that leaves at most 1/32 of the lanes idle, else the one leaving fewest
inline int kt_fit_width(int trip, int block) {
    int best = block, fewest = INT_MAX;
    for (int w = block; ; w /= 2) {
        const int idle = (trip + w - 1) / w * w - trip;
        if (idle * 32LL <= trip) return w;
        if (idle < fewest) { best = w; fewest = idle; }
        if (w % 64 != 0) return best;
    }
}"""

SMALL_NEST = """// whether a nest of `iterations` is too small to give every multiprocessor a block of 256
// threads (fewer than 1/SHARE of the threads the device holds at once): such a nest runs blocks of
// one warp, spread over more multiprocessors
inline bool kt_small_nest(long long iterations) {
    static const long long resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
        return (long long)sms * per_sm;
    }();
    return iterations * SHARE < resident;
}"""

TILE_GRID = """// a grid of x blocks by `tiles` tiles over y and z (at most 65535 along y): a block's tile is
// blockIdx.y + gridDim.y * blockIdx.z, and tiles past the last find nothing to do
inline dim3 kt_tile_grid(unsigned x, unsigned long long tiles) {
    const unsigned y = (unsigned)(tiles < 65535 ? tiles : 65535);
    return dim3(x, y, (unsigned)((tiles + y - 1) / y));
}"""


LOAD2_ORDERED = """// a 16-byte load issued in program order among the thread's other ordered loads (ld.volatile:
// the compiler neither reorders nor merges it). A swap loads its arrays in the order it stores them:
// the compiler's own order loads the array stored second first, which was the slower of the two
__device__ __forceinline__ double2 kt_load2_ordered(const double* p) {
    double2 v;
    asm volatile("ld.volatile.global.v2.f64 {%0, %1}, [%2];"
                 : "=d"(v.x), "=d"(v.y) : "l"(__cvta_generic_to_global(p)) : "memory");
    return v;
}"""

PAIR_REDUCE = """// a first-max/min pair reduction (IDAMAX): (a value, the iteration that first reached it).
// KtPairBetter<Max, FirstMin>: whether pair (v, l) replaces (w, m): a larger (smaller) value,
// or an equal one reached first (a smaller loc, or a larger in a loop counting down)
template <bool Max, bool FirstMin>
struct KtPairBetter {
    template <typename T, typename I>
    __host__ __device__ bool operator()(T v, I l, T w, I m) const {
        return (Max ? v > w : v < w) || (v == w && (FirstMin ? l < m : l > m));
    }
};

// the pairs of a block joined with warp shuffles, then one pair per warp through shared memory;
// the result in thread 0. Joins in any order give the same pair: the order is total
template <typename T, typename I, typename Better>
__device__ void kt_block_reduce_pair(T& v, I& l, Better better, T identity, I loc_identity) {
    __shared__ T warp_v[32];
    __shared__ I warp_l[32];
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int lane = t % 32;
    const int warp = t / 32;
    for (int offset = 16; offset > 0; offset /= 2) {
        const T ov = __shfl_down_sync(0xffffffffu, v, offset);
        const I ol = __shfl_down_sync(0xffffffffu, l, offset);
        if (better(ov, ol, v, l)) { v = ov; l = ol; }
    }
    __syncthreads();  // warp_v may still be read by a previous reduction
    if (lane == 0) { warp_v[warp] = v; warp_l[warp] = l; }
    __syncthreads();
    if (warp == 0) {
        const bool have = lane < (int)(blockDim.x * blockDim.y * blockDim.z / 32);
        v = have ? warp_v[lane] : identity;
        l = have ? warp_l[lane] : loc_identity;
        for (int offset = 16; offset > 0; offset /= 2) {
            const T ov = __shfl_down_sync(0xffffffffu, v, offset);
            const I ol = __shfl_down_sync(0xffffffffu, l, offset);
            if (better(ov, ol, v, l)) { v = ov; l = ol; }
        }
    }
}

// every block's pair stored at its index; the last block to finish joins them all into
// *acc_v, *acc_l (one kernel, no atomics on pairs: `done` counts the blocks, starting at 0)
template <typename T, typename I, typename Better>
__device__ void kt_pair_finish(T v, I l, Better better, T identity, I loc_identity, T* vals, I* locs,
                               unsigned* done, T* acc_v, I* acc_l) {
    __shared__ bool last;
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    kt_block_reduce_pair(v, l, better, identity, loc_identity);
    if (t == 0) {
        const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        vals[b] = v;
        locs[b] = l;
        __threadfence();  // the pair visible to every block before it is counted
        last = atomicAdd(done, 1u) == blocks - 1;
    }
    __syncthreads();
    if (!last) return;
    v = identity;
    l = loc_identity;
#pragma unroll 4
    for (unsigned b = t; b < blocks; b += threads) {
        const T ov = __ldcg(vals + b);  // from L2: other blocks wrote them
        const I ol = __ldcg(locs + b);
        if (better(ov, ol, v, l)) { v = ov; l = ol; }
    }
    kt_block_reduce_pair(v, l, better, identity, loc_identity);
    if (t == 0) { *acc_v = v; *acc_l = l; }
}"""
