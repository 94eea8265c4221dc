/*
 * The one pause (include/qemu/pause.h).  A lock and a condition variable:
 * parked threads wait on it for the depth to fall to 0, pause_all() waits
 * on it for every thread to park.  The depth is also kept in an atomic so
 * that a pause point costs one load when no pause is in force.
 */
#include "qemu/pause.h"
#include "qemu/thread.h"
#include "trace/trace-util.h"

struct PauseThread {
    char *name;
    PauseKick kick;
    void *opaque;
    bool parked;            /* under lock */
    bool leaving;           /* under lock */
};

static QemuMutex lock = { PTHREAD_MUTEX_INITIALIZER };
static QemuCond cond = { PTHREAD_COND_INITIALIZER };
static GPtrArray *threads;      /* under lock */
static unsigned depth = 1;      /* written under lock, read atomically */
static __thread PauseThread *current;

PauseThread *pause_thread_register(const char *name, PauseKick kick,
                                   void *opaque)
{
    PauseThread *t = g_new0(PauseThread, 1);

    t->name = g_strdup(name);
    t->kick = kick;
    t->opaque = opaque;
    qemu_mutex_lock(&lock);
    if (!threads) {
        threads = g_ptr_array_new();
    }
    g_ptr_array_add(threads, t);
    qemu_mutex_unlock(&lock);
    return t;
}

void pause_thread_leave(PauseThread *t)
{
    qemu_mutex_lock(&lock);
    t->leaving = true;
    qemu_cond_broadcast(&cond);
    qemu_mutex_unlock(&lock);
}

void pause_thread_free(PauseThread *t)
{
    if (!t) {
        return;
    }
    qemu_mutex_lock(&lock);
    g_ptr_array_remove_fast(threads, t);
    qemu_cond_broadcast(&cond);
    qemu_mutex_unlock(&lock);
    g_free(t->name);
    g_free(t);
}

bool pause_point(PauseThread *t)
{
    if (__atomic_load_n(&depth, __ATOMIC_ACQUIRE) == 0) {
        return false;
    }
    current = t;
    qemu_mutex_lock(&lock);
    if (depth == 0 || t->leaving) {
        qemu_mutex_unlock(&lock);
        return false;
    }
    t->parked = true;
    qemu_cond_broadcast(&cond);
    while (depth > 0 && !t->leaving) {
        qemu_cond_wait(&cond, &lock);
    }
    t->parked = false;
    qemu_mutex_unlock(&lock);
    return true;
}

bool pause_thread_parked(PauseThread *t)
{
    bool parked;

    /* A thread resume_all() woke keeps its flag until it runs again:
     * parked only while the pause is in force. */
    qemu_mutex_lock(&lock);
    parked = t->parked && depth > 0;
    qemu_mutex_unlock(&lock);
    return parked;
}

static bool all_parked_locked(void)
{
    for (guint i = 0; threads && i < threads->len; i++) {
        PauseThread *t = g_ptr_array_index(threads, i);

        if (!t->parked && !t->leaving) {
            return false;
        }
    }
    return true;
}

void pause_all_from(const char *why)
{
    g_assert(!current);
    qemu_mutex_lock(&lock);
    __atomic_store_n(&depth, depth + 1, __ATOMIC_RELEASE);
    trace_pause_park_requested(why, depth, threads ? threads->len : 0);
    for (guint i = 0; threads && i < threads->len; i++) {
        PauseThread *t = g_ptr_array_index(threads, i);

        if (!t->parked && t->kick) {
            t->kick(t->opaque);
        }
    }
    while (!all_parked_locked()) {
        qemu_cond_wait(&cond, &lock);
    }
    trace_pause_park_done(why, threads ? threads->len : 0);
    qemu_mutex_unlock(&lock);
}

void resume_all(void)
{
    qemu_mutex_lock(&lock);
    g_assert(depth > 0);
    __atomic_store_n(&depth, depth - 1, __ATOMIC_RELEASE);
    trace_pause_resume(depth);
    if (depth == 0) {
        qemu_cond_broadcast(&cond);
    }
    qemu_mutex_unlock(&lock);
}
