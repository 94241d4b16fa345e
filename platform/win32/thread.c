/*
 * thread.c — threads, mutexes and condition variables over the C runtime's
 * _beginthreadex, SRW locks and condition variables, for the download's
 * writer and the Authenticode digest beside the hash (platform.h,
 * "Threads").
 */
#include "platform/win32/win32_int.h"

#include <errno.h>
#include <process.h>
#include <stdlib.h>
#include <string.h>

struct platform_thread {
    HANDLE handle;         /* the running thread */
    void (*fn)(void *arg); /* what it runs */
    void *arg;             /* fn's argument */
};

struct platform_mutex {
    SRWLOCK lock;
};

struct platform_cond {
    CONDITION_VARIABLE cond;
};

static unsigned __stdcall thread_main(void *arg)
{
    platform_thread *thread = arg;
    thread->fn(thread->arg);
    return 0;
}

error_code platform_thread_start(platform_thread **thread, void (*fn)(void *arg), void *arg, error_info *err)
{
    platform_thread *t = malloc(sizeof *t);
    if (!t)
        return win32_fail_nomem(err);
    t->fn = fn;
    t->arg = arg;
    /* _beginthreadex, not CreateThread: the C runtime's per-thread state
     * (errno, strtok) is set up for the new thread. */
    uintptr_t h = _beginthreadex(NULL, 0, thread_main, t, 0, NULL);
    if (h == 0) {
        int e = errno;
        free(t);
        return error_set_os(err, e == EAGAIN ? ERR_NOMEM : ERR_INTERNAL, e, "cannot start a thread: %s", strerror(e));
    }
    t->handle = (HANDLE)h;
    *thread = t;
    return ERR_OK;
}

void platform_thread_join(platform_thread *thread)
{
    if (!thread)
        return;
    WaitForSingleObject(thread->handle, INFINITE);
    CloseHandle(thread->handle);
    free(thread);
}

platform_mutex *platform_mutex_new(void)
{
    platform_mutex *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    InitializeSRWLock(&m->lock);
    return m;
}

void platform_mutex_free(platform_mutex *m)
{
    free(m); /* SRW locks need no destruction */
}

void platform_mutex_lock(platform_mutex *m)
{
    AcquireSRWLockExclusive(&m->lock);
}

void platform_mutex_unlock(platform_mutex *m)
{
    ReleaseSRWLockExclusive(&m->lock);
}

platform_cond *platform_cond_new(void)
{
    platform_cond *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    InitializeConditionVariable(&c->cond);
    return c;
}

void platform_cond_free(platform_cond *c)
{
    free(c);
}

void platform_cond_wait(platform_cond *c, platform_mutex *m)
{
    /* Spurious wakeups are allowed, as with pthread_cond_wait. */
    if (!SleepConditionVariableSRW(&c->cond, &m->lock, INFINITE, 0))
        abort();
}

void platform_cond_broadcast(platform_cond *c)
{
    WakeAllConditionVariable(&c->cond);
}
