/*
 * query-qmp-schema: what every QMP command takes and returns and what
 * every event carries, in QEMU's introspection format (SchemaInfo) with
 * plain type names.  The description is a table apart from the handlers,
 * as QEMU's is; tests/unit/test-qmp-schema.c and qemu-client-test hold
 * the two together.
 */
#ifndef MONITOR_QMP_SCHEMA_H
#define MONITOR_QMP_SCHEMA_H

#include <json-glib/json-glib.h>

/* The whole schema as QEMU returns it: an array of SchemaInfo (new). */
JsonArray *qmp_schema_build(void);

#endif
