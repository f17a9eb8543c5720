! matmul.f90 -- matrix-matrix products, column-major, as in the reference DGEMM.
!
! matmul_nn:  C := alpha*A*B + beta*C     A m-by-k, B k-by-n, C m-by-n
!             loop order j, l, i: the innermost loop runs down a column of C and A
! matmul_tn:  C := alpha*A**T*B + beta*C  A k-by-m, B k-by-n, C m-by-n
!             loop order j, i, l: one dot product per element of C

subroutine matmul_nn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
  implicit none
  integer, intent(in) :: m, n, k, lda, ldb, ldc
  real(8), intent(in) :: alpha, beta
  real(8), intent(in) :: a(lda, *), b(ldb, *)
  real(8), intent(inout) :: c(ldc, *)
  real(8) :: temp
  integer :: i, j, l

  if (m == 0 .or. n == 0) return
  do j = 1, n
     if (beta == 0.0d0) then
        do i = 1, m
           c(i, j) = 0.0d0
        end do
     else if (beta /= 1.0d0) then
        do i = 1, m
           c(i, j) = beta*c(i, j)
        end do
     end if
     do l = 1, k
        temp = alpha*b(l, j)
        do i = 1, m
           c(i, j) = c(i, j) + temp*a(i, l)
        end do
     end do
  end do
end subroutine matmul_nn

subroutine matmul_tn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
  implicit none
  integer, intent(in) :: m, n, k, lda, ldb, ldc
  real(8), intent(in) :: alpha, beta
  real(8), intent(in) :: a(lda, *), b(ldb, *)
  real(8), intent(inout) :: c(ldc, *)
  real(8) :: temp
  integer :: i, j, l

  if (m == 0 .or. n == 0) return
  do j = 1, n
     do i = 1, m
        temp = 0.0d0
        do l = 1, k
           temp = temp + a(l, i)*b(l, j)
        end do
        if (beta == 0.0d0) then
           c(i, j) = alpha*temp
        else
           c(i, j) = alpha*temp + beta*c(i, j)
        end if
     end do
  end do
end subroutine matmul_tn
