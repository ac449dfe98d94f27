// See include/CSpeechKernels.h. Each kernel is the portable Swift kernel's loop
// (SpeechModels/Kernels/IntegerGEMM.swift): three rows of A by three of B at a time, nine
// accumulators summed whole at the end, on wider registers and, with VNNI, the multiply, the
// pairwise add and the accumulation in one instruction.

#include "CSpeechKernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/// XCR0: which register states the OS saves on a context switch.
static uint64_t xcr0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

int practiced_kernels_supported(int variant) {
    if (variant == PRACTICED_KERNELS_PORTABLE) return 1;
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    int osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
    if (!osxsave || !avx) return 0;
    uint64_t state = xcr0();
    int ymm = (state & 0x6) == 0x6, zmm = (state & 0xE6) == 0xE6;
    if (!ymm || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    int avx2 = (ebx >> 5) & 1, avx512f = (ebx >> 16) & 1, avx512bw = (ebx >> 30) & 1, avx512vl = (ebx >> 31) & 1;
    int avx512vnni = (ecx >> 11) & 1;
    unsigned eax1 = 0, ebx1, ecx1, edx1;
    int avxvnni = __get_cpuid_count(7, 1, &eax1, &ebx1, &ecx1, &edx1) && ((eax1 >> 4) & 1);
    switch (variant) {
    case PRACTICED_KERNELS_AVX2: return avx2;
    case PRACTICED_KERNELS_AVX_VNNI: return avx2 && avxvnni;
    case PRACTICED_KERNELS_AVX512_VNNI: return avx2 && zmm && avx512f && avx512bw && avx512vl && avx512vnni;
    default: return 0;
    }
}

// The three rows and three columns a block takes (a short block repeats its first row or
// column, and only the real ones are stored), as the Swift kernel does.
#define BLOCK_POINTERS                                                               \
    ptrdiff_t mr = rows - m < 3 ? rows - m : 3, nr = columns - n < 3 ? columns - n : 3; \
    const int16_t *a0 = a + m * stride_a;                                            \
    const int16_t *a1 = a0 + (mr > 1 ? stride_a : 0), *a2 = a0 + (mr > 2 ? 2 * stride_a : 0); \
    const int16_t *b0 = b + n * stride_b;                                            \
    const int16_t *b1 = b0 + (nr > 1 ? stride_b : 0), *b2 = b0 + (nr > 2 ? 2 * stride_b : 0);

#define STORE_BLOCK(sum)                                                             \
    int32_t *r0 = c + m * stride_c + n;                                              \
    for (ptrdiff_t i = 0; i < mr; i++)                                               \
        for (ptrdiff_t j = 0; j < nr; j++) r0[i * stride_c + j] = sum[i][j];

__attribute__((target("avx2"))) static inline int32_t sum256(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/// The last 8 lanes of a depth that is not a multiple of 16, as 128-bit `pmaddwd`s.
#define TAIL8(acc, xa, wb) acc = _mm256_add_epi32(acc, _mm256_castsi128_si256(_mm_madd_epi16(xa, wb)))

// The 256-bit kernels, one body for both: `MADD(acc, x, w)` multiplies 16 Int16 lanes,
// adds each pair and accumulates into 8 Int32 lanes (AVX2: `vpmaddwd` then `vpaddd`;
// AVX-VNNI: `vpdpwssd`, one instruction).
#define MADD_AVX2(acc, x, w) _mm256_add_epi32(acc, _mm256_madd_epi16(x, w))
#define MADD_AVX_VNNI(acc, x, w) _mm256_dpwssd_avx_epi32(acc, x, w)

#define GEMM_256(NAME, TARGET, MADD)                                                                                          \
    __attribute__((target(TARGET))) static void NAME(const int16_t *a, ptrdiff_t rows, ptrdiff_t depth, ptrdiff_t stride_a,   \
                                                     const int16_t *b, ptrdiff_t columns, ptrdiff_t stride_b, int32_t *c,    \
                                                     ptrdiff_t stride_c) {                                                    \
        ptrdiff_t whole = depth & ~(ptrdiff_t)15;                                                                             \
        for (ptrdiff_t m = 0; m < rows; m += 3) {                                                                             \
            for (ptrdiff_t n = 0; n < columns; n += 3) {                                                                      \
                BLOCK_POINTERS                                                                                                \
                __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00,      \
                        c21 = c00, c22 = c00;                                                                                 \
                ptrdiff_t k = 0;                                                                                              \
                for (; k < whole; k += 16) {                                                                                  \
                    __m256i w0 = _mm256_loadu_si256((const __m256i *)(b0 + k)), w1 = _mm256_loadu_si256((const __m256i *)(b1 + k)); \
                    __m256i w2 = _mm256_loadu_si256((const __m256i *)(b2 + k));                                               \
                    __m256i x = _mm256_loadu_si256((const __m256i *)(a0 + k));                                                \
                    c00 = MADD(c00, x, w0); c01 = MADD(c01, x, w1); c02 = MADD(c02, x, w2);                                   \
                    x = _mm256_loadu_si256((const __m256i *)(a1 + k));                                                        \
                    c10 = MADD(c10, x, w0); c11 = MADD(c11, x, w1); c12 = MADD(c12, x, w2);                                   \
                    x = _mm256_loadu_si256((const __m256i *)(a2 + k));                                                        \
                    c20 = MADD(c20, x, w0); c21 = MADD(c21, x, w1); c22 = MADD(c22, x, w2);                                   \
                }                                                                                                             \
                if (k < depth) {                                                                                              \
                    __m128i w0 = _mm_loadu_si128((const __m128i *)(b0 + k)), w1 = _mm_loadu_si128((const __m128i *)(b1 + k)); \
                    __m128i w2 = _mm_loadu_si128((const __m128i *)(b2 + k));                                                  \
                    __m128i x0 = _mm_loadu_si128((const __m128i *)(a0 + k)), x1 = _mm_loadu_si128((const __m128i *)(a1 + k)); \
                    __m128i x2 = _mm_loadu_si128((const __m128i *)(a2 + k));                                                  \
                    TAIL8(c00, x0, w0); TAIL8(c01, x0, w1); TAIL8(c02, x0, w2);                                               \
                    TAIL8(c10, x1, w0); TAIL8(c11, x1, w1); TAIL8(c12, x1, w2);                                               \
                    TAIL8(c20, x2, w0); TAIL8(c21, x2, w1); TAIL8(c22, x2, w2);                                               \
                }                                                                                                             \
                int32_t sum[3][3] = {{sum256(c00), sum256(c01), sum256(c02)}, {sum256(c10), sum256(c11), sum256(c12)},       \
                                     {sum256(c20), sum256(c21), sum256(c22)}};                                               \
                STORE_BLOCK(sum)                                                                                              \
            }                                                                                                                 \
        }                                                                                                                     \
    }

GEMM_256(gemm_avx2, "avx2", MADD_AVX2)
GEMM_256(gemm_avx_vnni, "avx2,avxvnni", MADD_AVX_VNNI)

// Four rows of A by four of B at a time: sixteen accumulators, four weight vectors and a row
// vector take 21 of AVX-512's 32 registers. The sixteen sums are reduced together: the
// accumulators are folded pairwise (512 → 256 → 128 bits, then across lanes): about 14
// instructions for four sums where four separate reductions take about 36, and at
// attention's depth of 64 (two steps of the loop) the reductions outnumbered the
// multiply-adds.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static inline __m128i fold4(__m512i s0, __m512i s1, __m512i s2, __m512i s3) {
    // 512 → 256: each vector's halves added, two vectors per register.
    __m512i a01 = _mm512_add_epi32(_mm512_shuffle_i64x2(s0, s1, 0x44), _mm512_shuffle_i64x2(s0, s1, 0xEE));
    __m512i a23 = _mm512_add_epi32(_mm512_shuffle_i64x2(s2, s3, 0x44), _mm512_shuffle_i64x2(s2, s3, 0xEE));
    // 256 → 128: each of the four 256-bit halves' 128-bit halves added.
    __m512i b = _mm512_add_epi32(_mm512_shuffle_i64x2(a01, a23, 0x88), _mm512_shuffle_i64x2(a01, a23, 0xDD));
    // Now lane group g (128 bits) holds s_g's four partial sums. Across the four lanes of each group:
    __m512i c = _mm512_add_epi32(b, _mm512_shuffle_epi32(b, (_MM_PERM_ENUM)0x4E));
    c = _mm512_add_epi32(c, _mm512_shuffle_epi32(c, (_MM_PERM_ENUM)0xB1));
    // Lane 0 of each group is its sum: gather them into one 128-bit vector.
    __m512i picked = _mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), c);
    return _mm512_castsi512_si128(picked);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void gemm_avx512_vnni(
    const int16_t *a, ptrdiff_t rows, ptrdiff_t depth, ptrdiff_t stride_a, const int16_t *b, ptrdiff_t columns, ptrdiff_t stride_b,
    int32_t *c, ptrdiff_t stride_c) {
    ptrdiff_t whole = depth & ~(ptrdiff_t)31;
    // The last 8, 16 or 24 lanes through a masked load (zeros beyond the depth add nothing).
    __mmask32 tail = (__mmask32)((1ull << (depth - whole)) - 1);
    for (ptrdiff_t m = 0; m < rows; m += 4) {
        ptrdiff_t mr = rows - m < 4 ? rows - m : 4;
        const int16_t *ap[4];
        for (int i = 0; i < 4; i++) ap[i] = a + (m + (i < mr ? i : 0)) * stride_a;
        for (ptrdiff_t n = 0; n < columns; n += 4) {
            ptrdiff_t nr = columns - n < 4 ? columns - n : 4;
            const int16_t *bp[4];
            for (int j = 0; j < 4; j++) bp[j] = b + (n + (j < nr ? j : 0)) * stride_b;
            __m512i acc[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_si512();
            ptrdiff_t k = 0;
            for (; k < whole; k += 32) {
                __m512i w[4];
                for (int j = 0; j < 4; j++) w[j] = _mm512_loadu_si512(bp[j] + k);
                for (int i = 0; i < 4; i++) {
                    __m512i x = _mm512_loadu_si512(ap[i] + k);
                    for (int j = 0; j < 4; j++) acc[i][j] = _mm512_dpwssd_epi32(acc[i][j], x, w[j]);
                }
            }
            if (k < depth) {
                __m512i w[4];
                for (int j = 0; j < 4; j++) w[j] = _mm512_maskz_loadu_epi16(tail, bp[j] + k);
                for (int i = 0; i < 4; i++) {
                    __m512i x = _mm512_maskz_loadu_epi16(tail, ap[i] + k);
                    for (int j = 0; j < 4; j++) acc[i][j] = _mm512_dpwssd_epi32(acc[i][j], x, w[j]);
                }
            }
            for (ptrdiff_t i = 0; i < mr; i++) {
                int32_t sums[4];
                _mm_storeu_si128((__m128i *)sums, fold4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
                for (ptrdiff_t j = 0; j < nr; j++) c[(m + i) * stride_c + n + j] = sums[j];
            }
        }
    }
}

int practiced_gemm_s16(int variant, const int16_t *a, ptrdiff_t rows, ptrdiff_t depth, ptrdiff_t stride_a,
                       const int16_t *b, ptrdiff_t columns, ptrdiff_t stride_b, int32_t *c, ptrdiff_t stride_c) {
    if (depth % 8 != 0) return 0;
    switch (variant) {
    case PRACTICED_KERNELS_AVX2: gemm_avx2(a, rows, depth, stride_a, b, columns, stride_b, c, stride_c); return 1;
    case PRACTICED_KERNELS_AVX_VNNI: gemm_avx_vnni(a, rows, depth, stride_a, b, columns, stride_b, c, stride_c); return 1;
    case PRACTICED_KERNELS_AVX512_VNNI: gemm_avx512_vnni(a, rows, depth, stride_a, b, columns, stride_b, c, stride_c); return 1;
    default: return 0;
    }
}

#else

// Not x86-64: the Swift kernels only, until the NEON variants come.
int practiced_kernels_supported(int variant) { return variant == PRACTICED_KERNELS_PORTABLE; }

int practiced_gemm_s16(int variant, const int16_t *a, ptrdiff_t rows, ptrdiff_t depth, ptrdiff_t stride_a,
                       const int16_t *b, ptrdiff_t columns, ptrdiff_t stride_b, int32_t *c, ptrdiff_t stride_c) {
    (void)variant; (void)a; (void)rows; (void)depth; (void)stride_a; (void)b; (void)columns; (void)stride_b; (void)c; (void)stride_c;
    return 0;
}

#endif
