/* The run state: -S leaves the machine in prelaunch until it is started. */
#include "system/runstate.h"

static RunState current_state = RUN_STATE_PRELAUNCH;

RunState runstate_get(void)
{
    return current_state;
}

void runstate_set(RunState state)
{
    current_state = state;
}
