/* The virtual clock and its timers.  Few timers exist at a time, so a plain
 * array scanned for the earliest expiry is both simplest and fast enough. */
#include "qemu/timer.h"

#include <glib.h>

struct QEMUTimer {
    QEMUTimerCB *cb;
    void *opaque;
    int64_t expire;
    bool pending;
};

static int64_t clock_now;
static GPtrArray *timers;

int64_t virtual_clock_ns(void)
{
    return clock_now;
}

static QEMUTimer *earliest_pending(void)
{
    QEMUTimer *best = NULL;

    for (guint i = 0; timers && i < timers->len; i++) {
        QEMUTimer *t = g_ptr_array_index(timers, i);
        if (t->pending && (!best || t->expire < best->expire)) {
            best = t;
        }
    }
    return best;
}

int64_t virtual_clock_deadline(void)
{
    QEMUTimer *t = earliest_pending();
    return t ? t->expire : -1;
}

void virtual_clock_advance_to(int64_t target)
{
    QEMUTimer *t;

    while ((t = earliest_pending()) && t->expire <= target) {
        if (t->expire > clock_now) {
            clock_now = t->expire;
        }
        t->pending = false;
        t->cb(t->opaque);
    }
    if (target > clock_now) {
        clock_now = target;
    }
}

void virtual_clock_reset_for_test(void)
{
    for (guint i = 0; timers && i < timers->len; i++) {
        timer_del(g_ptr_array_index(timers, i));
    }
    clock_now = 0;
}

QEMUTimer *timer_new_ns(QEMUTimerCB *cb, void *opaque)
{
    QEMUTimer *t = g_new0(QEMUTimer, 1);

    t->cb = cb;
    t->opaque = opaque;
    if (!timers) {
        timers = g_ptr_array_new();
    }
    g_ptr_array_add(timers, t);
    return t;
}

void timer_mod_ns(QEMUTimer *timer, int64_t expire_ns)
{
    timer->expire = expire_ns;
    timer->pending = true;
}

void timer_del(QEMUTimer *timer)
{
    timer->pending = false;
}

bool timer_pending(const QEMUTimer *timer)
{
    return timer->pending;
}

void timer_free(QEMUTimer *timer)
{
    if (timer) {
        g_ptr_array_remove_fast(timers, timer);
        g_free(timer);
    }
}
