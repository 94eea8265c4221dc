/*
 * --preconfig: the process serves QMP before the machine is finished
 * (no devices yet, only commands marked allow_preconfig run), until the
 * client sends x-exit-preconfig.
 */
#ifndef SYSTEM_PRECONFIG_H
#define SYSTEM_PRECONFIG_H

#include <glib.h>
#include <stdbool.h>

/* Enters the preconfig state; x-exit-preconfig calls @finish once, which
 * finishes the machine, or fails with *errp set for the client. */
void preconfig_enter(bool (*finish)(void *opaque, GError **errp),
                     void *opaque);

#endif
