// What the probes share: checked CUDA calls, timing (CUDA events, L2 flushed by a 512 MiB memset
// between runs, median of 25 after 3 warm-up), input fill, a count of differing elements, the report line.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

static char* g_flush; static const size_t FLUSH = 512u << 20;
template <class F> float timeit(F launch, int reps = 25) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for (int r = 0; r < reps + 3; ++r) {
    CK(cudaMemsetAsync(g_flush, r & 0xff, FLUSH));
    cudaEventRecord(a); launch(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (r >= 3) t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
static unsigned cdiv(long a, long b) { return (unsigned)((a + b - 1) / b); }
__global__ void fill(double* p, size_t n, double s) { for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = sin(s * (double)(i % 100003)); }
__global__ void count_diff(const double* a, const double* b, size_t n, unsigned long long* bad) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (!(fabs(a[i] - b[i]) <= 1e-9 * (1.0 + fabs(b[i])))) atomicAdd(bad, 1ull);
}
static double maxdiff(const double* a, const double* b, size_t n) {  // the number of elements that differ
  unsigned long long* d; unsigned long long h = 0; CK(cudaMalloc(&d, 8)); CK(cudaMemset(d, 0, 8));
  count_diff<<<4096, 256>>>(a, b, n, d); CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost)); cudaFree(d); return (double)h;
}
static const double ROOF = 4284.0;
static void rep(const char* name, double bytes, float ms) { printf("%-44s %8.3f ms %7.0f GB/s %4.0f%%\n", name, ms, bytes / ms / 1e6, 100.0 * bytes / ms / 1e6 / ROOF); fflush(stdout); }
