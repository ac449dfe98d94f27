/*
 * An ALSA external (ioplug) PCM with fixed hardware constraints, for tests: it presents a
 * device that runs exactly one sample format, rate and channel count, as a USB speaker or
 * an HDMI output does, and paces itself in real time like one.
 *
 *   pcm_type.fixed { lib "/path/to/libasound_module_pcm_fixed.so" }
 *   pcm.usbspeaker { type fixed  format S32_LE  rate 48000  channels 2  file "/tmp/played.raw" }
 *   pcm.usbmic     { type fixed  format S24_3LE rate 44100 channels 2  file "/tmp/mic.raw" }
 *
 * Playback appends every byte written to `file`; capture reads `file` (then silence). The
 * hardware pointer advances with CLOCK_MONOTONIC at the rate, so a writer is paced as by a
 * sound card; a timerfd armed at the period wakes poll.
 *
 * With `gone "/path"`, the device stands for a sound server's PCM (pipewire-alsa's) whose
 * server is gone while a file exists at that path: opening fails with ECONNREFUSED, and an
 * open PCM's pointer says -EPIPE, an xrun, every time; prepare succeeds, as pipewire-alsa's
 * does when it makes a new stream on the dead connection.
 *
 * Built by the tests with `cc -shared -fPIC`; not part of the shipped package.
 */
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    snd_pcm_ioplug_t io;
    int file;
    int timer;
    snd_pcm_format_t format;
    unsigned int rate;
    unsigned int channels;
    struct timespec started;
    int running;
    /* Frames the device has consumed (playback) or produced (capture) since start. */
    uint64_t done;
    snd_pcm_uframes_t hw_ptr;
    char *gone;
} fixed_t;

static int server_gone(fixed_t *f) {
    return f->gone && access(f->gone, F_OK) == 0;
}

static uint64_t elapsed_frames(fixed_t *f) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ns = (int64_t)(now.tv_sec - f->started.tv_sec) * 1000000000LL + (now.tv_nsec - f->started.tv_nsec);
    return (uint64_t)ns * f->rate / 1000000000ULL;
}

static int fixed_start(snd_pcm_ioplug_t *io) {
    fixed_t *f = io->private_data;
    clock_gettime(CLOCK_MONOTONIC, &f->started);
    f->done = 0;
    f->running = 1;
    long period_ns = (long)((uint64_t)io->period_size * 1000000000ULL / f->rate);
    struct itimerspec spec = { { period_ns / 1000000000L, period_ns % 1000000000L },
                               { period_ns / 1000000000L, period_ns % 1000000000L } };
    timerfd_settime(f->timer, 0, &spec, NULL);
    return 0;
}

static int fixed_stop(snd_pcm_ioplug_t *io) {
    fixed_t *f = io->private_data;
    struct itimerspec off = { { 0, 0 }, { 0, 0 } };
    timerfd_settime(f->timer, 0, &off, NULL);
    f->running = 0;
    return 0;
}

static snd_pcm_sframes_t fixed_pointer(snd_pcm_ioplug_t *io) {
    fixed_t *f = io->private_data;
    if (server_gone(f)) return -EPIPE;
    if (!f->running) return f->hw_ptr;
    uint64_t target = elapsed_frames(f);
    if (io->stream == SND_PCM_STREAM_PLAYBACK) {
        /* The device never plays past what was written: an underrun plays silence. */
        snd_pcm_sframes_t queued = snd_pcm_ioplug_hw_avail(io, io->hw_ptr, io->appl_ptr);
        uint64_t limit = f->done + (queued > 0 ? (uint64_t)queued : 0);
        if (target > limit) target = limit;
    }
    if (target > f->done) {
        f->hw_ptr = (f->hw_ptr + (target - f->done)) % io->buffer_size;
        f->done = target;
    }
    return f->hw_ptr;
}

static snd_pcm_sframes_t fixed_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
                                        snd_pcm_uframes_t offset, snd_pcm_uframes_t size) {
    fixed_t *f = io->private_data;
    size_t frame_bytes = (size_t)snd_pcm_format_physical_width(f->format) / 8 * f->channels;
    char *base = (char *)areas[0].addr + (areas[0].first + areas[0].step * offset) / 8;
    size_t bytes = size * frame_bytes;
    if (io->stream == SND_PCM_STREAM_PLAYBACK) {
        size_t written = 0;
        while (written < bytes) {
            ssize_t n = write(f->file, base + written, bytes - written);
            if (n < 0) { if (errno == EINTR) continue; return -EIO; }
            written += (size_t)n;
        }
    } else {
        size_t got = 0;
        while (got < bytes) {
            ssize_t n = read(f->file, base + got, bytes - got);
            if (n < 0) { if (errno == EINTR) continue; return -EIO; }
            if (n == 0) break;
            got += (size_t)n;
        }
        memset(base + got, 0, bytes - got);
    }
    return (snd_pcm_sframes_t)size;
}

static int fixed_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds, unsigned short *revents) {
    fixed_t *f = io->private_data;
    (void)nfds;
    uint64_t expirations;
    if (pfd[0].revents & POLLIN) (void)!read(f->timer, &expirations, sizeof expirations);
    snd_pcm_sframes_t avail = snd_pcm_avail_update(io->pcm);
    *revents = 0;
    if (avail >= (snd_pcm_sframes_t)io->period_size)
        *revents = io->stream == SND_PCM_STREAM_PLAYBACK ? POLLOUT : POLLIN;
    return 0;
}

static int fixed_prepare(snd_pcm_ioplug_t *io) {
    fixed_t *f = io->private_data;
    f->hw_ptr = 0;
    f->done = 0;
    return 0;
}

static int fixed_close(snd_pcm_ioplug_t *io) {
    fixed_t *f = io->private_data;
    close(f->file);
    close(f->timer);
    free(f->gone);
    free(f);
    return 0;
}

static const snd_pcm_ioplug_callback_t fixed_callbacks = {
    .start = fixed_start,
    .stop = fixed_stop,
    .pointer = fixed_pointer,
    .transfer = fixed_transfer,
    .poll_revents = fixed_poll_revents,
    .prepare = fixed_prepare,
    .close = fixed_close,
};

SND_PCM_PLUGIN_DEFINE_FUNC(fixed) {
    snd_config_iterator_t i, next;
    const char *path = NULL;
    const char *gone = NULL;
    const char *format_name = "S16_LE";
    long rate = 48000, channels = 2;
    snd_config_for_each(i, next, conf) {
        snd_config_t *n = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(n, &id) < 0) continue;
        if (!strcmp(id, "comment") || !strcmp(id, "type") || !strcmp(id, "hint")) continue;
        if (!strcmp(id, "file")) { if (snd_config_get_string(n, &path) < 0) return -EINVAL; continue; }
        if (!strcmp(id, "gone")) { if (snd_config_get_string(n, &gone) < 0) return -EINVAL; continue; }
        if (!strcmp(id, "format")) { if (snd_config_get_string(n, &format_name) < 0) return -EINVAL; continue; }
        if (!strcmp(id, "rate")) { if (snd_config_get_integer(n, &rate) < 0) return -EINVAL; continue; }
        if (!strcmp(id, "channels")) { if (snd_config_get_integer(n, &channels) < 0) return -EINVAL; continue; }
        SNDERR("Unknown field %s", id);
        return -EINVAL;
    }
    if (!path) { SNDERR("fixed: 'file' is required"); return -EINVAL; }
    snd_pcm_format_t format = snd_pcm_format_value(format_name);
    if (format == SND_PCM_FORMAT_UNKNOWN) { SNDERR("fixed: unknown format %s", format_name); return -EINVAL; }

    if (gone && access(gone, F_OK) == 0) return -ECONNREFUSED;
    fixed_t *f = calloc(1, sizeof *f);
    if (!f) return -ENOMEM;
    f->gone = gone ? strdup(gone) : NULL;
    f->format = format;
    f->rate = (unsigned int)rate;
    f->channels = (unsigned int)channels;
    f->file = stream == SND_PCM_STREAM_PLAYBACK ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                                                : open(path, O_RDONLY | O_CLOEXEC);
    f->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (f->file < 0 || f->timer < 0) {
        int err = -errno;
        if (f->file >= 0) close(f->file);
        if (f->timer >= 0) close(f->timer);
        free(f->gone);
        free(f);
        return err;
    }
    f->io.version = SND_PCM_IOPLUG_VERSION;
    f->io.name = "fixed-format test device";
    f->io.callback = &fixed_callbacks;
    f->io.private_data = f;
    f->io.poll_fd = f->timer;
    f->io.poll_events = POLLIN;
    f->io.mmap_rw = 0;
    int err = snd_pcm_ioplug_create(&f->io, name, stream, mode);
    if (err < 0) {
        close(f->file);
        close(f->timer);
        free(f->gone);
        free(f);
        return err;
    }
    unsigned int access_list[] = { SND_PCM_ACCESS_RW_INTERLEAVED };
    unsigned int format_list[] = { (unsigned int)format };
    unsigned int frame_bytes = (unsigned int)(snd_pcm_format_physical_width(format) / 8 * channels);
    if ((err = snd_pcm_ioplug_set_param_list(&f->io, SND_PCM_IOPLUG_HW_ACCESS, 1, access_list)) < 0 ||
        (err = snd_pcm_ioplug_set_param_list(&f->io, SND_PCM_IOPLUG_HW_FORMAT, 1, format_list)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_CHANNELS, (unsigned int)channels, (unsigned int)channels)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_RATE, (unsigned int)rate, (unsigned int)rate)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64 * frame_bytes, 65536 * frame_bytes)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 64)) < 0) {
        snd_pcm_ioplug_delete(&f->io);
        return err;
    }
    *pcmp = f->io.pcm;
    return 0;
}

SND_PCM_PLUGIN_SYMBOL(fixed);
