/*
 * The qtest server: QEMU's line protocol on a socket or stdio, through
 * which a test acts as the guest, plus our `hcall` verb.
 */
#ifndef SYSTEM_QTEST_H
#define SYSTEM_QTEST_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

#include "hw/ppc/spapr.h"

typedef struct QTestServer QTestServer;

/* Called once when the client hangs up. */
typedef void (*QTestClosedFn)(void *opaque);

/* @spec: "unix:PATH" (connect as client, as libqtest expects) or "stdio";
 * @log: where to log the traffic (the server closes it unless it is
 * stderr), or NULL for no log. */
QTestServer *qtest_server_start(const char *spec, FILE *log,
                                SpaprMachineState *spapr,
                                QTestClosedFn closed, void *opaque,
                                GError **errp);
void qtest_server_free(QTestServer *qs);

#endif
