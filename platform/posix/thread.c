/*
 * thread.c — threads, mutexes and condition variables over pthreads, for the
 * download's writer and the Authenticode digest beside the hash (platform.h,
 * "Threads").
 */
#include "platform/posix/posix_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct platform_thread {
    pthread_t id;          /* the running thread */
    void (*fn)(void *arg); /* what it runs */
    void *arg;             /* fn's argument */
};

struct platform_mutex {
    pthread_mutex_t mutex;
};

struct platform_cond {
    pthread_cond_t cond;
};

static void *thread_main(void *arg)
{
    platform_thread *thread = arg;
    thread->fn(thread->arg);
    return NULL;
}

error_code platform_thread_start(platform_thread **thread, void (*fn)(void *arg), void *arg, error_info *err)
{
    platform_thread *t = malloc(sizeof *t);
    if (!t)
        return posix_fail_nomem(err);
    t->fn = fn;
    t->arg = arg;
    int rc = pthread_create(&t->id, NULL, thread_main, t);
    if (rc != 0) {
        free(t);
        return error_set_os(err, rc == EAGAIN ? ERR_NOMEM : ERR_INTERNAL, rc, "cannot start a thread: %s",
                            strerror(rc));
    }
    *thread = t;
    return ERR_OK;
}

void platform_thread_join(platform_thread *thread)
{
    if (!thread)
        return;
    pthread_join(thread->id, NULL);
    free(thread);
}

platform_mutex *platform_mutex_new(void)
{
    platform_mutex *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->mutex, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void platform_mutex_free(platform_mutex *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mutex);
    free(m);
}

/* Locking a valid, initialised mutex cannot fail except by a programming
 * error (deadlock detection, a freed mutex): stop rather than run unlocked. */
void platform_mutex_lock(platform_mutex *m)
{
    if (pthread_mutex_lock(&m->mutex) != 0)
        abort();
}

void platform_mutex_unlock(platform_mutex *m)
{
    if (pthread_mutex_unlock(&m->mutex) != 0)
        abort();
}

platform_cond *platform_cond_new(void)
{
    platform_cond *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    if (pthread_cond_init(&c->cond, NULL) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

void platform_cond_free(platform_cond *c)
{
    if (!c)
        return;
    pthread_cond_destroy(&c->cond);
    free(c);
}

void platform_cond_wait(platform_cond *c, platform_mutex *m)
{
    if (pthread_cond_wait(&c->cond, &m->mutex) != 0)
        abort();
}

void platform_cond_broadcast(platform_cond *c)
{
    pthread_cond_broadcast(&c->cond);
}
