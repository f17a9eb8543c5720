subroutine clip(n, x)
#include "consts.h"
  integer, intent(in) :: n
  real(8), intent(inout) :: x(nmax)
  integer :: i
#ifdef USE_MAX
  do i = 1, n
    x(i) = max(x(i), 0.0d0)
  end do
#else
  do i = 1, n
    x(i) = min(x(i), 0.0d0)
  end do
#endif
end subroutine clip
