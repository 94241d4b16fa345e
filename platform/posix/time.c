/*
 * time.c — clocks and randomness (platform.h, "Time and randomness"): the
 * wall clock and the monotonic clock in milliseconds, sleeping, and the
 * OS's secure random source (getrandom where glibc has it, arc4random_buf
 * on macOS and the BSDs, else /dev/urandom), and the local time zone's
 * offset at an instant.
 */
#include "platform/posix/posix_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#include <sys/random.h>
#define PLATFORM_HAVE_GETRANDOM 1
#endif

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t platform_time_utc_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

int64_t platform_monotonic_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

void platform_sleep_ms(int64_t ms)
{
    if (ms <= 0) {
        sched_yield();
        return;
    }
    struct timespec left = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

/* /dev/urandom, for systems without getrandom() or a kernel that lacks it. */
static MUST_CHECK error_code random_from_device(unsigned char *p, size_t len, error_info *err)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return error_set_os(err, ERR_INTERNAL, e, "cannot open /dev/urandom: %s", strerror(e));
    }
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            return error_set_os(err, ERR_INTERNAL, e, "cannot read /dev/urandom: %s", strerror(e));
        }
        p += n;
        len -= (size_t)n;
    }
    close(fd);
    return ERR_OK;
}

error_code platform_random_bytes(void *buf, size_t len, error_info *err)
{
    unsigned char *p = buf;
#if defined(PLATFORM_HAVE_GETRANDOM)
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            if (e == ENOSYS)
                return random_from_device(p, len, err);
            return error_set_os(err, ERR_INTERNAL, e, "cannot read random bytes: %s", strerror(e));
        }
        p += n;
        len -= (size_t)n;
    }
    return ERR_OK;
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    arc4random_buf(p, len);
    return ERR_OK;
#else
    return random_from_device(p, len, err);
#endif
}

error_code platform_local_offset(int64_t utc_s, int32_t *offset_s, error_info *err)
{
    time_t t = (time_t)utc_s;
    struct tm local;
    /* localtime_r need not look at TZ again (glibc's does not): tzset does,
     * cheaply when it has not changed. */
    tzset();
    if ((int64_t)t != utc_s || !localtime_r(&t, &local))
        return error_set(err, ERR_INTERNAL, "cannot convert %lld to local time", (long long)utc_s);
    *offset_s = (int32_t)local.tm_gmtoff;
    return ERR_OK;
}
