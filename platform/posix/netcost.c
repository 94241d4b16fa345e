/*
 * netcost.c — whether the connection is metered (platform.h, "Network
 * cost"), for installer.defer_on "metered". Linux asks NetworkManager for
 * its Metered property over the system D-Bus with sd-bus, the D-Bus client
 * of libsystemd. The library is loaded at run time (dlopen): the static
 * release build cannot link it (Debian ships no libsystemd.a), and a
 * machine without it, without a system bus or without NetworkManager is
 * simply not metered, as PRODUCT.md section 11 says. The few entry points
 * are declared here as libsystemd.so.0 exports them (sd-bus is a stable,
 * versioned interface, LIBSYSTEMD_221 and later).
 */
#include "platform/posix/posix_int.h"

#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <dlfcn.h>
#endif

#if defined(__linux__)
/* sd-bus.h's sd_bus_error, which the library fills: name, message, and
 * whether they must be freed (sd_bus_error_free). */
typedef struct sd_bus_error_abi {
    const char *name;
    const char *message;
    int need_free;
} sd_bus_error_abi;

typedef int (*sd_bus_open_system_fn)(void **bus);
typedef int (*sd_bus_get_property_trivial_fn)(void *bus, const char *destination, const char *path,
                                              const char *interface, const char *member, sd_bus_error_abi *error,
                                              char type, void *value);
typedef void *(*sd_bus_flush_close_unref_fn)(void *bus);
typedef void (*sd_bus_error_free_fn)(sd_bus_error_abi *error);
typedef int (*sd_bus_set_method_call_timeout_fn)(void *bus, uint64_t usec);

/* NetworkManager's NMMetered (libnm's nm-dbus-interface.h). */
enum {
    NM_METERED_UNKNOWN = 0,
    NM_METERED_YES = 1,
    NM_METERED_NO = 2,
    NM_METERED_GUESS_YES = 3,
    NM_METERED_GUESS_NO = 4
};

/* NetworkManager's answer on the bus; false with why in detail when there is none. */
static bool ask_network_manager(void *lib, uint32_t *metered, char *detail, size_t size)
{
    sd_bus_open_system_fn open_system = (sd_bus_open_system_fn)dlsym(lib, "sd_bus_open_system");
    sd_bus_get_property_trivial_fn get_property =
        (sd_bus_get_property_trivial_fn)dlsym(lib, "sd_bus_get_property_trivial");
    sd_bus_flush_close_unref_fn close_bus = (sd_bus_flush_close_unref_fn)dlsym(lib, "sd_bus_flush_close_unref");
    sd_bus_error_free_fn error_free = (sd_bus_error_free_fn)dlsym(lib, "sd_bus_error_free");
    /* Newer than the rest (systemd 239): without it the library's 25 s default applies. */
    sd_bus_set_method_call_timeout_fn set_timeout =
        (sd_bus_set_method_call_timeout_fn)dlsym(lib, "sd_bus_set_method_call_timeout");
    if (!open_system || !get_property || !close_bus || !error_free) {
        snprintf(detail, size, "libsystemd.so.0 lacks sd-bus");
        return false;
    }
    void *bus = NULL;
    int r = open_system(&bus);
    if (r < 0) {
        snprintf(detail, size, "no system D-Bus (%s)", strerror(-r));
        return false;
    }
    if (set_timeout)
        set_timeout(bus, 5 * 1000000ULL);
    sd_bus_error_abi error = {NULL, NULL, 0};
    r = get_property(bus, "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager",
                     "org.freedesktop.NetworkManager", "Metered", &error, 'u', metered);
    if (r < 0)
        snprintf(detail, size, "NetworkManager did not answer (%s)",
                 error.name && strstr(error.name, "ServiceUnknown") ? "not running"
                 : error.message                                    ? error.message
                                                                    : strerror(-r));
    error_free(&error);
    close_bus(bus);
    return r >= 0;
}
#endif

bool platform_network_metered(char *detail, size_t size)
{
#if defined(__linux__)
    void *lib = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(detail, size, "libsystemd.so.0 is not installed: not metered");
        return false;
    }
    uint32_t metered = NM_METERED_UNKNOWN;
    char why[200];
    bool answered = ask_network_manager(lib, &metered, why, sizeof why);
    dlclose(lib);
    if (!answered) {
        snprintf(detail, size, "%s: not metered", why);
        return false;
    }
    static const char *const names[] = {"unknown", "metered", "not metered", "metered (guessed)",
                                        "not metered (guessed)"};
    snprintf(detail, size, "NetworkManager: %s", metered < 5 ? names[metered] : "unknown");
    return metered == NM_METERED_YES || metered == NM_METERED_GUESS_YES;
#else
    snprintf(detail, size, "the connection's cost is not known on this system: not metered");
    return false;
#endif
}
