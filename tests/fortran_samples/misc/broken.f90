subroutine ok(n, x)
  integer :: n
  real :: x(n)
  x(1) = 1.0
end subroutine ok

subroutine bad(n, x)
  integer :: n
  real :: x(n)
  x(1) = = 2.0
end subroutine bad
