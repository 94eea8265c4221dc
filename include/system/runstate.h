/*
 * The VM run state, as QEMU names it, and the requests that change it:
 * stop, start, reset and shutdown, each announced as a QMP event.
 */
#ifndef SYSTEM_RUNSTATE_H
#define SYSTEM_RUNSTATE_H

#include <stdbool.h>

typedef enum RunState {
    RUN_STATE_PRELAUNCH,    /* -S: built but not yet started */
    RUN_STATE_RUNNING,
    RUN_STATE_PAUSED,
    RUN_STATE_SHUTDOWN,
    RUN_STATE_INMIGRATE,    /* waiting for an incoming migration stream */
    RUN_STATE_POSTMIGRATE,  /* stopped after migrating out */
} RunState;

RunState runstate_get(void);
void runstate_set(RunState state);
/* Frames reach guest memory only while this is true. */
bool runstate_is_running(void);
const char *runstate_name(RunState state);

/* How the machine is reset and the main loop ended; set by main(). */
typedef struct RunstateHandlers {
    void (*reset)(void *opaque);
    void (*quit)(void *opaque);
    void *opaque;
} RunstateHandlers;

void runstate_set_handlers(const RunstateHandlers *handlers);

/* Running → paused, with STOP; anything else is left as it is. */
void vm_stop(void);
/* Prelaunch, paused or postmigrate → running, with RESUME. */
void vm_start(void);
/* Resets the machine, with RESET {"guest": false, "reason": @reason}. */
void qemu_system_reset(const char *reason);
/* Ends the run, with SHUTDOWN {"guest": false, "reason": @reason}. */
void qemu_system_shutdown(const char *reason);

#endif
