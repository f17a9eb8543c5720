// vswap at the region table's size (73,468,397 elements, the pairs from element 2): the generated
// launcher and its loop2 kernel against hand double2 kernels whose loads the compiler issues in
// the order of the stores (dx, dy, then dx, dy) or the other way round (dy first). Build from the
// repository root after `scripts/run-examples` (it includes the generated file):
//   nvcc -O2 -std=c++17 -arch=sm_90 benchmarks/probes/vswap_load_order.cu -o probe && ./probe
// `cuobjdump -sass` of the kernels shows the order of their LDG.E.128 instructions.
#include "probe_timing.cuh"
#include "../../examples/fortran_numerics/out/numerics_blas1/cuda/vswap_cuda.cu"

// loads written dx first: this compiler issues dx first (store order)
__global__ void hand_store_order(int lo, int trip, double* __restrict__ dx, double* __restrict__ dy) {
  const int head = (lo & 1) ? 1 : 0;
  const int nv = (trip - head) / 2;
  double2* __restrict__ vx = reinterpret_cast<double2*>(dx + lo + head);
  double2* __restrict__ vy = reinterpret_cast<double2*>(dy + lo + head);
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < nv) { const double2 a = vx[k]; const double2 b = vy[k]; vx[k] = b; vy[k] = a; }
}
// loads written dy first: issued dy first (the array stored second loaded first)
__global__ void hand_reversed(int lo, int trip, double* __restrict__ dx, double* __restrict__ dy) {
  const int head = (lo & 1) ? 1 : 0;
  const int nv = (trip - head) / 2;
  double2* __restrict__ vx = reinterpret_cast<double2*>(dx + lo + head);
  double2* __restrict__ vy = reinterpret_cast<double2*>(dy + lo + head);
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < nv) { const double2 b = vy[k]; const double2 a = vx[k]; vx[k] = b; vy[k] = a; }
}
// a signed element index (the generated kernel's addressing): issued dy first as well
__global__ void hand_element_index(int lo, int trip, double* __restrict__ dx, double* __restrict__ dy) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = lo + 2 * k;
  if (2 * k + 1 < trip) {
    const double2 a = *reinterpret_cast<const double2*>(&dx[i]);
    const double2 b = *reinterpret_cast<const double2*>(&dy[i]);
    *reinterpret_cast<double2*>(&dx[i]) = b;
    *reinterpret_cast<double2*>(&dy[i]) = a;
  }
}

int main() {
  CK(cudaMalloc(&g_flush, FLUSH));
  const int n = 73468397, m = n % 3, lo = m, trip = n - m;
  const double bytes = 4.0 * 8 * n;
  double *x, *y, *x0, *y0;
  CK(cudaMalloc(&x, (size_t)n * 8)); CK(cudaMalloc(&y, (size_t)n * 8));
  CK(cudaMalloc(&x0, (size_t)n * 8)); CK(cudaMalloc(&y0, (size_t)n * 8));
  fill<<<4096, 256>>>(x0, n, 0.3); fill<<<4096, 256>>>(y0, n, 0.7);
  using namespace kt_vswap_detail;
  const unsigned g = kt_grid((trip + 1) / 2, 256, INT_MAX);
  // one swap of each form against the inputs swapped (the hand forms leave the odd last element)
  auto check = [&](const char* name, auto launch, int skip) {
    CK(cudaMemcpy(x, x0, (size_t)n * 8, cudaMemcpyDeviceToDevice)); CK(cudaMemcpy(y, y0, (size_t)n * 8, cudaMemcpyDeviceToDevice));
    launch(); CK(cudaDeviceSynchronize());
    printf("check %-22s x==y0: %.0f, y==x0: %.0f elements differ\n", name,
           maxdiff(x + lo, y0 + lo, trip - skip), maxdiff(y + lo, x0 + lo, trip - skip));
  };
  check("generated launcher", [&] { CK(vswap_cuda(n, x, 1, y, 1, 0)); }, 0);
  check("hand, store order", [&] { hand_store_order<<<g, 256>>>(lo, trip, x, y); }, trip & 1);
  check("hand, reversed", [&] { hand_reversed<<<g, 256>>>(lo, trip, x, y); }, trip & 1);
  check("hand, element index", [&] { hand_element_index<<<g, 256>>>(lo, trip, x, y); }, trip & 1);
  for (int round = 0; round < 3; ++round) {
    rep("generated launcher (loop1 + loop2)", bytes, timeit([&] { vswap_cuda(n, x, 1, y, 1, 0); }));
    rep("generated loop2", bytes, timeit([&] { vswap_loop2<<<g, 256>>>(n, m + 1, trip, x, y); }));
    rep("hand, loads in store order", bytes, timeit([&] { hand_store_order<<<g, 256>>>(lo, trip, x, y); }));
    rep("hand, loads reversed", bytes, timeit([&] { hand_reversed<<<g, 256>>>(lo, trip, x, y); }));
    rep("hand, signed element index", bytes, timeit([&] { hand_element_index<<<g, 256>>>(lo, trip, x, y); }));
  }
  return 0;
}
