/*
 * Migration capabilities and parameters, as QMP sets and shows them
 * (migrate-set-capabilities, migrate-set-parameters and their queries).
 * Capabilities are QEMU's list; illan can turn on only those it has, and
 * says so for the rest.  The setters are the main thread's; the getters
 * any thread's, since a migration thread reads the parameters while QMP
 * may change them (QEMU applies a new bandwidth at once too).
 */
#ifndef MIGRATION_OPTIONS_H
#define MIGRATION_OPTIONS_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

/* QEMU's defaults: 300 ms, 128 MiB/s, and 0 (measure the bandwidth). */
#define MIGRATE_DEFAULT_DOWNTIME_LIMIT_MS  300
#define MIGRATE_DEFAULT_MAX_BANDWIDTH      (128ull << 20)
#define MIGRATE_MAX_DOWNTIME_LIMIT_MS      2000000

/* The "events" capability: MIGRATION and MIGRATION_PASS are sent. */
bool migrate_events(void);
int64_t migrate_downtime_limit_ms(void);
/* Bytes per second; 0 for max-bandwidth means no limit. */
uint64_t migrate_max_bandwidth(void);
uint64_t migrate_avail_switchover_bandwidth(void);

/* [{ "capability": NAME, "state": BOOL }] for every capability QEMU
 * names. */
JsonArray *migrate_capabilities_query(void);
/* @caps as migrate-set-capabilities has it; all or nothing. */
bool migrate_capabilities_set(JsonArray *caps, GError **errp);
JsonObject *migrate_parameters_query(void);
/* @params as migrate-set-parameters has it; all or nothing. */
bool migrate_parameters_set(JsonObject *params, GError **errp);

#endif
