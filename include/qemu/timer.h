/*
 * The virtual clock (nanoseconds) and its timers.  Under the qtest
 * accelerator the clock stands still until the qtest client steps it, so a
 * test decides exactly when device timers fire.  Main thread only.
 */
#ifndef QEMU_TIMER_H
#define QEMU_TIMER_H

#include <stdbool.h>
#include <stdint.h>

typedef void QEMUTimerCB(void *opaque);
typedef struct QEMUTimer QEMUTimer;

int64_t virtual_clock_ns(void);
/* The earliest pending expiry, or -1 when no timer is pending. */
int64_t virtual_clock_deadline(void);
/* Move the clock forward to @target (never back), running each timer that
 * falls due, in expiry order, with the clock set to its expiry. */
void virtual_clock_advance_to(int64_t target);
/* Forget all timers' state and restart at 0 (tests only). */
void virtual_clock_reset_for_test(void);

QEMUTimer *timer_new_ns(QEMUTimerCB *cb, void *opaque);
void timer_mod_ns(QEMUTimer *timer, int64_t expire_ns);
void timer_del(QEMUTimer *timer);
bool timer_pending(const QEMUTimer *timer);
void timer_free(QEMUTimer *timer);

#endif
