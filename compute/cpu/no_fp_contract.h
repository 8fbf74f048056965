// For the vector loops that must give the same bits as the scalar ones (resize_test and normalization_test check): the
// compiler may not fuse a product and a sum into one FMA (one rounding instead of two) for the rest of a file that
// includes this.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
