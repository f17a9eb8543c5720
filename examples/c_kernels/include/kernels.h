/* Shared definitions of the c_kernels example, in the style of PolyBench/C's headers:
   the data type, a literal of it, and the sizes of the fixed-size kernels (the
   workflow may define them on the command line instead). */
#ifndef KERNELS_H
#define KERNELS_H

#include <math.h>

#define DATA_TYPE double
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)

#ifndef NX
#define NX 40
#endif
#ifndef NY
#define NY 36
#endif

#endif
