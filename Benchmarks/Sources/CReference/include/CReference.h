#ifndef PRACTICED_CREFERENCE_H
#define PRACTICED_CREFERENCE_H

#include <stddef.h>
#include <stdint.h>

/// dst[i] = src[i] / 32768, the loop a C programmer writes.
void cref_int16_to_float(const int16_t *src, float *dst, size_t count);

/// Scale by 32768, clip to [-32768, 32767], round to nearest (lrintf), NaN to 0.
void cref_float_to_int16(const float *src, int16_t *dst, size_t count);

/// The exact sum of squares, accumulated in integers.
uint64_t cref_sum_of_squares(const int16_t *src, size_t count);

/// The RMS of the samples: sqrt(sum of squares / count), 0 for no samples.
double cref_rms(const int16_t *src, size_t count);

/// A canonical 44-byte WAV header followed by the samples (memcpy).
size_t cref_wav_encode(const int16_t *samples, size_t count, uint32_t rate, uint16_t channels, uint8_t *out);

/// A single-producer single-consumer ring of int16 samples with C11 atomics.
typedef struct cref_ring cref_ring;
cref_ring *cref_ring_create(size_t capacity_power_of_two);
void cref_ring_destroy(cref_ring *ring);
size_t cref_ring_write(cref_ring *ring, const int16_t *src, size_t count);
size_t cref_ring_read(cref_ring *ring, int16_t *dst, size_t count);

/// memcpy behind a call the optimizer cannot remove.
void cref_memcpy(void *dst, const void *src, size_t bytes);

#endif
