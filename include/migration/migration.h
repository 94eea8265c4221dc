/*
 * Migration as the user drives it: QMP migrate on the source, -incoming
 * (or -incoming defer and migrate-incoming) on the destination, and
 * query-migrate and MIGRATION events on both.  The source stops the
 * machine, writes the whole stream and ends in postmigrate; the
 * destination waits in inmigrate, loads, and then runs (or pauses, with
 * -S).  Main thread only.
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
} MigrationStatus;

/* "none", "setup", "active", "completed", "failed". */
const char *migration_status_name(MigrationStatus status);

/* Each change of the status, on either end (the monitor's MIGRATION
 * event). */
typedef void (*MigrationNotifier)(MigrationStatus status, void *opaque);
void migration_add_notifier(MigrationNotifier fn, void *opaque);
void migration_remove_notifier(MigrationNotifier fn, void *opaque);

/* The RAM that migrates and the machine type's name (never an alias),
 * which the stream carries; NULL when the machine is gone. */
void migration_set_machine(GuestRam *ram, const char *machine_type);

/* -incoming URI or "defer": the machine waits in inmigrate; @autostart
 * runs it once a stream has loaded.  Errors concern the URI. */
bool migration_incoming_start(const char *uri, bool autostart,
                              GError **errp);
/* QMP migrate-incoming, after -incoming defer or a refused stream. */
bool migration_incoming_deferred(const char *uri, GError **errp);
/* QMP migrate: the whole stream to @uri; a failure after the channel is
 * open shows in query-migrate, and the machine runs again. */
bool migration_outgoing(const char *uri, GError **errp);
/* QMP query-migrate's reply. */
JsonObject *migration_query(void);
/* Drops a waiting incoming channel. */
/* Why an -incoming URI given on the command line was refused, ending
 * the run (exit status 1), or NULL. */
GError *migration_take_fatal_error(void);
void migration_cleanup(void);

#endif
