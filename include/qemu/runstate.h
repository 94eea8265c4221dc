/*
 * The VM run state, as QEMU names it, and the requests that change it:
 * stop, start, reset and shutdown.  Every state but running holds the one
 * pause (qemu/pause.h), so no vCPU or I/O thread touches the machine then.
 * Changes are announced to notifiers (the monitor turns them into QMP
 * events); all of this is main-thread only.
 */
#ifndef QEMU_RUNSTATE_H
#define QEMU_RUNSTATE_H

#include <stdbool.h>

typedef enum RunState {
    RUN_STATE_PRELAUNCH,    /* -S: built but not yet started */
    RUN_STATE_RUNNING,
    RUN_STATE_PAUSED,
    RUN_STATE_SHUTDOWN,
    RUN_STATE_INMIGRATE,    /* waiting for an incoming migration stream */
    RUN_STATE_POSTMIGRATE,  /* stopped after migrating out */
    RUN_STATE_FINISH_MIGRATE, /* stopped while the stream is written */
} RunState;

/* Any thread. */
RunState runstate_get(void);
/* Frames reach guest memory only while this is true.  Any thread. */
bool runstate_is_running(void);
const char *runstate_name(RunState state);
/* Leaving running pauses every thread first; entering it resumes them. */
void runstate_set(RunState state);

/* How the machine is reset and the main loop ended; set by main(). */
typedef struct RunstateHandlers {
    void (*reset)(void *opaque);
    void (*quit)(void *opaque);
    void *opaque;
} RunstateHandlers;

void runstate_set_handlers(const RunstateHandlers *handlers);

typedef enum RunstateEvent {
    RUNSTATE_EVENT_STOP,
    RUNSTATE_EVENT_RESUME,
    RUNSTATE_EVENT_RESET,       /* @reason: QEMU's ShutdownCause name */
    RUNSTATE_EVENT_SHUTDOWN,    /* @reason, likewise */
    /* Any change of runstate_get(), announced while every thread is
     * parked: after the pause when leaving running, before the resume
     * when entering it. */
    RUNSTATE_EVENT_CHANGED,
} RunstateEvent;

typedef void (*RunstateNotifier)(RunstateEvent event, const char *reason,
                                 void *opaque);
void runstate_add_notifier(RunstateNotifier fn, void *opaque);
void runstate_remove_notifier(RunstateNotifier fn, void *opaque);

/* Running → paused, with STOP; anything else is left as it is. */
void vm_stop(void);
/* Running → @state, with STOP, as QEMU's vm_stop_force_state: a
 * migration's switchover stops straight into finish-migrate, so that the
 * run state's notifiers see why it stops.  Any other state → @state. */
void vm_stop_force_state(RunState state);
/* Prelaunch, paused or postmigrate → running, with RESUME. */
void vm_start(void);
/* Resets the machine with every thread parked, then RESET. */
void qemu_system_reset(const char *reason);
/* Ends the run, with SHUTDOWN; the threads stay parked. */
void qemu_system_shutdown(const char *reason);

#endif
