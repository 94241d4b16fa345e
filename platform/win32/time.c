/*
 * time.c — clocks and randomness (platform.h, "Time and randomness"): the
 * precise system time and the performance counter in milliseconds,
 * sleeping, BCryptGenRandom with the system's preferred generator, and
 * the local time zone's offset at an instant.
 */
#include "platform/win32/win32_int.h"

#include <bcrypt.h>

/* 100 ns intervals between 1601-01-01 (FILETIME) and 1970-01-01. */
#define FILETIME_UNIX_EPOCH 116444736000000000LL

int64_t platform_time_utc_ms(void)
{
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    int64_t t = (int64_t)(((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
    return (t - FILETIME_UNIX_EPOCH) / 10000;
}

int64_t platform_monotonic_ms(void)
{
    static LARGE_INTEGER frequency; /* constant since boot; a race writes the same value */
    if (frequency.QuadPart == 0 && !QueryPerformanceFrequency(&frequency))
        return (int64_t)GetTickCount64();
    LARGE_INTEGER now;
    if (!QueryPerformanceCounter(&now))
        return (int64_t)GetTickCount64();
    int64_t f = frequency.QuadPart;
    /* Split to avoid overflowing counter * 1000. */
    return now.QuadPart / f * 1000 + now.QuadPart % f * 1000 / f;
}

void platform_sleep_ms(int64_t ms)
{
    if (ms <= 0) {
        SwitchToThread();
        return;
    }
    while (ms > 0) {
        DWORD chunk = ms > 0x7fffffff ? 0x7fffffff : (DWORD)ms;
        Sleep(chunk);
        ms -= chunk;
    }
}

error_code platform_random_bytes(void *buf, size_t len, error_info *err)
{
    unsigned char *p = buf;
    while (len > 0) {
        ULONG chunk = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        NTSTATUS status = BCryptGenRandom(NULL, p, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG);
        if (status < 0)
            return error_set_os(err, ERR_INTERNAL, (int)status,
                                "cannot read random bytes: BCryptGenRandom failed (0x%08lx)", (unsigned long)status);
        p += chunk;
        len -= chunk;
    }
    return ERR_OK;
}

static int64_t filetime_ticks(const FILETIME *ft)
{
    return (int64_t)(((uint64_t)ft->dwHighDateTime << 32) | ft->dwLowDateTime);
}

error_code platform_local_offset(int64_t utc_s, int32_t *offset_s, error_info *err)
{
    if (utc_s < -11644473600LL || utc_s > 910692730085LL) /* FILETIME's range */
        return error_set(err, ERR_INTERNAL, "cannot convert %lld to local time", (long long)utc_s);
    int64_t ticks = utc_s * 10000000LL + FILETIME_UNIX_EPOCH;
    FILETIME utc_ft = {.dwLowDateTime = (DWORD)(uint64_t)ticks, .dwHighDateTime = (DWORD)((uint64_t)ticks >> 32)};
    SYSTEMTIME utc, local;
    DYNAMIC_TIME_ZONE_INFORMATION zone;
    TIME_ZONE_INFORMATION year_rules;
    /* The dynamic zone carries each year's own rules, taken out for the
     * instant's year; the current zone alone has only this year's, which
     * would misjudge a window a rule change away. (Not
     * SystemTimeToTzSpecificLocalTimeEx, the same in one call: wine has no
     * such function, and the tests run there.) */
    bool dynamic = GetDynamicTimeZoneInformation(&zone) != TIME_ZONE_ID_INVALID;
    bool ok = FileTimeToSystemTime(&utc_ft, &utc);
    if (ok)
        ok = (dynamic && GetTimeZoneInformationForYear(utc.wYear, &zone, &year_rules) &&
              SystemTimeToTzSpecificLocalTime(&year_rules, &utc, &local)) ||
             SystemTimeToTzSpecificLocalTime(NULL, &utc, &local);
    FILETIME local_ft;
    if (!ok || !SystemTimeToFileTime(&local, &local_ft)) {
        DWORD e = GetLastError();
        char text[256];
        return error_set_os(err, ERR_INTERNAL, (int)e, "cannot convert %lld to local time: %s", (long long)utc_s,
                            win32_message(e, text, sizeof text));
    }
    *offset_s = (int32_t)((filetime_ticks(&local_ft) - ticks) / 10000000LL);
    return ERR_OK;
}
