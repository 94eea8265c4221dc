/*
 * QMP events from the layers below the monitor, which only announce their
 * changes to notifiers: the run state (STOP, RESUME, RESET, SHUTDOWN),
 * migration (MIGRATION), NIC filters (NIC_RX_FILTER_CHANGED) and netdev
 * links (NETDEV_LINK_CHANGED) and stream peers (NETDEV_STREAM_CONNECTED,
 * NETDEV_STREAM_DISCONNECTED).
 */
#include "migration/migration.h"
#include "migration/options.h"
#include "monitor/qmp.h"
#include "net/net.h"
#include "qemu/runstate.h"

#define PERIPHERAL "/machine/peripheral"

static JsonObject *shutdown_cause(const char *reason)
{
    JsonObject *data = json_object_new();

    json_object_set_boolean_member(data, "guest", FALSE);
    json_object_set_string_member(data, "reason", reason);
    return data;
}

static void runstate_changed(RunstateEvent event, const char *reason,
                             void *opaque)
{
    (void)opaque;
    switch (event) {
    case RUNSTATE_EVENT_STOP:
        qmp_event_emit("STOP", NULL);
        break;
    case RUNSTATE_EVENT_RESUME:
        qmp_event_emit("RESUME", NULL);
        break;
    case RUNSTATE_EVENT_RESET:
        qmp_event_emit("RESET", shutdown_cause(reason));
        break;
    case RUNSTATE_EVENT_SHUTDOWN:
        qmp_event_emit("SHUTDOWN", shutdown_cause(reason));
        break;
    case RUNSTATE_EVENT_CHANGED:
        break;                  /* QEMU has no event for that alone */
    }
}

/* Migration's events, as QEMU sends them: only with the "events"
 * capability on. */
static void migration_changed(MigrationStatus status, void *opaque)
{
    JsonObject *data;

    (void)opaque;
    if (!migrate_events()) {
        return;
    }
    data = json_object_new();
    json_object_set_string_member(data, "status",
                                  migration_status_name(status));
    qmp_event_emit("MIGRATION", data);
}

static void migration_pass(uint64_t pass)
{
    JsonObject *data;

    if (!migrate_events()) {
        return;
    }
    data = json_object_new();
    json_object_set_int_member(data, "pass", pass);
    qmp_event_emit("MIGRATION_PASS", data);
}

static void rx_filter_changed(NetClientState *nic)
{
    JsonObject *data = json_object_new();
    g_autofree char *path = g_strdup_printf(PERIPHERAL "/%s",
                                            net_client_name(nic));

    json_object_set_string_member(data, "name", net_client_name(nic));
    json_object_set_string_member(data, "path", path);
    qmp_event_emit("NIC_RX_FILTER_CHANGED", data);
}

/* A backend's host interface went down, up, away or came back. */
static void netdev_link_changed(NetClientState *backend, const char *state,
                                const char *detail)
{
    JsonObject *data = json_object_new();

    json_object_set_string_member(data, "netdev-id",
                                  net_client_name(backend));
    json_object_set_string_member(data, "state", state);
    json_object_set_string_member(data, "detail", detail);
    qmp_event_emit("NETDEV_LINK_CHANGED", data);
}

/* A stream netdev's peer arrived (@addr, QEMU's SocketAddress) or left. */
static void netdev_stream_changed(NetClientState *backend, GVariant *addr)
{
    JsonObject *data = json_object_new();

    json_object_set_string_member(data, "netdev-id",
                                  net_client_name(backend));
    if (addr) {
        json_object_set_member(data, "addr", json_gvariant_serialize(addr));
        qmp_event_emit("NETDEV_STREAM_CONNECTED", data);
    } else {
        qmp_event_emit("NETDEV_STREAM_DISCONNECTED", data);
    }
}

void qmp_events_subscribe(void)
{
    runstate_add_notifier(runstate_changed, NULL);
    migration_add_notifier(migration_changed, NULL);
    migration_set_pass_notifier(migration_pass);
    net_set_rx_filter_notifier(rx_filter_changed);
    net_set_link_event_notifier(netdev_link_changed);
    net_set_stream_event_notifier(netdev_stream_changed);
}

void qmp_events_unsubscribe(void)
{
    runstate_remove_notifier(runstate_changed, NULL);
    migration_remove_notifier(migration_changed, NULL);
    migration_set_pass_notifier(NULL);
    net_set_rx_filter_notifier(NULL);
    net_set_link_event_notifier(NULL);
    net_set_stream_event_notifier(NULL);
}
