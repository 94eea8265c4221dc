/*
 * Migration's QMP commands: migrate, migrate_cancel, migrate-incoming,
 * query-migrate, and the capabilities and parameters.
 * The MIGRATION events come from migration's notifiers.
 */
#include "migration/migration.h"
#include "migration/options.h"
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

static JsonNode *qmp_migrate_set_capabilities(JsonObject *args,
                                              QmpError *err)
{
    GError *gerr = NULL;

    /* As in QEMU: not while a migration may be reading them. */
    if (migration_in_progress()) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "There's a migration process "
                      "in progress");
        return NULL;
    }
    if (!migrate_capabilities_set(json_object_get_array_member(
                                      args, "capabilities"), &gerr)) {
        return gerror_to_qmp(gerr, err);
    }
    return qmp_return_empty();
}

static JsonNode *query_migrate_capabilities(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return qmp_return_array(migrate_capabilities_query());
}

static JsonNode *qmp_migrate_set_parameters(JsonObject *args, QmpError *err)
{
    GError *gerr = NULL;

    if (!migrate_parameters_set(args, &gerr)) {
        return gerror_to_qmp(gerr, err);
    }
    return qmp_return_empty();
}

static JsonNode *query_migrate_parameters(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return qmp_return_object(migrate_parameters_query());
}

static const QmpArg migrate_args[] = {
    { "uri", QMP_ARG_STR, false }, { "detach", QMP_ARG_BOOL, true },
    { NULL, 0, false }
};
static const QmpArg migrate_incoming_args[] = {
    { "uri", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpArg set_capabilities_args[] = {
    { "capabilities", QMP_ARG_ARRAY, false }, { NULL, 0, false }
};
/* Any other member is looked at by the command, which tells QEMU's
 * parameters illan lacks from names nobody has. */
static const QmpArg set_parameters_args[] = {
    { "downtime-limit", QMP_ARG_INT, true },
    { "max-bandwidth", QMP_ARG_INT, true },
    { "avail-switchover-bandwidth", QMP_ARG_INT, true },
    { NULL, 0, false }
};

static const QmpCommand migration_commands[] = {
    { "migrate", migrate_args, false, qmp_migrate, false },
    { "migrate_cancel", NULL, false, qmp_migrate_cancel, false },
    { "migrate-incoming", migrate_incoming_args, false, qmp_migrate_incoming, false },
    { "query-migrate", NULL, false, query_migrate, false },
    { "migrate-set-capabilities", set_capabilities_args, false,
      qmp_migrate_set_capabilities, false },
    { "query-migrate-capabilities", NULL, false, query_migrate_capabilities,
      false },
    { "migrate-set-parameters", set_parameters_args, true,
      qmp_migrate_set_parameters, false },
    { "query-migrate-parameters", NULL, false, query_migrate_parameters,
      false },
};

static void migration_commands_register(void)
{
    qmp_register_commands(migration_commands,
                          G_N_ELEMENTS(migration_commands));
}
illan_init(migration_commands_register)
