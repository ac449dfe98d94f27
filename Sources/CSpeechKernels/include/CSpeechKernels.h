#ifndef PRACTICED_CSPEECHKERNELS_H
#define PRACTICED_CSPEECHKERNELS_H

// The speech models' integer inner loops for the instruction sets baseline x86-64 lacks
// (issue 70), each compiled for its own target with clang's per-function
// __attribute__((target(...))): the package is built for the baseline and takes no flags.
// Only kernels: no model, no graph, no allocation, no state. Every variant computes exactly
// what the portable Swift kernel computes (integer sums, exact in any order); which one runs
// is chosen once, from the CPU's features (practiced_kernels_supported), in Swift.

#include <stddef.h>
#include <stdint.h>

/// The variants, in the order of preference. Portable is the Swift kernel itself.
enum {
    PRACTICED_KERNELS_PORTABLE = 0,
    /// x86-64 AVX2: `vpmaddwd` on 16 Int16 lanes (Haswell, Zen 1 and later; the N100).
    PRACTICED_KERNELS_AVX2 = 1,
    /// x86-64 AVX-VNNI: `vpdpwssd` (multiply, add pairs and accumulate in one) on 16 lanes,
    /// VEX-coded (Alder Lake and later, the N100; Zen 5).
    PRACTICED_KERNELS_AVX_VNNI = 2,
    /// x86-64 AVX-512 VNNI: `vpdpwssd` on 32 lanes (Ice Lake server, Zen 4).
    PRACTICED_KERNELS_AVX512_VNNI = 3,
};

/// Whether this CPU and the kernel that runs on it can execute `variant` (the instructions
/// and the register state the OS saves: XCR0 through xgetbv). 0 or 1.
int practiced_kernels_supported(int variant);

/// C[m][n] = sum over k of A[m][k] * B[n][k]: Int16 A (`rows` x `depth`, rows `stride_a`
/// apart), Int16 B (`columns` x `depth`, `stride_b` apart), Int32 C (`stride_c` apart).
/// `depth` a multiple of 8. `variant` must be one practiced_kernels_supported accepts and
/// not PORTABLE; any other does nothing and returns 0 (1 when it ran).
int practiced_gemm_s16(int variant, const int16_t *a, ptrdiff_t rows, ptrdiff_t depth, ptrdiff_t stride_a,
                       const int16_t *b, ptrdiff_t columns, ptrdiff_t stride_b, int32_t *c, ptrdiff_t stride_c);

#endif
