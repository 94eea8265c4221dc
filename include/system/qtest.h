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

/* @spec: "unix:PATH" (connect as client, as libqtest expects), "stdio",
 * or "null": no channel, input only from qtest_server_feed(), replies
 * dropped (but logged);
 * @log: where to log the traffic (the server closes it unless it is
 * stderr), or NULL for no log. */
QTestServer *qtest_server_start(const char *spec, FILE *log,
                                SpaprMachineState *spapr,
                                QTestClosedFn closed, void *opaque,
                                GError **errp);
/* Handles @data as if the client had sent it (the fuzz target). */
void qtest_server_feed(QTestServer *qs, const char *data, size_t len);
/* Lowers the largest read or write from 16 MiB (the fuzz target: a few
 * hundred 16 MiB reads fit in a 4 KiB input, and only copy). */
void qtest_server_set_max_transfer(QTestServer *qs, uint32_t bytes);
void qtest_server_free(QTestServer *qs);

#endif
