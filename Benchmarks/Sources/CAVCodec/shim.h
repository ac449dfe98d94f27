#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>

/* AVERROR(EAGAIN) is a macro Swift does not import. */
static inline int practiced_averror_eagain(void) { return AVERROR(EAGAIN); }
