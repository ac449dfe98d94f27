#include "CReference.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

void cref_int16_to_float(const int16_t *restrict src, float *restrict dst, size_t count) {
    for (size_t i = 0; i < count; i++) dst[i] = (float)src[i] * (1.0f / 32768.0f);
}

void cref_float_to_int16(const float *restrict src, int16_t *restrict dst, size_t count) {
    for (size_t i = 0; i < count; i++) {
        float v = src[i];
        if (v != v) v = 0.0f;
        v *= 32768.0f;
        v = v > 32767.0f ? 32767.0f : (v < -32768.0f ? -32768.0f : v);
        dst[i] = (int16_t)lrintf(v);
    }
}

uint64_t cref_sum_of_squares(const int16_t *src, size_t count) {
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++) {
        int32_t s = src[i];
        sum += (uint32_t)(s * s);
    }
    return sum;
}

double cref_rms(const int16_t *src, size_t count) {
    return count == 0 ? 0.0 : sqrt((double)cref_sum_of_squares(src, count) / (double)count);
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }

size_t cref_wav_encode(const int16_t *samples, size_t count, uint32_t rate, uint16_t channels, uint8_t *out) {
    uint32_t data = (uint32_t)(count * 2);
    memcpy(out, "RIFF", 4); put32(out + 4, data + 36); memcpy(out + 8, "WAVEfmt ", 8);
    put32(out + 16, 16); put16(out + 20, 1); put16(out + 22, channels); put32(out + 24, rate);
    put32(out + 28, rate * channels * 2); put16(out + 32, (uint16_t)(channels * 2)); put16(out + 34, 16);
    memcpy(out + 36, "data", 4); put32(out + 40, data);
    memcpy(out + 44, samples, data);
    return 44 + (size_t)data;
}

struct cref_ring {
    _Atomic size_t write_index;
    char pad[64];
    _Atomic size_t read_index;
    size_t mask;
    int16_t *storage;
};

cref_ring *cref_ring_create(size_t capacity) {
    cref_ring *r = calloc(1, sizeof *r);
    r->storage = malloc(capacity * sizeof(int16_t));
    r->mask = capacity - 1;
    return r;
}

void cref_ring_destroy(cref_ring *r) { free(r->storage); free(r); }

size_t cref_ring_write(cref_ring *r, const int16_t *src, size_t count) {
    size_t w = atomic_load_explicit(&r->write_index, memory_order_relaxed);
    size_t rd = atomic_load_explicit(&r->read_index, memory_order_acquire);
    size_t cap = r->mask + 1, free_ = cap - (w - rd), n = count < free_ ? count : free_;
    size_t start = w & r->mask, first = n < cap - start ? n : cap - start;
    memcpy(r->storage + start, src, first * 2);
    memcpy(r->storage, src + first, (n - first) * 2);
    atomic_store_explicit(&r->write_index, w + n, memory_order_release);
    return n;
}

size_t cref_ring_read(cref_ring *r, int16_t *dst, size_t count) {
    size_t rd = atomic_load_explicit(&r->read_index, memory_order_relaxed);
    size_t w = atomic_load_explicit(&r->write_index, memory_order_acquire);
    size_t avail = w - rd, n = count < avail ? count : avail, cap = r->mask + 1;
    size_t start = rd & r->mask, first = n < cap - start ? n : cap - start;
    memcpy(dst, r->storage + start, first * 2);
    memcpy(dst + first, r->storage, (n - first) * 2);
    atomic_store_explicit(&r->read_index, rd + n, memory_order_release);
    return n;
}

void cref_memcpy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
