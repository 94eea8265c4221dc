/*
 * Helpers for the two-process migration suites: a unix dgram peer that
 * numbers the frames it injects, illan processes with a spapr-vlan on
 * that socket, the ibmveth guest model, and the QMP steps of a migration.
 */
#ifndef MIGRATION_HELPERS_H
#define MIGRATION_HELPERS_H

#include "libqtest.h"
#include "libqos/ibmveth.h"
#include "libqos/rig.h"

#define UNIT        QRIG_UNIT
#define OUR_MAC     QRIG_MAC
#define NPOOLS      3

typedef struct Rig {
    QRig base;                  /* the directory and the peer's socket */
    const char *dir;            /* base.dir */
    QTestState *src, *dst;
    char *src_dev, *dst_dev;
    QGuestAllocator alloc;
    QIbmveth *veth;
    uint16_t sent, seen;        /* tags injected and received so far */
    bool best_fit;              /* pools on: each size has its pool */
} Rig;

void rig_init(Rig *r);
/* Removes the rig's directory and what is in it. */
void rig_free(Rig *r);
/* A file in the rig's directory (caller frees). */
char *rig_path(Rig *r, const char *name);
/* An illan (-M @machine, 64M unless @extra says) whose NIC's backend is
 * the dgram socket @dev_path; @pools NULL keeps the machine's default. */
QTestState *rig_start(Rig *r, const char *dev_path, const char *machine,
                      const char *pools, const char *extra);
/* Opens the guest on r->src: pools of 16 x 512, 16 x 2048 and 8 x 16384
 * bytes, a 41-entry queue, in the first @ram_size bytes of RAM. */
void rig_open_guest(Rig *r, uint64_t ram_size);
/* Sends the next numbered frame, its size picking its pool, to the NIC
 * on @dev_path. */
void rig_inject(Rig *r, const char *dev_path);
/* The next frame must arrive and be the next number, whole; the guest
 * then replenishes. */
void rig_expect_next(Rig *r);

JsonObject *qmp_ok(QTestState *qts, const char *cmd);
/* The "events" capability on: MIGRATION and MIGRATION_PASS are sent. */
void migration_events_on(QTestState *qts);
char *run_state(QTestState *qts);
/* Waits (QTEST_WAIT_S) until the NIC has delivered exactly @n frames. */
void wait_delivered(QTestState *qts, gint64 n);
/* "bufs N: size:posted ..." of the NIC's pools. */
char *pool_table(QTestState *qts);
/* Polls query-migrate until completed or failed (QTEST_WAIT_S); returns
 * "return". */
JsonObject *wait_migration(QTestState *qts);
void assert_completed(QTestState *qts);
/* QMP migrate to @uri; the source must end in postmigrate. */
void migrate(QTestState *qts, const char *uri);

/* Stalled peers: the migration thread's cases. */

/* QMP migrate to @uri, which must reply at once. */
void migrate_start(QTestState *qts, const char *uri);
/* query-migrate's "return" (caller unrefs). */
JsonObject *query_migrate(QTestState *qts);
/* Waits until query-migrate says @status (QTEST_WAIT_S). */
void wait_migration_status(QTestState *qts, const char *status);
/* Waits until the migration is active with ram.transferred at least
 * @min and above 0; returns it. */
gint64 wait_migration_moved(QTestState *qts, gint64 min);
/* query-migrate's ram.transferred. */
gint64 migration_transferred(QTestState *qts);
/* Waits (QTEST_WAIT_S) until @file, written by an exec: command from
 * the source @qts, holds the whole stream: as many bytes as the source
 * sent, ending with the VM description's closing brace. */
void wait_whole_stream(QTestState *qts, const char *file);
/* A unix stream socket listening at @path, and one connected to it. */
int stall_listen(const char *path);
int stall_connect(const char *path);
/* Round trips of @n query-status commands, sent back to back: the
 * median and the 99th percentile, in milliseconds. */
typedef struct QmpLatency {
    double p50_ms, p99_ms;
} QmpLatency;
QmpLatency qmp_latency(QTestState *qts, int n);

#endif
