/*
 * The QMP monitor: unix-socket servers and client connections speaking
 * QEMU's machine protocol (JSON objects, CRLF-terminated replies), the
 * command table and events.  Main thread only.
 */
#ifndef MONITOR_QMP_H
#define MONITOR_QMP_H

#include <json-glib/json-glib.h>
#include <stdbool.h>

/* Error classes. */
#define QMP_ERROR_GENERIC           "GenericError"
#define QMP_ERROR_COMMAND_NOT_FOUND "CommandNotFound"
#define QMP_ERROR_DEVICE_NOT_FOUND  "DeviceNotFound"

typedef struct QmpError {
    const char *cls;
    char *desc;
} QmpError;

void qmp_error_set(QmpError *err, const char *cls, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

typedef enum QmpArgType {
    QMP_ARG_STR,
    QMP_ARG_INT,
    QMP_ARG_BOOL,
    QMP_ARG_ARRAY,
} QmpArgType;

typedef struct QmpArg {
    const char *name;
    QmpArgType type;
    bool optional;
} QmpArg;

typedef struct QmpCommand {
    const char *name;
    const QmpArg *args;         /* ends with a NULL name; NULL for none */
    bool takes_any_args;        /* the command checks its own (netdev_add) */
    /* The reply's "return" value (owned), or NULL with *err set. */
    JsonNode *(*fn)(JsonObject *args, QmpError *err);
} QmpCommand;

typedef struct SpaprMachineState SpaprMachineState;

/* The machine the commands act on (monitor/qmp-cmds.c). */
void qmp_set_machine(SpaprMachineState *spapr);

/* The command table (monitor/qmp-cmds.c). */
const QmpCommand *qmp_find_command(const char *name);
void qmp_foreach_command(void (*fn)(const QmpCommand *cmd, void *opaque),
                         void *opaque);

/* -qmp unix:PATH,server=on: listens for any number of clients; with
 * @wait, blocks until the first one connects. */
bool qmp_listen(const char *path, bool wait, GError **errp);
/* -chardev socket,path=PATH (no server=on) + -mon: connects to PATH. */
bool qmp_connect(const char *path, GError **errp);
void qmp_cleanup(void);

/* {"qemu": {"major", "minor", "micro"}, "package"}: for the greeting and
 * query-version. */
JsonObject *qmp_version_info(void);

/* Sends @name (with @data, taken; may be NULL) to every client past
 * capability negotiation. */
void qmp_event_emit(const char *name, JsonObject *data);

#endif
