#ifndef PRACTICED_CFUZZERDRIVER_H
#define PRACTICED_CFUZZERDRIVER_H

#include <stddef.h>
#include <stdint.h>

/// The callback libFuzzer calls once per input.
typedef int (*practiced_fuzz_callback)(const uint8_t *data, size_t size);

/// Runs libFuzzer's driver (LLVMFuzzerRunDriver) with the program's arguments. SwiftPM gives
/// every executable its own `main`, so a fuzz target starts libFuzzer from there instead of
/// relying on libFuzzer's `main`. Returns -1 when not built with -DFUZZING.
int practiced_fuzzer_run(int *argc, char ***argv, practiced_fuzz_callback callback);

#endif
