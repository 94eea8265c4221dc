/* The shared test rig (see rig.h). */
#include "hw/ppc/hcall.h"
#include "libqos/rig.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const uint8_t qrig_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

void qrig_init(QRig *r)
{
    *r = (QRig){ .peer = -1 };
    r->dir = g_dir_make_tmp("illan-rig-XXXXXX", NULL);
    g_assert_nonnull(r->dir);
    r->dev_path = qrig_path(r, "illan");
    r->peer_path = qrig_path(r, "peer");
}

char *qrig_path(const QRig *r, const char *name)
{
    return g_build_filename(r->dir, name, NULL);
}

void qrig_bind_peer(QRig *r)
{
    int rcvbuf = 4 << 20;

    g_assert_cmpint(r->peer, <, 0);
    r->peer = qtest_bind_dgram(r->peer_path);
    setsockopt(r->peer, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
}

QTestState *qrig_spawn(const QRig *r, const QRigOpts *o)
{
    g_autoptr(GString) args = g_string_new("-nodefaults");

    if (o->machine) {
        g_string_append_printf(args, " -M %s", o->machine);
    }
    if (o->mem) {
        g_string_append_printf(args, " -m %s", o->mem);
    }
    if (o->netdev) {
        g_string_append_printf(args, " -netdev %s", o->netdev);
    } else {
        g_string_append_printf(args, " -netdev dgram,id=n0,local.type=unix,"
                               "local.path=%s,remote.type=unix,"
                               "remote.path=%s",
                               o->dev_path ? o->dev_path : r->dev_path,
                               r->peer_path);
    }
    g_string_append_printf(args, " -device spapr-vlan,netdev=n0,"
                           "mac=52:54:00:12:34:56%s %s",
                           o->nic ? o->nic : "", o->extra ? o->extra : "");
    return qtest_init_wrapped(o->wrapper, args->str);
}

QTestState *qrig_start(QRig *r, const QRigOpts *o)
{
    g_assert_null(r->qts);
    r->qts = qrig_spawn(r, o);
    return r->qts;
}

QIbmveth *qrig_guest_open(QTestState *qts, QGuestAllocator *alloc,
                          const IbmvethConf *conf, uint64_t ram_end)
{
    IbmvethConf linux_conf;
    QIbmveth *v;
    int64_t rc = 0;

    if (!conf) {
        ibmveth_conf_linux_defaults(&linux_conf, QRIG_UNIT);
        linux_conf.mac = QRIG_MAC;
        conf = &linux_conf;
    }
    guest_alloc_init(alloc, 0x100000, ram_end);
    v = qibmveth_open(qts, alloc, conf, &rc);
    if (!v) {
        g_error("the guest model did not open: H_REGISTER_LOGICAL_LAN "
                "returned %" G_GINT64_FORMAT, rc);
    }
    return v;
}

void qrig_open_guest(QRig *r, const IbmvethConf *conf)
{
    g_assert_null(r->guest);
    r->guest = qrig_guest_open(r->qts, &r->alloc, conf, QRIG_DMA_END);
}

int64_t qrig_send_flagged(QRig *r, const void *frame, size_t len,
                          uint64_t flags, uint64_t mss)
{
    uint64_t tx = qibmveth_tx_buffer(r->guest);
    uint64_t args[9] = { QRIG_UNIT,
                         flags | IBMVETH_BD_VALID | (uint64_t)len << 32 | tx,
                         0, 0, 0, 0, 0, 0, mss };

    qtest_memwrite(r->qts, tx, frame, len);
    return qtest_hcall(r->qts, H_SEND_LOGICAL_LAN, 9, args, NULL, 0);
}

void qrig_send(QRig *r, const void *frame, size_t len)
{
    qtest_dgram_send(r->peer, r->dev_path, frame, len);
}

ssize_t qrig_recv(QRig *r, void *buf, size_t max, int timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, timeout_ms % 1000 * 1000 };

    setsockopt(r->peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return recv(r->peer, buf, max, 0);
}

void qrig_stop(QRig *r)
{
    g_autoptr(GDir) d = NULL;
    const char *name;

    if (r->guest) {
        g_assert_cmpint(qibmveth_close(r->guest), ==, H_SUCCESS);
        r->guest = NULL;
    }
    if (r->qts) {
        qtest_quit(r->qts);
        r->qts = NULL;
    }
    if (r->peer >= 0) {
        close(r->peer);
        r->peer = -1;
    }
    d = g_dir_open(r->dir, 0, NULL);
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *path = qrig_path(r, name);

        unlink(path);
    }
    rmdir(r->dir);
    g_clear_pointer(&r->dir, g_free);
    g_clear_pointer(&r->dev_path, g_free);
    g_clear_pointer(&r->peer_path, g_free);
}

/* Statistics. */

static JsonObject *qmp_return(QTestState *qts, const char *cmd)
{
    g_autofree char *req = g_strdup_printf("{'execute': '%s'}", cmd);
    g_autoptr(JsonObject) rsp = qtest_qmp(qts, "%s", req);
    JsonObject *ret;

    if (!json_object_has_member(rsp, "return")) {
        g_error("%s failed", cmd);
    }
    ret = json_object_get_object_member(rsp, "return");
    g_assert_nonnull(ret);
    return json_object_ref(ret);
}

JsonObject *qrig_net_stats(QTestState *qts)
{
    return qmp_return(qts, "x-query-net-stats");
}

JsonObject *qrig_guest_stats(QTestState *qts)
{
    return qmp_return(qts, "x-query-guest-stats");
}

static JsonObject *the_only(JsonObject *o, const char *list)
{
    JsonArray *a = json_object_get_array_member(o, list);

    g_assert_nonnull(a);
    g_assert_cmpuint(json_array_get_length(a), ==, 1);
    return json_array_get_object_element(a, 0);
}

JsonObject *qrig_stats_nic(JsonObject *net_stats)
{
    return the_only(net_stats, "nics");
}

JsonObject *qrig_stats_netdev(JsonObject *net_stats, const char *name)
{
    JsonArray *a = json_object_get_array_member(net_stats, "netdevs");

    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);

        if (!g_strcmp0(json_object_get_string_member(o, "name"), name)) {
            return o;
        }
    }
    g_error("no statistics for netdev '%s'", name);
}

JsonObject *qrig_stats_guest(JsonObject *guest_stats)
{
    return the_only(guest_stats, "guests");
}

static JsonNode *member_at(JsonObject *o, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    JsonNode *node = NULL;

    for (guint i = 0; parts[i]; i++) {
        if (!o || !json_object_has_member(o, parts[i])) {
            g_error("no member '%s' (of '%s')", parts[i], path);
        }
        node = json_object_get_member(o, parts[i]);
        o = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    }
    g_assert_nonnull(node);
    return node;
}

gint64 qjson_int(JsonObject *o, const char *path)
{
    JsonNode *n = member_at(o, path);

    if (json_node_get_value_type(n) != G_TYPE_INT64) {
        g_error("'%s' is not an integer", path);
    }
    return json_node_get_int(n);
}

gint64 qjson_sum(JsonObject *o, const char *path)
{
    JsonNode *n = member_at(o, path);
    JsonObject *table;
    g_autoptr(GList) names = NULL;
    gint64 sum = 0;

    g_assert_true(JSON_NODE_HOLDS_OBJECT(n));
    table = json_node_get_object(n);
    names = json_object_get_members(table);
    for (GList *l = names; l; l = l->next) {
        sum += json_object_get_int_member(table, l->data);
    }
    return sum;
}

gint64 qrig_stat(QTestState *qts, const char *path)
{
    const char *dot = strchr(path, '.');
    g_autofree char *client = NULL;
    g_autoptr(JsonObject) st = NULL;
    JsonObject *o;

    g_assert_nonnull(dot);
    client = g_strndup(path, dot - path);
    if (!strcmp(client, "nic")) {
        st = qrig_net_stats(qts);
        o = qrig_stats_nic(st);
    } else if (!strcmp(client, "netdev")) {
        st = qrig_net_stats(qts);
        o = qrig_stats_netdev(st, "n0");
    } else if (!strcmp(client, "guest")) {
        st = qrig_guest_stats(qts);
        o = qrig_stats_guest(st);
    } else {
        g_error("'%s' names no client: nic., netdev. or guest.", path);
    }
    return qjson_int(o, dot + 1);
}

typedef struct StatWait {
    QTestState *qts;
    const char *path;
    gint64 want, got;
} StatWait;

static bool stat_reached(void *opaque)
{
    StatWait *w = opaque;

    w->got = qrig_stat(w->qts, w->path);
    return w->got >= w->want;
}

gint64 qrig_wait_stat_min(QTestState *qts, const char *path, gint64 min)
{
    StatWait w = { .qts = qts, .path = path, .want = min };

    if (!qtest_poll_until(stat_reached, &w, QTEST_WAIT_S)) {
        g_error("waited %.0f s for %s to reach %" G_GINT64_FORMAT
                "; it is %" G_GINT64_FORMAT, QTEST_WAIT_S, path, min,
                w.got);
    }
    return w.got;
}

void qrig_wait_stat(QTestState *qts, const char *path, gint64 want)
{
    g_assert_cmpint(qrig_wait_stat_min(qts, path, want), ==, want);
}
