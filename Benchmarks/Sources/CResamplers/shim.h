#include <soxr.h>
#include <speex/speex_resampler.h>
#include <samplerate.h>

/* soxr's recipes are macros built from other macros; Swift sees these. */
static const unsigned long practiced_soxr_mq = SOXR_MQ;
static const unsigned long practiced_soxr_hq = SOXR_HQ;
