/* The VM run state, as QEMU names it. */
#ifndef SYSTEM_RUNSTATE_H
#define SYSTEM_RUNSTATE_H

typedef enum RunState {
    RUN_STATE_PRELAUNCH,    /* -S: built but not yet started */
    RUN_STATE_RUNNING,
    RUN_STATE_PAUSED,
    RUN_STATE_SHUTDOWN,
} RunState;

RunState runstate_get(void);
void runstate_set(RunState state);

#endif
