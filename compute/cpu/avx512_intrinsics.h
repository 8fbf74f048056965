// <immintrin.h> for the files whose AVX-512 functions carry target attributes (the build targets generic x86-64; the
// callers pick them at run time with haveAvx512()). GCC 12 warns "__Y is used uninitialized" inside its own
// avx512fintrin.h when the intrinsics are inlined under a target attribute; the intrinsics are correct, so the warning
// is off for the rest of a file that includes this.
#pragma once

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
