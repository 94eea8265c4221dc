/*
 * Unit tests for the virtual clock and its timers (util/timer.c).
 */
#include "qemu/timer.h"

#include <glib.h>
#include <stdint.h>

#define MAX_FIRES 16

/* Which timers fired, in order, and the clock each one saw. */
static struct {
    int id[MAX_FIRES];
    int64_t at[MAX_FIRES];
    int n;
} fired;

typedef struct TestTimer {
    QEMUTimer *timer;
    int id;
    int64_t period;     /* re-arm this far ahead, 0 for one-shot */
    int rearms_left;
} TestTimer;

static void record_cb(void *opaque)
{
    TestTimer *tt = opaque;

    g_assert_cmpint(fired.n, <, MAX_FIRES);
    fired.id[fired.n] = tt->id;
    fired.at[fired.n] = virtual_clock_ns();
    fired.n++;
    if (tt->period && tt->rearms_left-- > 0) {
        timer_mod_ns(tt->timer, virtual_clock_ns() + tt->period);
    }
}

static void start(void)
{
    virtual_clock_reset_for_test();
    fired.n = 0;
    g_assert_cmpint(virtual_clock_ns(), ==, 0);
}

static void init_timer(TestTimer *tt, int id)
{
    *tt = (TestTimer) { .id = id };
    tt->timer = timer_new_ns(record_cb, tt);
    g_assert_false(timer_pending(tt->timer));
}

static void test_no_timers_no_deadline(void)
{
    TestTimer a;

    start();
    g_assert_cmpint(virtual_clock_deadline(), ==, -1);
    init_timer(&a, 1);
    /* A timer that was never armed is not pending. */
    g_assert_cmpint(virtual_clock_deadline(), ==, -1);
    virtual_clock_advance_to(1000);
    g_assert_cmpint(fired.n, ==, 0);
    g_assert_cmpint(virtual_clock_ns(), ==, 1000);
    timer_free(a.timer);
}

static void test_reset_restarts_clock(void)
{
    TestTimer a;

    start();
    init_timer(&a, 1);
    timer_mod_ns(a.timer, 100000);
    virtual_clock_advance_to(12345);
    g_assert_cmpint(virtual_clock_ns(), ==, 12345);
    virtual_clock_reset_for_test();
    g_assert_cmpint(virtual_clock_ns(), ==, 0);
    /* Timers armed before the reset are forgotten too. */
    g_assert_false(timer_pending(a.timer));
    g_assert_cmpint(virtual_clock_deadline(), ==, -1);
    virtual_clock_advance_to(200000);
    g_assert_cmpint(fired.n, ==, 0);
    timer_free(a.timer);
}

static void test_fire_in_expiry_order(void)
{
    TestTimer t[3];

    start();
    for (int i = 0; i < 3; i++) {
        init_timer(&t[i], i);
    }
    timer_mod_ns(t[0].timer, 300);
    timer_mod_ns(t[1].timer, 100);
    timer_mod_ns(t[2].timer, 200);
    g_assert_cmpint(virtual_clock_deadline(), ==, 100);

    virtual_clock_advance_to(1000);
    g_assert_cmpint(fired.n, ==, 3);
    g_assert_cmpint(fired.id[0], ==, 1);
    g_assert_cmpint(fired.at[0], ==, 100);
    g_assert_cmpint(fired.id[1], ==, 2);
    g_assert_cmpint(fired.at[1], ==, 200);
    g_assert_cmpint(fired.id[2], ==, 0);
    g_assert_cmpint(fired.at[2], ==, 300);
    g_assert_cmpint(virtual_clock_ns(), ==, 1000);
    g_assert_cmpint(virtual_clock_deadline(), ==, -1);
    for (int i = 0; i < 3; i++) {
        g_assert_false(timer_pending(t[i].timer));
        timer_free(t[i].timer);
    }
}

static void test_advance_before_expiry_does_not_fire(void)
{
    TestTimer a;

    start();
    init_timer(&a, 7);
    timer_mod_ns(a.timer, 500);
    virtual_clock_advance_to(499);
    g_assert_cmpint(fired.n, ==, 0);
    g_assert_cmpint(virtual_clock_ns(), ==, 499);
    g_assert_true(timer_pending(a.timer));
    g_assert_cmpint(virtual_clock_deadline(), ==, 500);

    /* The expiry itself is due. */
    virtual_clock_advance_to(500);
    g_assert_cmpint(fired.n, ==, 1);
    g_assert_cmpint(fired.at[0], ==, 500);
    g_assert_false(timer_pending(a.timer));
    timer_free(a.timer);
}

static void test_timer_del_cancels(void)
{
    TestTimer a, b;

    start();
    init_timer(&a, 1);
    init_timer(&b, 2);
    timer_mod_ns(a.timer, 100);
    timer_mod_ns(b.timer, 200);
    timer_del(a.timer);
    g_assert_false(timer_pending(a.timer));
    g_assert_cmpint(virtual_clock_deadline(), ==, 200);

    virtual_clock_advance_to(1000);
    g_assert_cmpint(fired.n, ==, 1);
    g_assert_cmpint(fired.id[0], ==, 2);
    timer_free(a.timer);
    timer_free(b.timer);
}

static void test_timer_mod_replaces_expiry(void)
{
    TestTimer a;

    start();
    init_timer(&a, 1);
    timer_mod_ns(a.timer, 100);
    timer_mod_ns(a.timer, 300);
    g_assert_cmpint(virtual_clock_deadline(), ==, 300);
    virtual_clock_advance_to(200);
    g_assert_cmpint(fired.n, ==, 0);
    virtual_clock_advance_to(300);
    g_assert_cmpint(fired.n, ==, 1);
    g_assert_cmpint(fired.at[0], ==, 300);
    timer_free(a.timer);
}

static void test_callback_rearms_itself(void)
{
    TestTimer a;

    start();
    init_timer(&a, 1);
    a.period = 100;
    a.rearms_left = 5;
    timer_mod_ns(a.timer, 100);

    virtual_clock_advance_to(250);
    g_assert_cmpint(fired.n, ==, 2);
    g_assert_cmpint(fired.at[0], ==, 100);
    g_assert_cmpint(fired.at[1], ==, 200);
    g_assert_true(timer_pending(a.timer));
    g_assert_cmpint(virtual_clock_deadline(), ==, 300);

    virtual_clock_advance_to(299);
    g_assert_cmpint(fired.n, ==, 2);
    virtual_clock_advance_to(300);
    g_assert_cmpint(fired.n, ==, 3);
    g_assert_cmpint(fired.at[2], ==, 300);
    timer_free(a.timer);
}

static void test_clock_never_moves_backwards(void)
{
    start();
    virtual_clock_advance_to(500);
    virtual_clock_advance_to(100);
    g_assert_cmpint(virtual_clock_ns(), ==, 500);
    virtual_clock_advance_to(-1);
    g_assert_cmpint(virtual_clock_ns(), ==, 500);
    virtual_clock_advance_to(501);
    g_assert_cmpint(virtual_clock_ns(), ==, 501);
}

static void test_past_timer_fires_at_current_time(void)
{
    TestTimer a;

    start();
    init_timer(&a, 1);
    virtual_clock_advance_to(500);
    timer_mod_ns(a.timer, 200);
    g_assert_cmpint(virtual_clock_deadline(), ==, 200);
    /* Due on the next advance, even to an earlier target; the clock
     * stays at 500 rather than going back to the expiry. */
    virtual_clock_advance_to(300);
    g_assert_cmpint(fired.n, ==, 1);
    g_assert_cmpint(fired.at[0], ==, 500);
    g_assert_cmpint(virtual_clock_ns(), ==, 500);
    timer_free(a.timer);
}

static void test_timer_free_pending(void)
{
    TestTimer a, b;

    start();
    init_timer(&a, 1);
    init_timer(&b, 2);
    timer_mod_ns(a.timer, 100);
    timer_mod_ns(b.timer, 200);
    timer_free(a.timer);
    g_assert_cmpint(virtual_clock_deadline(), ==, 200);
    virtual_clock_advance_to(1000);
    g_assert_cmpint(fired.n, ==, 1);
    g_assert_cmpint(fired.id[0], ==, 2);
    timer_free(b.timer);
    g_assert_cmpint(virtual_clock_deadline(), ==, -1);
    timer_free(NULL);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/timer/no-timers-no-deadline",
                    test_no_timers_no_deadline);
    g_test_add_func("/timer/reset-restarts-clock", test_reset_restarts_clock);
    g_test_add_func("/timer/fire-in-expiry-order", test_fire_in_expiry_order);
    g_test_add_func("/timer/advance-before-expiry-does-not-fire",
                    test_advance_before_expiry_does_not_fire);
    g_test_add_func("/timer/del-cancels", test_timer_del_cancels);
    g_test_add_func("/timer/mod-replaces-expiry",
                    test_timer_mod_replaces_expiry);
    g_test_add_func("/timer/callback-rearms-itself",
                    test_callback_rearms_itself);
    g_test_add_func("/timer/clock-never-moves-backwards",
                    test_clock_never_moves_backwards);
    g_test_add_func("/timer/past-timer-fires-at-current-time",
                    test_past_timer_fires_at_current_time);
    g_test_add_func("/timer/free-pending", test_timer_free_pending);

    return g_test_run();
}
