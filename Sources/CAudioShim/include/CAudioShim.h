#ifndef PRACTICED_CAUDIOSHIM_H
#define PRACTICED_CAUDIOSHIM_H

// What Swift cannot import from Glibc: eventfd(2), the per-thread resource counters and
// SO_PEERCRED's struct ucred (glibc declares it only under _GNU_SOURCE), and epoll(7)
// (Glibc's module map leaves <sys/epoll.h> out; its declarations come through as they are).
// Every name of the shim's own carries the practiced_ prefix.

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); -1 with errno on failure.
int practiced_eventfd_create(void);

/// Adds 1 to the eventfd's counter (wakes a poll on it). Returns 0 or -errno.
int practiced_eventfd_signal(int fd);

/// Resets the eventfd's counter to 0. Returns 0 or -errno (-EAGAIN when it was 0).
int practiced_eventfd_drain(int fd);

/// CPU time (user + system) of the calling thread, in nanoseconds.
int64_t practiced_thread_cpu_time_ns(void);

/// Voluntary context switches of the calling thread (its wake-ups from blocking calls).
int64_t practiced_thread_voluntary_switches(void);

/// Names the calling thread (at most 15 characters are kept), for top and gdb.
void practiced_thread_set_name(const char *name);

/// The pid, uid and gid of the process at the other end of a Unix socket (SO_PEERCRED).
/// Returns 0 or -errno.
int practiced_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// Hands the heap's free pages back to the kernel (glibc's malloc_trim, which Swift's Glibc
/// module does not export; nothing elsewhere). Returns 1 if memory was released.
int practiced_release_free_memory(void);

/// Fixes glibc's mmap and trim thresholds (mallopt M_MMAP_THRESHOLD, M_TRIM_THRESHOLD),
/// which also turns off their growth after a large block is freed. Returns 1 when both were
/// set (0 where the C library has no such settings).
int practiced_fix_heap_thresholds(size_t mmap_threshold, size_t trim_threshold);

#endif
