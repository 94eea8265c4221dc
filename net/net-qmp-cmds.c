/*
 * The net core's QMP commands: netdev_add and netdev_del, set_link,
 * announce-self, query-rx-filter for the NICs, and x-query-net-stats for
 * every client.  What only a NIC
 * or a backend knows (its receive filter, its own counters) comes from
 * its query operations, as GVariant dictionaries.
 */
#include "net/announce.h"
#include "net/net.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <string.h>

/* A NIC is also named by its device's QOM path. */
#define PERIPHERAL "/machine/peripheral/"

/* netdev_add and netdev_del. */

/* Appends key=value in option syntax, doubling commas in the value. */
static void append_opt(GString *out, const char *key, const char *value)
{
    if (out->len) {
        g_string_append_c(out, ',');
    }
    g_string_append_printf(out, "%s=", key);
    for (const char *c = value; *c; c++) {
        if (*c == ',') {
            g_string_append_c(out, ',');
        }
        g_string_append_c(out, *c);
    }
}

static char *scalar_text(JsonNode *v)
{
    if (!JSON_NODE_HOLDS_VALUE(v)) {
        return NULL;
    }
    switch (json_node_get_value_type(v)) {
    case G_TYPE_BOOLEAN:
        return g_strdup(json_node_get_boolean(v) ? "on" : "off");
    case G_TYPE_INT64:
        return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(v));
    case G_TYPE_STRING:
        return g_strdup(json_node_get_string(v));
    default:
        return NULL;
    }
}

/* netdev_add takes the -netdev keys as JSON; nested objects (QMP's
 * "local": {"type": ...}) become dotted keys. */
static bool flatten_opts(JsonObject *obj, const char *prefix, GString *out,
                         QmpError *err)
{
    g_autoptr(GList) names = json_object_get_members(obj);

    for (GList *l = names; l; l = l->next) {
        JsonNode *v = json_object_get_member(obj, l->data);
        g_autofree char *key = prefix ? g_strdup_printf("%s.%s", prefix,
                                                        (char *)l->data)
                                      : g_strdup(l->data);
        g_autofree char *text = NULL;

        /* Keys go into option syntax unescaped: no ',' or '=' in them. */
        if (strpbrk(l->data, ",=") || !*(char *)l->data) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "Parameter name '%s' is not valid", (char *)l->data);
            return false;
        }
        if (JSON_NODE_HOLDS_OBJECT(v)) {
            if (!flatten_opts(json_node_get_object(v), key, out, err)) {
                return false;
            }
            continue;
        }
        text = scalar_text(v);
        if (!text) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "Invalid parameter type for '%s', expected: "
                          "a string, number, boolean or object", key);
            return false;
        }
        append_opt(out, key, text);
    }
    return true;
}

static JsonNode *netdev_add(JsonObject *args, QmpError *err)
{
    const char *type = json_object_get_string_member(args, "type");
    g_autoptr(GString) text = g_string_new(NULL);
    g_autoptr(QemuOpts) opts = NULL;
    g_autoptr(GError) gerr = NULL;

    if (!netdev_type_exists(type)) {
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Invalid netdev type '%s' (see -netdev help)", type);
        return NULL;
    }
    if (!flatten_opts(args, NULL, text, err)) {
        return NULL;
    }
    opts = qemu_opts_parse(text->str, NULL, &gerr);
    if (!opts || !net_netdev_add(opts, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

static JsonNode *netdev_del(JsonObject *args, QmpError *err)
{
    const char *id = json_object_get_string_member(args, "id");
    g_autoptr(GError) gerr = NULL;

    if (!net_netdev_exists(id)) {
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Device '%s' not found", id);
        return NULL;
    }
    if (!net_netdev_del(id, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

/* query-rx-filter: QEMU's RxFilterInfo, one per NIC, in creation order. */

/* Takes @filter, the NIC's RxFilterInfo less "name". */
static JsonObject *rx_filter_info(NetClientState *nic, GVariant *filter)
{
    g_autoptr(JsonNode) members = json_gvariant_serialize(filter);
    JsonObject *o = json_object_new();
    g_autoptr(GList) names = NULL;
    JsonObject *from = json_node_get_object(members);

    json_object_set_string_member(o, "name", net_client_name(nic));
    names = json_object_get_members(from);
    for (GList *l = names; l; l = l->next) {
        json_object_set_member(o, l->data,
                               json_node_copy(json_object_get_member(from,
                                                                     l->data)));
    }
    g_variant_unref(filter);
    return o;
}

/* Each NIC listed hears of its next filter change again. */
static void add_rx_filter(NetClientState *nc, bool is_nic, void *opaque)
{
    GVariant *filter = is_nic ? net_nic_query_rx_filter(nc) : NULL;

    if (filter) {
        json_array_add_object_element(opaque, rx_filter_info(nc, filter));
        net_nic_rx_filter_rearm(nc);
    }
}

typedef struct NicLookup {
    const char *name;
    NetClientState *nic;
} NicLookup;

static void match_nic(NetClientState *nc, bool is_nic, void *opaque)
{
    NicLookup *lookup = opaque;

    if (is_nic && !strcmp(net_client_name(nc), lookup->name)) {
        lookup->nic = nc;
    }
}

static NetClientState *find_nic(const char *name)
{
    NicLookup lookup = {
        .name = g_str_has_prefix(name, PERIPHERAL) ?
                name + strlen(PERIPHERAL) : name,
    };

    net_foreach_client(match_nic, &lookup);
    return lookup.nic;
}

/* set_link: as QEMU's, every client of that name (a netdev and a NIC
 * may share one); a netdev's NIC follows it, while a NIC's own link
 * leaves its netdev as it was.  No event. */

typedef struct LinkChange {
    const char *name;
    bool up;
    unsigned found;
} LinkChange;

static void change_link(NetClientState *nc, bool is_nic, void *opaque)
{
    LinkChange *change = opaque;
    NetClientState *peer = net_client_peer(nc);

    if (strcmp(net_client_name(nc), change->name)) {
        return;
    }
    change->found++;
    net_client_set_link(nc, change->up);
    if (!is_nic && peer) {
        net_client_set_link(peer, change->up);
    }
}

static JsonNode *set_link(JsonObject *args, QmpError *err)
{
    LinkChange change = {
        .name = json_object_get_string_member(args, "name"),
        .up = json_object_get_boolean_member(args, "up"),
    };

    net_foreach_client(change_link, &change);
    if (!change.found) {
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Device '%s' not found", change.name);
        return NULL;
    }
    return qmp_return_empty();
}

static JsonNode *query_rx_filter(JsonObject *args, QmpError *err)
{
    const char *name = json_object_has_member(args, "name") ?
                       json_object_get_string_member(args, "name") : NULL;
    JsonArray *list = json_array_new();
    NetClientState *nic;

    if (!name) {
        net_foreach_client(add_rx_filter, list);
        return qmp_return_array(list);
    }
    nic = find_nic(name);
    if (!nic) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      net_netdev_exists(name) ? "net client(%s) isn't a NIC"
                                              : "invalid net client name: %s",
                      name);
        json_array_unref(list);
        return NULL;
    }
    add_rx_filter(nic, true, list);
    return qmp_return_array(list);
}

/* x-query-net-stats: every counter, arranged so that frames in equals
 * delivered plus the sum of dropped, for each client. */

static JsonObject *rx_stats(const NetClientStats *st)
{
    JsonObject *rx = json_object_new();
    g_autoptr(GVariant) dropped =
        g_variant_ref_sink(net_rx_dropped_variant(st->rx_results));

    json_object_set_int_member(rx, "frames", st->rx_frames);
    json_object_set_int_member(rx, "bytes", st->rx_bytes);
    json_object_set_int_member(rx, "batches", st->rx_batches);
    json_object_set_int_member(rx, "delivered",
                               st->rx_results[NET_RX_DELIVERED]);
    json_object_set_member(rx, "dropped", json_gvariant_serialize(dropped));
    return rx;
}

static JsonObject *tx_stats(const NetClientStats *st)
{
    JsonObject *tx = json_object_new();

    json_object_set_int_member(tx, "frames", st->tx_frames);
    json_object_set_int_member(tx, "bytes", st->tx_bytes);
    json_object_set_int_member(tx, "errors", st->tx_errors);
    json_object_set_int_member(tx, "dropped", st->tx_dropped);
    return tx;
}

static void set_peer_name(JsonObject *o, const char *key, NetClientState *nc)
{
    NetClientState *peer = net_client_peer(nc);

    if (peer) {
        json_object_set_string_member(o, key, net_client_name(peer));
    } else {
        json_object_set_null_member(o, key);
    }
}

/* Takes @v, when there is one. */
static void set_variant(JsonObject *o, const char *key, GVariant *v)
{
    if (v) {
        json_object_set_member(o, key, json_gvariant_serialize(v));
        g_variant_unref(v);
    }
}

static JsonObject *nic_stats(NetClientState *nc)
{
    JsonObject *o = json_object_new();
    NetClientStats st;

    net_client_get_stats(nc, &st);
    json_object_set_string_member(o, "name", net_client_name(nc));
    json_object_set_string_member(o, "model", net_nic_model(nc));
    set_peer_name(o, "netdev", nc);
    json_object_set_boolean_member(o, "link-up", net_client_link_up(nc));
    json_object_set_object_member(o, "rx", rx_stats(&st));
    json_object_set_object_member(o, "tx", tx_stats(&st));
    set_variant(o, "device", net_nic_query(nc));
    return o;
}

static JsonObject *netdev_stats(NetClientState *nc)
{
    JsonObject *o = json_object_new();
    NetClientStats st;

    net_client_get_stats(nc, &st);
    json_object_set_string_member(o, "name", net_client_name(nc));
    json_object_set_string_member(o, "type",
                                  net_netdev_type(net_client_name(nc)));
    set_peer_name(o, "nic", nc);
    json_object_set_object_member(o, "rx", rx_stats(&st));
    json_object_set_int_member(o, "rx-errors", st.rx_errors);
    json_object_set_object_member(o, "tx", tx_stats(&st));
    set_variant(o, "backend", net_backend_query(nc));
    return o;
}

static void add_client_stats(NetClientState *nc, bool is_nic, void *opaque)
{
    JsonObject *o = opaque;

    json_array_add_object_element(
        json_object_get_array_member(o, is_nic ? "nics" : "netdevs"),
        is_nic ? nic_stats(nc) : netdev_stats(nc));
}

static JsonNode *query_net_stats(JsonObject *args, QmpError *err)
{
    JsonObject *o = json_object_new();

    (void)args, (void)err;
    json_object_set_array_member(o, "nics", json_array_new());
    json_object_set_array_member(o, "netdevs", json_array_new());
    net_foreach_client(add_client_stats, o);
    return qmp_return_object(o);
}

/* announce-self: QEMU's AnnounceParameters, boxed. */

static char **string_list(JsonArray *arr, const char *name, QmpError *err)
{
    guint n = json_array_get_length(arr);
    g_auto(GStrv) list = g_new0(char *, n + 1);

    for (guint i = 0; i < n; i++) {
        JsonNode *v = json_array_get_element(arr, i);

        if (!JSON_NODE_HOLDS_VALUE(v) ||
            json_node_get_value_type(v) != G_TYPE_STRING) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type "
                          "for '%s[%u]', expected: string", name, i);
            return NULL;
        }
        list[i] = g_strdup(json_node_get_string(v));
    }
    return g_steal_pointer(&list);
}

static JsonNode *announce_self_cmd(JsonObject *args, QmpError *err)
{
    AnnounceParameters p = {
        .initial = json_object_get_int_member(args, "initial"),
        .max = json_object_get_int_member(args, "max"),
        .rounds = json_object_get_int_member(args, "rounds"),
        .step = json_object_get_int_member(args, "step"),
        .id = (char *)json_object_get_string_member_with_default(args, "id",
                                                                 NULL),
    };
    g_auto(GStrv) interfaces = NULL;
    g_autoptr(GError) gerr = NULL;

    if (json_object_has_member(args, "interfaces")) {
        interfaces = string_list(json_object_get_array_member(args,
                                                              "interfaces"),
                                 "interfaces", err);
        if (!interfaces) {
            return NULL;
        }
    }
    p.interfaces = interfaces;
    if (!announce_self(&p, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

static const QmpArg announce_self_args[] = {
    { "initial", QMP_ARG_INT, false }, { "max", QMP_ARG_INT, false },
    { "rounds", QMP_ARG_INT, false }, { "step", QMP_ARG_INT, false },
    { "interfaces", QMP_ARG_ARRAY, true }, { "id", QMP_ARG_STR, true },
    { NULL, 0, false }
};
static const QmpArg netdev_add_args[] = {
    { "type", QMP_ARG_STR, false }, { "id", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg netdev_del_args[] = {
    { "id", QMP_ARG_STR, false }, { NULL, 0, false }
};
static const QmpArg set_link_args[] = {
    { "name", QMP_ARG_STR, false }, { "up", QMP_ARG_BOOL, false },
    { NULL, 0, false }
};
static const QmpArg rx_filter_args[] = {
    { "name", QMP_ARG_STR, true }, { NULL, 0, false }
};

static const QmpCommand net_commands[] = {
    { "query-rx-filter", rx_filter_args, false, query_rx_filter, false },
    { "netdev_add", netdev_add_args, true, netdev_add, true },
    { "netdev_del", netdev_del_args, false, netdev_del, true },
    { "set_link", set_link_args, false, set_link, false },
    { "announce-self", announce_self_args, false, announce_self_cmd, false },
    { "x-query-net-stats", NULL, false, query_net_stats, false },
};

static void net_commands_register(void)
{
    qmp_register_commands(net_commands, G_N_ELEMENTS(net_commands));
}
illan_init(net_commands_register)
