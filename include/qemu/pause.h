/*
 * One pause for every thread that touches the machine.
 *
 * The threads that run beside the main loop (a vCPU per built-in guest, an
 * I/O thread per af-xdp queue) register here and call pause_point() at
 * their safe points: a vCPU between hcalls, an I/O thread between batches.
 * pause_all() returns only once every registered thread is parked there,
 * so the caller (stop, reset, migration, loading a stream, exit) sees
 * guest RAM and device state that nothing else is changing; resume_all()
 * lets them go.  Pauses nest: the threads run only at depth 0.  The
 * depth starts at 1, the run state's pause: the machine is built stopped
 * (prelaunch) and its threads first run when it does.
 *
 * The main thread pauses and resumes; a registered thread never may,
 * since it would wait for itself.
 */
#ifndef QEMU_PAUSE_H
#define QEMU_PAUSE_H

#include <stdbool.h>

typedef struct PauseThread PauseThread;

/* Wakes the thread from whatever it sleeps in (a poll on an eventfd), so
 * that it reaches its pause point.  Called with the pause lock held: it
 * must not block. */
typedef void (*PauseKick)(void *opaque);

/* Before the thread starts; a pause in force parks it at its first
 * pause point. */
PauseThread *pause_thread_register(const char *name, PauseKick kick,
                                   void *opaque);
/* The thread is about to end: a pause no longer waits for it and its
 * pause point no longer parks.  Before the owner joins it. */
void pause_thread_leave(PauseThread *t);
/* After the thread is joined. */
void pause_thread_free(PauseThread *t);

/* The thread's safe point: returns at once unless a pause is in force,
 * else parks until it ends (or the thread leaves).  True when it parked,
 * so the caller looks again at whatever told it to stop. */
bool pause_point(PauseThread *t);

/* Whether @t is parked at its pause point now, a pause in force: false
 * from the resume_all() that ends it on, though @t may not have run yet.
 * It stays parked until that resume_all(), which a caller that is itself
 * registered and not parked, or the main thread between its pause and
 * resume, knows cannot come. */
bool pause_thread_parked(PauseThread *t);

/* Main thread only.  @why is the trace events' reason
 * (pause_park_requested, pause_park_done): the run state entered, "reset",
 * "migration"; pause_all() gives its caller's name. */
void pause_all_from(const char *why);
#define pause_all() pause_all_from(__func__)
void resume_all(void);

#endif
