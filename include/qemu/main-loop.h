/*
 * Work for the main thread.  QMP, qtest and the socket backends' sources
 * belong to the main loop; a vCPU or I/O thread that has something to
 * tell them (a filter changed, a connection broke) posts it here, and it
 * runs on the main thread at the loop's next iteration.
 */
#ifndef QEMU_MAIN_LOOP_H
#define QEMU_MAIN_LOOP_H

#include <stdbool.h>

typedef void (*MainLoopFn)(void *opaque);

/* The calling thread is the main thread; attaches the post queue's
 * eventfd to the default GLib context.  Once, from main(). */
void main_loop_init(void);
/* Runs what is still posted, then detaches; at exit. */
void main_loop_cleanup(void);
/* True on the main thread (or when main_loop_init() was never called:
 * a unit test's single thread). */
bool qemu_in_main_thread(void);
/* Runs @fn(@opaque) on the main thread: at once when called there, else
 * at the loop's next iteration.  Any thread; never blocks. */
void main_loop_run_or_post(MainLoopFn fn, void *opaque);

#endif
