// Hand-written stand-in for generated Kokkos output: ddot with parallel_reduce.
#include <Kokkos_Core.hpp>
#include <cstdlib>

namespace {
using HostView = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
void kt_ensure_kokkos() {
  if (!Kokkos::is_initialized()) {
    Kokkos::initialize();
    std::atexit([] { if (Kokkos::is_initialized()) Kokkos::finalize(); });
  }
}
}  // namespace

double ddot_kokkos(int n, Kokkos::View<const double*> dx, int incx, Kokkos::View<const double*> dy, int incy) {
  const long ix0 = incx < 0 ? (long)(-n + 1) * incx : 0;
  const long iy0 = incy < 0 ? (long)(-n + 1) * incy : 0;
  double t = 0.0;
  Kokkos::parallel_reduce("ddot", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(const int i, double& acc) {
    acc += dx(ix0 + (long)i * incx) * dy(iy0 + (long)i * incy);
  }, t);
  return t;
}

extern "C" double kt_ddot(int n, double* dx, int incx, double* dy, int incy) {
  if (n <= 0) return 0.0;
  kt_ensure_kokkos();
  const size_t lx = 1 + (size_t)(n - 1) * std::abs(incx), ly = 1 + (size_t)(n - 1) * std::abs(incy);
  Kokkos::View<double*> vx("dx", lx), vy("dy", ly);
  Kokkos::deep_copy(vx, HostView(dx, lx));
  Kokkos::deep_copy(vy, HostView(dy, ly));
  return ddot_kokkos(n, vx, incx, vy, incy);
}
