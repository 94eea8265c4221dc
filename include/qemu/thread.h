/*
 * Locks over pthreads.  GLib's GMutex, GRWLock and GCond are futexes inside
 * libglib, which ThreadSanitizer cannot see as synchronisation; these are
 * pthread objects, which it intercepts, so `make check-tsan` checks our
 * locking rather than reporting every locked field as a race.
 */
#ifndef QEMU_THREAD_H
#define QEMU_THREAD_H

#include <glib.h>
#include <pthread.h>
#include <stdint.h>

typedef struct QemuMutex {
    pthread_mutex_t m;
} QemuMutex;

typedef struct QemuRWLock {
    pthread_rwlock_t l;
} QemuRWLock;

typedef struct QemuCond {
    pthread_cond_t c;
} QemuCond;

/* A failure here is a broken invariant (a lock used after it was freed,
 * unlocked by another thread), never an input error.  As in QEMU, it
 * aborts in every build: inside g_assert(), G_DISABLE_ASSERT would drop
 * the call itself. */
static inline void qemu_thread_check(int err, const char *func)
{
    if (err) {
        g_error("%s: %s", func, g_strerror(err));
    }
}

#define QEMU_THREAD_CHECK(call) qemu_thread_check((call), __func__)

/* A counter with one writer at a time (its lock, or its one thread) that
 * any thread may read with a relaxed load: a store of the sum, cheaper
 * than a locked add. */
static inline void qemu_counter_add(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

static inline void qemu_mutex_init(QemuMutex *m)
{
    QEMU_THREAD_CHECK(pthread_mutex_init(&m->m, NULL));
}

static inline void qemu_mutex_destroy(QemuMutex *m)
{
    QEMU_THREAD_CHECK(pthread_mutex_destroy(&m->m));
}

static inline void qemu_mutex_lock(QemuMutex *m)
{
    QEMU_THREAD_CHECK(pthread_mutex_lock(&m->m));
}

static inline void qemu_mutex_unlock(QemuMutex *m)
{
    QEMU_THREAD_CHECK(pthread_mutex_unlock(&m->m));
}

static inline void qemu_rwlock_init(QemuRWLock *l)
{
    QEMU_THREAD_CHECK(pthread_rwlock_init(&l->l, NULL));
}

static inline void qemu_rwlock_destroy(QemuRWLock *l)
{
    QEMU_THREAD_CHECK(pthread_rwlock_destroy(&l->l));
}

static inline void qemu_rwlock_rdlock(QemuRWLock *l)
{
    QEMU_THREAD_CHECK(pthread_rwlock_rdlock(&l->l));
}

static inline void qemu_rwlock_wrlock(QemuRWLock *l)
{
    QEMU_THREAD_CHECK(pthread_rwlock_wrlock(&l->l));
}

static inline void qemu_rwlock_unlock(QemuRWLock *l)
{
    QEMU_THREAD_CHECK(pthread_rwlock_unlock(&l->l));
}

static inline void qemu_cond_init(QemuCond *c)
{
    QEMU_THREAD_CHECK(pthread_cond_init(&c->c, NULL));
}

static inline void qemu_cond_destroy(QemuCond *c)
{
    QEMU_THREAD_CHECK(pthread_cond_destroy(&c->c));
}

static inline void qemu_cond_wait(QemuCond *c, QemuMutex *m)
{
    QEMU_THREAD_CHECK(pthread_cond_wait(&c->c, &m->m));
}

static inline void qemu_cond_broadcast(QemuCond *c)
{
    QEMU_THREAD_CHECK(pthread_cond_broadcast(&c->c));
}

#endif
