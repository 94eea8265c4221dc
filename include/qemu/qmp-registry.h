/*
 * QMP commands.  Each module registers the commands that show or change
 * its own state, from its own file with illan_init(); the monitor finds
 * them here by name, checks their arguments and sends what they return.
 * Handlers run on the main thread.
 */
#ifndef QEMU_QMP_REGISTRY_H
#define QEMU_QMP_REGISTRY_H

#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stddef.h>

/* Error classes. */
#define QMP_ERROR_GENERIC           "GenericError"
#define QMP_ERROR_COMMAND_NOT_FOUND "CommandNotFound"
#define QMP_ERROR_DEVICE_NOT_FOUND  "DeviceNotFound"

typedef struct QmpError {
    const char *cls;
    char *desc;
} QmpError;

/* Sets (or replaces) the error; the text is made valid UTF-8, since it
 * may quote what the client sent. */
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
    /* The reply's "return" value (owned), or NULL with *err set.  @args
     * has been checked against the declared ones. */
    JsonNode *(*fn)(JsonObject *args, QmpError *err);
    bool allow_preconfig;       /* may run before the machine is built */
} QmpCommand;

/* Adds @n commands, which must live as long as the program; a name may
 * be registered once. */
void qmp_register_commands(const QmpCommand *cmds, size_t n);
/* Forgets @name: the fuzz target's way to keep commands that write
 * files or reach the host out of its reach. */
void qmp_unregister_command(const char *name);
const QmpCommand *qmp_find_command(const char *name);
/* Every command, in no particular order: registration runs from
 * constructors. */
void qmp_foreach_command(void (*fn)(const QmpCommand *cmd, void *opaque),
                         void *opaque);

/* While the machine is not built yet (--preconfig), only commands with
 * allow_preconfig run. */
void qmp_set_machine_ready(bool ready);
/* Whether @cmd may run now; false with *err set if not. */
bool qmp_command_allowed(const QmpCommand *cmd, QmpError *err);

/* Return values. */
JsonNode *qmp_return_empty(void);
JsonNode *qmp_return_object(JsonObject *obj);   /* takes @obj */
JsonNode *qmp_return_array(JsonArray *arr);     /* takes @arr */

#endif
