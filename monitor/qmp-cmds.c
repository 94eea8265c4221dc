/*
 * The QMP commands.  Each reads or changes the machine through the same
 * APIs the rest of illan uses; none keeps state of its own.
 */
#include "guest/guest.h"
#include "hw/net/spapr_llan.h"
#include "hw/ppc/spapr.h"
#include "hw/ppc/spapr_vio.h"
#include "migration/migration.h"
#include "monitor/qmp.h"
#include "net/net.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"
#include "qemu/runstate.h"

#include <string.h>

#define PERIPHERAL "/machine/peripheral"

static SpaprMachineState *machine;

static JsonNode *empty_return(void)
{
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);

    json_node_take_object(node, json_object_new());
    return node;
}

static JsonNode *object_node(JsonObject *obj)
{
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);

    json_node_take_object(node, obj);
    return node;
}

static JsonNode *array_node(JsonArray *arr)
{
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);

    json_node_take_array(node, arr);
    return node;
}

/* Session and run state. */

static JsonNode *query_status(JsonObject *args, QmpError *err)
{
    JsonObject *st = json_object_new();

    (void)args, (void)err;
    json_object_set_boolean_member(st, "running", runstate_is_running());
    json_object_set_string_member(st, "status", runstate_name(runstate_get()));
    return object_node(st);
}

static JsonNode *qmp_stop(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    vm_stop();
    return empty_return();
}

static JsonNode *qmp_cont(JsonObject *args, QmpError *err)
{
    (void)args;
    if (runstate_get() == RUN_STATE_SHUTDOWN) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "The machine is shutting down");
        return NULL;
    }
    vm_start();
    return empty_return();
}

static JsonNode *system_reset(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    qemu_system_reset("host-qmp-system-reset");
    return empty_return();
}

/* QEMU's pmemsave: guest-physical memory to a file, as it is now. */
static JsonNode *pmemsave(JsonObject *args, QmpError *err)
{
    gint64 addr = json_object_get_int_member(args, "val");
    gint64 size = json_object_get_int_member(args, "size");
    const char *path = json_object_get_string_member(args, "filename");
    GuestRam *ram = spapr_ram(machine);
    void *data;
    g_autoptr(GError) gerr = NULL;

    data = addr >= 0 && size >= 0 ? guest_ram_ptr(ram, addr, size) : NULL;
    if (!data) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter 'val': "
                      "0x%" G_GINT64_MODIFIER "x+%" G_GINT64_FORMAT
                      " is not guest RAM", addr, size);
        return NULL;
    }
    if (!g_file_set_contents(path, data, size, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Could not open '%s': %s",
                      path, gerr->message);
        return NULL;
    }
    return empty_return();
}

/* After the reply has gone out, so that SHUTDOWN follows it. */
static gboolean quit_after_reply(gpointer opaque)
{
    (void)opaque;
    qemu_system_shutdown("host-qmp-quit");
    return G_SOURCE_REMOVE;
}

static JsonNode *qmp_quit(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    g_idle_add(quit_after_reply, NULL);
    return empty_return();
}

/* Devices: the spapr-vlan NICs and the QOM-style paths of devices. */

static SpaprVioDevice *find_device(const char *id)
{
    return spapr_vio_find_by_path(spapr_vio_bus(machine), id);
}

static const char *rx_state(bool all, bool none)
{
    return all ? "all" : none ? "none" : "normal";
}

static JsonArray *mac_array(const MACAddr *macs, unsigned n)
{
    JsonArray *arr = json_array_new();

    for (unsigned i = 0; i < n; i++) {
        g_autofree char *str = mac_format(&macs[i]);
        json_array_add_string_element(arr, str);
    }
    return arr;
}

/* The filter as QEMU's RxFilterInfo describes one, from the device's real
 * state: filtering off means promiscuous; with it, unicast is the MAC
 * alone and multicast is the table. */
static JsonObject *rx_filter_info(SpaprVlanState *s)
{
    JsonObject *o = json_object_new();
    MACAddr current = spapr_vlan_get_mac(s);
    g_autofree char *mac = mac_format(&current);
    SpaprVlanFilter f;

    spapr_vlan_get_filter(s, &f);
    json_object_set_string_member(o, "name",
                                  net_client_name(spapr_vlan_nic(s)));
    json_object_set_boolean_member(o, "promiscuous", !f.filtering);
    json_object_set_string_member(o, "multicast",
                                  rx_state(f.rx_multicast && !f.filtering,
                                           !f.rx_multicast));
    json_object_set_string_member(o, "unicast",
                                  rx_state(!f.filtering, false));
    json_object_set_string_member(o, "vlan", "all");
    json_object_set_boolean_member(o, "broadcast-allowed", TRUE);
    json_object_set_boolean_member(o, "multicast-overflow", FALSE);
    json_object_set_boolean_member(o, "unicast-overflow", FALSE);
    json_object_set_string_member(o, "main-mac", mac);
    json_object_set_array_member(o, "vlan-table", json_array_new());
    json_object_set_array_member(o, "unicast-table", json_array_new());
    json_object_set_array_member(o, "multicast-table",
                                 mac_array(f.mcast, f.nmcast));
    return o;
}

static void add_rx_filter(SpaprVioDevice *dev, void *opaque)
{
    SpaprVlanState *s = spapr_vlan_from_vio(dev);

    if (s) {
        json_array_add_object_element(opaque, rx_filter_info(s));
        net_nic_rx_filter_rearm(spapr_vlan_nic(s));
    }
}

static JsonNode *query_rx_filter(JsonObject *args, QmpError *err)
{
    const char *name = json_object_has_member(args, "name") ?
                       json_object_get_string_member(args, "name") : NULL;
    JsonArray *list = json_array_new();
    SpaprVioDevice *dev;

    if (!name) {
        spapr_vio_bus_foreach(spapr_vio_bus(machine), add_rx_filter, list);
        return array_node(list);
    }
    dev = find_device(name);
    if (!dev) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      net_netdev_exists(name) ? "net client(%s) isn't a NIC"
                                              : "invalid net client name: %s",
                      name);
        json_array_unref(list);
        return NULL;
    }
    add_rx_filter(dev, list);
    return array_node(list);
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

static JsonObject *shutdown_cause(const char *reason)
{
    JsonObject *data = json_object_new();

    json_object_set_boolean_member(data, "guest", FALSE);
    json_object_set_string_member(data, "reason", reason);
    return data;
}

/* The run state's changes, as QEMU's events. */
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
    }
}

static void migration_changed(MigrationStatus status, void *opaque)
{
    JsonObject *data = json_object_new();

    (void)opaque;
    json_object_set_string_member(data, "status",
                                  migration_status_name(status));
    qmp_event_emit("MIGRATION", data);
}

/* qom-list and qom-get over /machine/peripheral/ID and its properties. */

static JsonObject *qom_entry(const char *name, const char *type)
{
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", name);
    json_object_set_string_member(o, "type", type);
    return o;
}

static void add_child(SpaprVioDevice *dev, void *opaque)
{
    g_autofree char *type = g_strdup_printf("child<%s>",
                                            dev->qdev.klass->name);

    json_array_add_object_element(opaque, qom_entry(dev->qdev.id, type));
}

static SpaprVioDevice *device_at(const char *path, QmpError *err)
{
    SpaprVioDevice *dev = find_device(path);

    if (!dev) {
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Device '%s' not found", path);
    }
    return dev;
}

static JsonNode *qom_list(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    JsonArray *list = json_array_new();
    SpaprVioDevice *dev;

    if (!strcmp(path, "/machine")) {
        json_array_add_object_element(list, qom_entry("peripheral",
                                                      "child<container>"));
        return array_node(list);
    }
    if (!strcmp(path, PERIPHERAL)) {
        spapr_vio_bus_foreach(spapr_vio_bus(machine), add_child, list);
        return array_node(list);
    }
    dev = device_at(path, err);
    if (!dev) {
        json_array_unref(list);
        return NULL;
    }
    json_array_add_object_element(list, qom_entry("type", "string"));
    for (const Property *p = dev->qdev.klass->props; p && p->name; p++) {
        json_array_add_object_element(list,
                                      qom_entry(p->name,
                                                prop_type_name(p->type)));
    }
    return array_node(list);
}

/* A property's value as JSON: booleans and integers keep their type. */
static JsonNode *prop_value(DeviceState *dev, const Property *p)
{
    g_autofree char *text = device_get_prop(dev, p->name, NULL);
    JsonNode *node = json_node_new(JSON_NODE_VALUE);

    switch (p->type) {
    case PROP_BOOL:
        json_node_set_boolean(node, !strcmp(text, "on"));
        break;
    case PROP_INT32:
    case PROP_UINT32:
        json_node_set_int(node, g_ascii_strtoll(text, NULL, 10));
        break;
    default:
        json_node_set_string(node, text);
    }
    return node;
}

static JsonNode *qom_get(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    const char *prop = json_object_get_string_member(args, "property");
    SpaprVioDevice *dev = device_at(path, err);
    const Property *p;
    JsonNode *node;

    if (!dev) {
        return NULL;
    }
    if (!strcmp(prop, "type")) {
        node = json_node_new(JSON_NODE_VALUE);
        json_node_set_string(node, dev->qdev.klass->name);
        return node;
    }
    p = device_class_find_prop(dev->qdev.klass, prop);
    if (!p) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Property '%s' not found",
                      prop);
        return NULL;
    }
    return prop_value(&dev->qdev, p);
}

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
    return empty_return();
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
    return empty_return();
}

/* x-query-net-stats: every counter, arranged so that frames in equals
 * delivered plus the sum of dropped, for each client. */

static JsonObject *drop_counts(const uint64_t *by_result)
{
    JsonObject *dropped = json_object_new();

    for (int r = NET_RX_DELIVERED + 1; r < NET_RX__MAX; r++) {
        json_object_set_int_member(dropped, net_rx_result_name(r),
                                   by_result[r]);
    }
    return dropped;
}

static JsonObject *rx_stats(const NetClientStats *st)
{
    JsonObject *rx = json_object_new();

    json_object_set_int_member(rx, "frames", st->rx_frames);
    json_object_set_int_member(rx, "bytes", st->rx_bytes);
    json_object_set_int_member(rx, "batches", st->rx_batches);
    json_object_set_int_member(rx, "delivered",
                               st->rx_results[NET_RX_DELIVERED]);
    json_object_set_object_member(rx, "dropped", drop_counts(st->rx_results));
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

static JsonArray *pool_stats(const SpaprVlanStats *vs)
{
    JsonArray *pools = json_array_new();

    for (unsigned i = 0; i < vs->npools; i++) {
        JsonObject *p = json_object_new();

        json_object_set_int_member(p, "bufsize", vs->pools[i].bufsize);
        json_object_set_int_member(p, "posted", vs->pools[i].posted);
        json_object_set_int_member(p, "hits", vs->pools[i].hits);
        json_array_add_object_element(pools, p);
    }
    return pools;
}

static JsonObject *vlan_stats(SpaprVlanState *s)
{
    JsonObject *o = json_object_new();
    SpaprVlanStats vs;

    spapr_vlan_get_stats(s, &vs);
    json_object_set_boolean_member(o, "rx-buffer-pools",
                                   spapr_vlan_rx_buffer_pools(s));
    json_object_set_int_member(o, "rx-frames", vs.rx_frames);
    json_object_set_int_member(o, "rx-bytes", vs.rx_bytes);
    json_object_set_int_member(o, "rx-buffer-bytes", vs.rx_buffer_bytes);
    json_object_set_int_member(o, "rx-interrupts", vs.rx_interrupts);
    json_object_set_int_member(o, "rx-held", vs.rx_held);
    json_object_set_int_member(o, "rx-bufs-posted", vs.rx_bufs);
    json_object_set_object_member(o, "rx-dropped", drop_counts(vs.rx_dropped));
    json_object_set_int_member(o, "tx-frames", vs.tx_frames);
    json_object_set_int_member(o, "tx-bytes", vs.tx_bytes);
    json_object_set_int_member(o, "tx-errors", vs.tx_errors);
    json_object_set_array_member(o, "pools", pool_stats(&vs));
    return o;
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

static void add_nic_stats(SpaprVioDevice *dev, void *opaque)
{
    SpaprVlanState *s = spapr_vlan_from_vio(dev);
    NetClientState *nic;
    JsonObject *o;
    NetClientStats st;

    if (!s) {
        return;
    }
    nic = spapr_vlan_nic(s);
    o = json_object_new();
    net_client_get_stats(nic, &st);
    json_object_set_string_member(o, "name", dev->qdev.id);
    json_object_set_string_member(o, "model", TYPE_SPAPR_VLAN);
    set_peer_name(o, "netdev", nic);
    json_object_set_boolean_member(o, "link-up", net_client_link_up(nic));
    json_object_set_object_member(o, "rx", rx_stats(&st));
    json_object_set_object_member(o, "tx", tx_stats(&st));
    json_object_set_object_member(o, "device", vlan_stats(s));
    json_array_add_object_element(opaque, o);
}

static void add_netdev_stats(NetClientState *nc, bool is_nic, void *opaque)
{
    JsonObject *o;
    NetClientStats st;
    GVariant *backend;

    if (is_nic) {
        return;
    }
    o = json_object_new();
    net_client_get_stats(nc, &st);
    json_object_set_string_member(o, "name", net_client_name(nc));
    json_object_set_string_member(o, "type",
                                  net_netdev_type(net_client_name(nc)));
    set_peer_name(o, "nic", nc);
    json_object_set_object_member(o, "rx", rx_stats(&st));
    json_object_set_int_member(o, "rx-errors", st.rx_errors);
    json_object_set_object_member(o, "tx", tx_stats(&st));
    backend = net_backend_query(nc);
    if (backend) {
        json_object_set_member(o, "backend",
                               json_gvariant_serialize(backend));
        g_variant_unref(backend);
    }
    json_array_add_object_element(opaque, o);
}

static JsonNode *query_net_stats(JsonObject *args, QmpError *err)
{
    JsonObject *o = json_object_new();
    JsonArray *nics = json_array_new(), *netdevs = json_array_new();

    (void)args, (void)err;
    spapr_vio_bus_foreach(spapr_vio_bus(machine), add_nic_stats, nics);
    net_foreach_client(add_netdev_stats, netdevs);
    json_object_set_array_member(o, "nics", nics);
    json_object_set_array_member(o, "netdevs", netdevs);
    return object_node(o);
}

/* x-query-guest-stats: what each built-in guest saw and did. */

static JsonObject *guest_pool_frames(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        g_autofree char *key = g_strdup_printf("%" G_GUINT64_FORMAT,
                                               st->pool_size[i]);

        if (st->pool_size[i]) {
            json_object_set_int_member(o, key, st->frames_in_pool[i]);
        }
    }
    return o;
}

static JsonObject *guest_memory(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_int_member(o, "charged-bytes", st->charged_bytes);
    json_object_set_int_member(o, "peak-bytes", st->charged_peak_bytes);
    return o;
}

static JsonObject *guest_reasm(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_int_member(o, "fragments", st->fragments);
    json_object_set_int_member(o, "fragments-refused", st->fragments_refused);
    json_object_set_int_member(o, "datagrams-ok", st->datagrams_ok);
    json_object_set_int_member(o, "datagrams-failed", st->datagrams_failed);
    json_object_set_int_member(o, "timeouts",
                               st->drops[GUEST_DROP_REASM_TIMEOUT]);
    return o;
}

static JsonObject *guest_drops(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    for (GuestDrop d = 0; d < GUEST_DROP__MAX; d++) {
        json_object_set_int_member(o, guest_drop_name(d), st->drops[d]);
    }
    return o;
}

static void add_guest_stats(IbmvethGuest *g, void *opaque)
{
    const IbmvethGuestConf *c = ibmveth_guest_conf(g);
    JsonObject *o = json_object_new();
    IbmvethGuestStats st;

    ibmveth_guest_get_stats(g, &st);
    json_object_set_string_member(o, "id", ibmveth_guest_id(g));
    json_object_set_string_member(o, "dev", ibmveth_guest_dev(g));
    json_object_set_string_member(o, "fwd", guest_fwd_name(c->fwd));
    json_object_set_string_member(o, "poll", c->spin ? "spin" : "irq");
    json_object_set_int_member(o, "rx-frames", st.rx_frames);
    json_object_set_int_member(o, "rx-bytes", st.rx_bytes);
    json_object_set_int_member(o, "tx-frames", st.tx_frames);
    json_object_set_int_member(o, "tx-bytes", st.tx_bytes);
    json_object_set_int_member(o, "tap-rx-frames", st.tap_rx_frames);
    json_object_set_int_member(o, "rx-invalid",
                               st.drops[GUEST_DROP_RX_INVALID]);
    json_object_set_int_member(o, "tx-failed", st.drops[GUEST_DROP_TX_FAILED]);
    json_object_set_int_member(o, "replenish-add-failures", st.add_failures);
    json_object_set_int_member(o, "rx-no-buffer", st.rx_no_buffer);
    json_object_set_int_member(o, "wakeups", st.wakeups);
    json_object_set_int_member(o, "woken-late", st.woken_late);
    json_object_set_int_member(o, "resets", st.resets);
    json_object_set_int_member(o, "napi-polls", st.napi_polls);
    json_object_set_object_member(o, "frames-by-buffer-size",
                                  guest_pool_frames(&st));
    json_object_set_int_member(o, "buffer-bytes", st.buffer_bytes);
    json_object_set_object_member(o, "memory", guest_memory(&st));
    json_object_set_object_member(o, "reasm", guest_reasm(&st));
    json_object_set_object_member(o, "drops", guest_drops(&st));
    json_object_set_int_member(o, "cpu-ns", st.cpu_ns);
    json_array_add_object_element(opaque, o);
}

static JsonNode *query_guest_stats(JsonObject *args, QmpError *err)
{
    JsonObject *ret = json_object_new();
    JsonArray *list = json_array_new();

    (void)args, (void)err;
    guest_foreach(add_guest_stats, list);
    json_object_set_array_member(ret, "guests", list);
    return object_node(ret);
}

/* Migration. */

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
    return empty_return();
}

static JsonNode *qmp_migrate_incoming(JsonObject *args, QmpError *err)
{
    GError *gerr = NULL;

    if (!migration_incoming_deferred(json_object_get_string_member(args,
                                                                   "uri"),
                                     &gerr)) {
        return gerror_to_qmp(gerr, err);
    }
    return empty_return();
}

static JsonNode *query_migrate(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return object_node(migration_query());
}

static const QmpArg pmemsave_args[] = {
    { "val", QMP_ARG_INT, false }, { "size", QMP_ARG_INT, false },
    { "filename", QMP_ARG_STR, false }, { NULL, 0, false }
};
static const QmpArg migrate_args[] = {
    { "uri", QMP_ARG_STR, false }, { "detach", QMP_ARG_BOOL, true },
    { NULL, 0, false }
};
static const QmpArg migrate_incoming_args[] = {
    { "uri", QMP_ARG_STR, false }, { NULL, 0, false }
};
static const QmpArg rx_filter_args[] = {
    { "name", QMP_ARG_STR, true }, { NULL, 0, false }
};
static const QmpArg qom_list_args[] = {
    { "path", QMP_ARG_STR, false }, { NULL, 0, false }
};
static const QmpArg qom_get_args[] = {
    { "path", QMP_ARG_STR, false }, { "property", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg netdev_add_args[] = {
    { "type", QMP_ARG_STR, false }, { "id", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg netdev_del_args[] = {
    { "id", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand commands[] = {
    { "query-status", NULL, false, query_status },
    { "stop", NULL, false, qmp_stop },
    { "cont", NULL, false, qmp_cont },
    { "system_reset", NULL, false, system_reset },
    { "quit", NULL, false, qmp_quit },
    { "query-rx-filter", rx_filter_args, false, query_rx_filter },
    { "qom-list", qom_list_args, false, qom_list },
    { "qom-get", qom_get_args, false, qom_get },
    { "netdev_add", netdev_add_args, true, netdev_add },
    { "netdev_del", netdev_del_args, false, netdev_del },
    { "x-query-net-stats", NULL, false, query_net_stats },
    { "x-query-guest-stats", NULL, false, query_guest_stats },
    { "pmemsave", pmemsave_args, false, pmemsave },
    { "migrate", migrate_args, false, qmp_migrate },
    { "migrate-incoming", migrate_incoming_args, false, qmp_migrate_incoming },
    { "query-migrate", NULL, false, query_migrate },
};

static void commands_register(void)
{
    qmp_register_commands(commands, G_N_ELEMENTS(commands));
}
illan_init(commands_register)

void qmp_set_machine(SpaprMachineState *spapr)
{
    if (spapr && !machine) {
        runstate_add_notifier(runstate_changed, NULL);
        migration_add_notifier(migration_changed, NULL);
    } else if (!spapr && machine) {
        runstate_remove_notifier(runstate_changed, NULL);
        migration_remove_notifier(migration_changed, NULL);
    }
    machine = spapr;
    net_set_rx_filter_notifier(spapr ? rx_filter_changed : NULL);
    net_set_link_event_notifier(spapr ? netdev_link_changed : NULL);
}
