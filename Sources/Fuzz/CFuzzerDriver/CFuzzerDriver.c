#include "CFuzzerDriver.h"

#ifdef FUZZING
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
#endif

int practiced_fuzzer_run(int *argc, char ***argv, practiced_fuzz_callback callback) {
#ifdef FUZZING
    return LLVMFuzzerRunDriver(argc, argv, callback);
#else
    (void)argc; (void)argv; (void)callback;
    return -1;
#endif
}
