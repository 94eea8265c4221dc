/*
 * Migration test helpers (see migration-helpers.h).
 */
#include "migration-helpers.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define WAIT_US     (10 * G_USEC_PER_SEC)

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
/* One frame size per pool: 512, 2048 and 16384-byte buffers. */
static const size_t frame_sizes[NPOOLS] = { 60, 1000, 4000 };

void rig_init(Rig *r)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };

    *r = (Rig){ 0 };
    r->dir = g_dir_make_tmp("illan-mig-XXXXXX", NULL);
    g_assert_nonnull(r->dir);
    r->peer_path = g_strdup_printf("%s/peer", r->dir);
    r->src_dev = g_strdup_printf("%s/src", r->dir);
    r->dst_dev = g_strdup_printf("%s/dst", r->dir);
    r->peer = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    g_strlcpy(addr.sun_path, r->peer_path, sizeof(addr.sun_path));
    g_assert_cmpint(bind(r->peer, (struct sockaddr *)&addr, sizeof(addr)),
                    ==, 0);
}

char *rig_path(Rig *r, const char *name)
{
    return g_strdup_printf("%s/%s", r->dir, name);
}

/* An illan whose NIC's backend is the dgram socket @dev_path. */
QTestState *rig_start(Rig *r, const char *dev_path, const char *machine,
                      const char *pools, const char *extra)
{
    r->best_fit = pools ? !strcmp(pools, "on")
                        : strcmp(machine, "pseries-1.0") != 0;
    return qtest_initf("-nodefaults -M %s -m 64M -netdev dgram,id=n0,"
                       "local.type=unix,local.path=%s,remote.type=unix,"
                       "remote.path=%s -device spapr-vlan,netdev=n0,"
                       "mac=52:54:00:12:34:56%s%s %s", machine, dev_path,
                       r->peer_path, pools ? ",use-rx-buffer-pools=" : "",
                       pools ? pools : "", extra ? extra : "");
}

void rig_free(Rig *r)
{
    g_autoptr(GDir) d = g_dir_open(r->dir, 0, NULL);
    const char *name;

    close(r->peer);
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *path = rig_path(r, name);
        unlink(path);
    }
    rmdir(r->dir);
    g_free(r->dir);
    g_free(r->peer_path);
    g_free(r->src_dev);
    g_free(r->dst_dev);
}

/* Three pools of 16, 16 and 8 buffers: a 41-entry queue. */
void rig_open_guest(Rig *r, uint64_t ram_size)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = NPOOLS,
                          .pool_size = { 512, 2048, 16384 },
                          .pool_count = { 16, 16, 8 },
                          .pool_active = { true, true, true },
                          .bulk_add = true };
    int64_t rc;

    guest_alloc_init(&r->alloc, 0x100000, ram_size);
    r->veth = qibmveth_open(r->src, &r->alloc, &conf, &rc);
    g_assert_nonnull(r->veth);
}

/* Frame number @tag, to us, its size picking the pool. */
void rig_inject(Rig *r, const char *dev_path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    uint16_t tag = r->sent++;
    size_t len = frame_sizes[tag % NPOOLS];
    g_autofree uint8_t *frame = g_malloc0(len);

    g_strlcpy(addr.sun_path, dev_path, sizeof(addr.sun_path));
    memcpy(frame, our_mac, 6);
    memcpy(frame + 6, our_mac, 6);
    for (size_t i = 14; i < len; i++) {
        frame[i] = i * 7 + tag;
    }
    frame[len - 2] = tag >> 8;
    frame[len - 1] = tag;
    g_assert_cmpint(sendto(r->peer, frame, len, 0, (struct sockaddr *)&addr,
                           sizeof(addr)), ==, (ssize_t)len);
}

/* The next frame must be the next tag, whole, in the right pool. */
void rig_expect_next(Rig *r)
{
    static uint8_t data[65536];
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    IbmvethRxEntry e;
    uint16_t tag;

    while (!qibmveth_poll(r->veth, &e, data, sizeof(data))) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
    g_assert_true(e.valid);
    tag = data[e.len - 2] << 8 | data[e.len - 1];
    g_assert_cmpuint(tag, ==, r->seen);
    g_assert_cmpuint(e.len, ==, frame_sizes[tag % NPOOLS]);
    if (r->best_fit) {
        g_assert_cmpuint(e.pool, ==, tag % NPOOLS);
    }
    for (size_t i = 14; i < e.len - 2; i++) {
        g_assert_cmpuint(data[i], ==, (uint8_t)(i * 7 + tag));
    }
    r->seen++;
    qibmveth_replenish(r->veth);
}

JsonObject *qmp_ok(QTestState *qts, const char *cmd)
{
    JsonObject *rsp = qtest_qmp(qts, "%s", cmd);

    if (!json_object_has_member(rsp, "return")) {
        g_error("%s failed", cmd);
    }
    return rsp;
}

char *run_state(QTestState *qts)
{
    g_autoptr(JsonObject) rsp = qmp_ok(qts, "{'execute': 'query-status'}");

    return g_strdup(json_object_get_string_member(
        json_object_get_object_member(rsp, "return"), "status"));
}

/* The NIC's "device" stats object (the reply is returned to unref). */
static JsonObject *nic_device(QTestState *qts, JsonObject **rsp)
{
    JsonArray *nics;

    *rsp = qmp_ok(qts, "{'execute': 'x-query-net-stats'}");
    nics = json_object_get_array_member(
        json_object_get_object_member(*rsp, "return"), "nics");
    return json_object_get_object_member(
        json_array_get_object_element(nics, 0), "device");
}

/* Waits until the device has delivered @n frames in all. */
void wait_delivered(QTestState *qts, gint64 n)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    for (;;) {
        JsonObject *rsp, *dev = nic_device(qts, &rsp);
        gint64 got = json_object_get_int_member(dev, "rx-frames");

        json_object_unref(rsp);
        if (got >= n) {
            g_assert_cmpint(got, ==, n);
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(2000);
    }
}

/* "size:posted ..." of the device's pools, and the buffers it holds. */
char *pool_table(QTestState *qts)
{
    JsonObject *rsp, *dev = nic_device(qts, &rsp);
    JsonArray *pools = json_object_get_array_member(dev, "pools");
    GString *s = g_string_new(NULL);

    g_string_printf(s, "bufs %" G_GINT64_FORMAT ":",
                    json_object_get_int_member(dev, "rx-bufs-posted"));
    for (guint i = 0; i < json_array_get_length(pools); i++) {
        JsonObject *p = json_array_get_object_element(pools, i);

        g_string_append_printf(s, " %" G_GINT64_FORMAT ":%" G_GINT64_FORMAT,
                               json_object_get_int_member(p, "bufsize"),
                               json_object_get_int_member(p, "posted"));
    }
    json_object_unref(rsp);
    return g_string_free(s, FALSE);
}

/* Polls query-migrate until it settles; returns the reply's "return". */
JsonObject *wait_migration(QTestState *qts)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    for (;;) {
        JsonObject *rsp = qmp_ok(qts, "{'execute': 'query-migrate'}");
        JsonObject *info = json_object_ref(
            json_object_get_object_member(rsp, "return"));
        const char *status = json_object_get_string_member_with_default(
            info, "status", "none");

        json_object_unref(rsp);
        if (!strcmp(status, "completed") || !strcmp(status, "failed")) {
            return info;
        }
        json_object_unref(info);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(2000);
    }
}

void assert_completed(QTestState *qts)
{
    g_autoptr(JsonObject) info = wait_migration(qts);

    if (strcmp(json_object_get_string_member(info, "status"), "completed")) {
        g_error("migration failed: %s",
                json_object_get_string_member(info, "error-desc"));
    }
}

void migrate(QTestState *qts, const char *uri)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri);
    g_autoptr(JsonObject) rsp = qmp_ok(qts, cmd);
    g_autofree char *state = NULL;

    assert_completed(qts);
    state = run_state(qts);
    g_assert_cmpstr(state, ==, "postmigrate");
}

