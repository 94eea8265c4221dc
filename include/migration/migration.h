/*
 * Migration as the user drives it: QMP migrate and migrate_cancel on the
 * source, -incoming (or -incoming defer and migrate-incoming) on the
 * destination, and query-migrate and MIGRATION events on both.  The
 * source writes the stream on its mig/src thread while the machine runs,
 * stops it for the switchover (finish-migrate) and ends in postmigrate;
 * the destination waits in
 * inmigrate, reads the stream on its mig/dst thread, and then runs (or
 * pauses, with -S).  These functions are the main thread's.
 */
#ifndef MIGRATION_MIGRATION_H
#define MIGRATION_MIGRATION_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>

#include "qemu/guest-ram.h"

/* QEMU's MigrationStatus, the part of it one-step migration goes
 * through. */
typedef enum MigrationStatus {
    MIGRATION_STATUS_NONE,
    MIGRATION_STATUS_SETUP,
    MIGRATION_STATUS_ACTIVE,
    MIGRATION_STATUS_COMPLETED,
    MIGRATION_STATUS_FAILED,
    MIGRATION_STATUS_CANCELLING,
    MIGRATION_STATUS_CANCELLED,
} MigrationStatus;

/* "none", "setup", "active", "completed", "failed", "cancelling",
 * "cancelled". */
const char *migration_status_name(MigrationStatus status);

/* Each change of the status, on either end (the monitor's MIGRATION
 * event). */
typedef void (*MigrationNotifier)(MigrationStatus status, void *opaque);
void migration_add_notifier(MigrationNotifier fn, void *opaque);
void migration_remove_notifier(MigrationNotifier fn, void *opaque);

/* Each pass of a live migration's source over dirty RAM, numbered
 * from 1 (the monitor's MIGRATION_PASS event); one listener. */
void migration_set_pass_notifier(void (*fn)(uint64_t pass));

/* The RAM that migrates and the machine type's name (never an alias),
 * which the stream carries; NULL when the machine is gone. */
void migration_set_machine(GuestRam *ram, const char *machine_type);

/* -incoming URI or "defer": the machine waits in inmigrate; @autostart
 * runs it once a stream has loaded.  Errors concern the URI. */
bool migration_incoming_start(const char *uri, bool autostart,
                              GError **errp);
/* QMP migrate-incoming, after -incoming defer or a refused stream. */
/* For -incoming URI given without -M or -m: waits for the stream on the
 * main thread and reads what its beginning says: the machine type and
 * the RAM size, each left as it was (NULL, 0) when the stream does not
 * say.  SIGINT and SIGTERM end the wait with *@interrupted set.  The
 * next migration_incoming_start() loads this stream. */
bool migration_incoming_peek(const char *uri, char **machine_type,
                             uint64_t *ram_size, bool *interrupted,
                             GError **errp);
bool migration_incoming_deferred(const char *uri, GError **errp);
/* QMP migrate: opens @uri and starts writing the stream while the
 * machine runs; returns at once.  A failure or cancel after that shows
 * in query-migrate, and the machine goes back to its run state. */
bool migration_outgoing(const char *uri, GError **errp);
/* QMP migrate_cancel: an outgoing stream in progress ends (cancelling,
 * then cancelled once its thread is out); otherwise nothing. */
void migration_cancel(void);
/* A stream is being written or read. */
bool migration_in_progress(void);
/* QMP query-migrate's reply. */
JsonObject *migration_query(void);
/* At exit, before the machine goes: a stream in progress is cancelled
 * (source) or refused (destination) and its thread joined. */
void migration_shutdown(void);
/* Why an -incoming URI given on the command line was refused, ending
 * the run (exit status 1), or NULL. */
GError *migration_take_fatal_error(void);
/* Drops a waiting incoming channel. */
void migration_cleanup(void);

#endif
