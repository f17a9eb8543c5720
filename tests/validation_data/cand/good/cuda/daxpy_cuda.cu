// Hand-written stand-in for generated CUDA output.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define KT_CHECK(call)                                                                   \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

__global__ void daxpy_k0(int n, double da, const double* dx, long ix0, int incx, double* dy, long iy0, int incy) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dy[iy0 + (long)i * incy] += da * dx[ix0 + (long)i * incx];
}

void daxpy_cuda(int n, double da, const double* dx, int incx, double* dy, int incy, cudaStream_t stream) {
  long ix0 = incx < 0 ? (long)(-n + 1) * incx : 0, iy0 = incy < 0 ? (long)(-n + 1) * incy : 0;
  daxpy_k0<<<(n + 255) / 256, 256, 0, stream>>>(n, da, dx, ix0, incx, dy, iy0, incy);
  KT_CHECK(cudaGetLastError());
}

extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {
  if (n <= 0 || da == 0.0) return;
  size_t lx = 1 + (size_t)(n - 1) * std::abs(incx), ly = 1 + (size_t)(n - 1) * std::abs(incy);
  double *d_x, *d_y;
  KT_CHECK(cudaMalloc(&d_x, lx * sizeof(double)));
  KT_CHECK(cudaMalloc(&d_y, ly * sizeof(double)));
  KT_CHECK(cudaMemcpy(d_x, dx, lx * sizeof(double), cudaMemcpyHostToDevice));
  KT_CHECK(cudaMemcpy(d_y, dy, ly * sizeof(double), cudaMemcpyHostToDevice));
  daxpy_cuda(n, da, d_x, incx, d_y, incy, 0);
  KT_CHECK(cudaMemcpy(dy, d_y, ly * sizeof(double), cudaMemcpyDeviceToHost));
  KT_CHECK(cudaFree(d_x));
  KT_CHECK(cudaFree(d_y));
}
