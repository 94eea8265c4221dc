/*
 * Migration's QMP commands: migrate, migrate_cancel, migrate-incoming and
 * query-migrate.
 * The MIGRATION events come from migration's notifiers.
 */
#include "migration/migration.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

static JsonNode *gerror_to_qmp(GError *gerr, QmpError *err)
{
    qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
    g_error_free(gerr);
    return NULL;
}

static JsonNode *qmp_migrate(JsonObject *args, QmpError *err)
{
    GError *gerr = NULL;

    if (!migration_outgoing(json_object_get_string_member(args, "uri"),
                            &gerr)) {
        return gerror_to_qmp(gerr, err);
    }
    return qmp_return_empty();
}

static JsonNode *qmp_migrate_cancel(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    migration_cancel();
    return qmp_return_empty();
}

static JsonNode *qmp_migrate_incoming(JsonObject *args, QmpError *err)
{
    GError *gerr = NULL;

    if (!migration_incoming_deferred(json_object_get_string_member(args,
                                                                   "uri"),
                                     &gerr)) {
        return gerror_to_qmp(gerr, err);
    }
    return qmp_return_empty();
}

static JsonNode *query_migrate(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return qmp_return_object(migration_query());
}

static const QmpArg migrate_args[] = {
    { "uri", QMP_ARG_STR, false }, { "detach", QMP_ARG_BOOL, true },
    { NULL, 0, false }
};
static const QmpArg migrate_incoming_args[] = {
    { "uri", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand migration_commands[] = {
    { "migrate", migrate_args, false, qmp_migrate, false },
    { "migrate_cancel", NULL, false, qmp_migrate_cancel, false },
    { "migrate-incoming", migrate_incoming_args, false, qmp_migrate_incoming, false },
    { "query-migrate", NULL, false, query_migrate, false },
};

static void migration_commands_register(void)
{
    qmp_register_commands(migration_commands,
                          G_N_ELEMENTS(migration_commands));
}
illan_init(migration_commands_register)
