/*
 * Unit tests for the one pause (util/pause.c), with a real thread that
 * parks at its pause point.
 */
#include "qemu/pause.h"

#include <glib.h>
#include <stdbool.h>

#define ROUNDS 2000

typedef struct Worker {
    PauseThread *pause;
    GThread *thread;
    bool stopping;          /* atomic */
} Worker;

static gpointer worker_run(gpointer opaque)
{
    Worker *w = opaque;

    while (!__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) {
        if (!pause_point(w->pause)) {
            g_usleep(50);
        }
    }
    return NULL;
}

/*
 * Once resume_all() has returned, a thread does not count as parked,
 * though it may not have woken yet: a caller that took it for parked
 * would do the thread's work beside it (xsk-queue.c's requests).
 */
static void test_parked_ends_with_resume(void)
{
    Worker w = { 0 };
    unsigned stale = 0;

    w.pause = pause_thread_register("worker", NULL, NULL);
    w.thread = g_thread_new("worker", worker_run, &w);
    /* The process starts paused, as illan does before its machine runs. */
    resume_all();
    for (unsigned i = 0; i < ROUNDS; i++) {
        pause_all();
        g_assert_true(pause_thread_parked(w.pause));
        resume_all();
        stale += pause_thread_parked(w.pause);
    }
    g_assert_cmpuint(stale, ==, 0);
    __atomic_store_n(&w.stopping, true, __ATOMIC_RELEASE);
    pause_thread_leave(w.pause);
    g_thread_join(w.thread);
    pause_thread_free(w.pause);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pause/parked-ends-with-resume",
                    test_parked_ends_with_resume);
    return g_test_run();
}
