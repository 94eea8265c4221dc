/*
 * Two-process migration: a source illan with frames flowing in from a
 * unix dgram socket and a guest (the libqos ibmveth model) consuming
 * them, migrated over each URI to a second illan; the guest carries on
 * there.  Also the streams a destination must refuse, each with its
 * message, and a destination that still accepts a good stream after.
 */
#include "libqtest.h"
#include "libqos/ibmveth.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define UNIT        0x71000000u
#define OUR_MAC     0x525400123456ULL
#define RAM_SIZE    (64ULL << 20)
#define WAIT_US     (10 * G_USEC_PER_SEC)
#define NPOOLS      3

typedef struct Rig {
    char *dir;
    int peer;
    char *peer_path;
    QTestState *src, *dst;
    char *src_dev, *dst_dev;
    QGuestAllocator alloc;
    QIbmveth *veth;
    uint16_t sent, seen;        /* tags injected and received so far */
    bool best_fit;              /* pools on: each size has its pool */
} Rig;

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
/* One frame size per pool: 512, 2048 and 16384-byte buffers. */
static const size_t frame_sizes[NPOOLS] = { 60, 1000, 4000 };

static void rig_init(Rig *r)
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

static char *rig_path(Rig *r, const char *name)
{
    return g_strdup_printf("%s/%s", r->dir, name);
}

/* An illan whose NIC's backend is the dgram socket @dev_path. */
static QTestState *start(Rig *r, const char *dev_path, const char *machine,
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

static void rig_free(Rig *r)
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
static void open_guest(Rig *r)
{
    QIbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = NPOOLS,
                          .pool_size = { 512, 2048, 16384 },
                          .pool_count = { 16, 16, 8 },
                          .pool_active = { true, true, true },
                          .bulk_add = true };
    int64_t rc;

    guest_alloc_init(&r->alloc, 0x100000, RAM_SIZE);
    r->veth = qibmveth_open(r->src, &r->alloc, &conf, &rc);
    g_assert_nonnull(r->veth);
}

/* Frame number @tag, to us, its size picking the pool. */
static void inject(Rig *r, const char *dev_path)
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
static void expect_next(Rig *r)
{
    static uint8_t data[65536];
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    QIbmvethRxEntry e;
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

static JsonObject *qmp_ok(QTestState *qts, const char *cmd)
{
    JsonObject *rsp = qtest_qmp(qts, "%s", cmd);

    if (!json_object_has_member(rsp, "return")) {
        g_error("%s failed", cmd);
    }
    return rsp;
}

static char *run_state(QTestState *qts)
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
static void wait_delivered(QTestState *qts, gint64 n)
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
static char *pool_table(QTestState *qts)
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
static JsonObject *wait_migration(QTestState *qts)
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

static void assert_completed(QTestState *qts)
{
    g_autoptr(JsonObject) info = wait_migration(qts);

    if (strcmp(json_object_get_string_member(info, "status"), "completed")) {
        g_error("migration failed: %s",
                json_object_get_string_member(info, "error-desc"));
    }
}

static void migrate(QTestState *qts, const char *uri)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri);
    g_autoptr(JsonObject) rsp = qmp_ok(qts, cmd);
    g_autofree char *state = NULL;

    assert_completed(qts);
    state = run_state(qts);
    g_assert_cmpstr(state, ==, "postmigrate");
}

/*
 * The guest runs on the source past the queue's first wrap, with
 * @pending frames delivered but not yet read; after @migrate_fn moves
 * it, the destination shows the same pools, the pending frames come out
 * next, and new frames follow them with no gap and no repeat.
 */
typedef void (*MigrateFn)(Rig *r, const char *machine, const char *pools);

static void source_run(Rig *r, const char *machine, const char *pools,
                       const char *extra, unsigned pending)
{
    r->src = start(r, r->src_dev, machine, pools, extra);
    open_guest(r);
    /* Batches of 5: page mode takes buffers first fit, so small frames
     * use big buffers too, and 8 big ones must last a batch. */
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < 5; i++) {
            inject(r, r->src_dev);
        }
        for (int i = 0; i < 5; i++) {
            expect_next(r);
        }
    }
    for (unsigned i = 0; i < pending; i++) {
        inject(r, r->src_dev);
    }
    wait_delivered(r->src, r->sent);
}

static void guest_continues(Rig *r, const char *src_pools)
{
    g_autofree char *dst_pools = pool_table(r->dst);
    g_autofree char *state = run_state(r->dst);

    g_assert_cmpstr(state, ==, "running");
    g_assert_cmpstr(dst_pools, ==, src_pools);
    g_test_message("pools before and after: %s", dst_pools);
    qibmveth_migrate(r->veth, r->dst);
    while (r->seen < r->sent) {
        expect_next(r);
    }
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 5; i++) {
            inject(r, r->dst_dev);
        }
        for (int i = 0; i < 5; i++) {
            expect_next(r);
        }
    }
    g_assert_cmpint(qibmveth_close(r->veth), ==, H_SUCCESS);
}

static void two_process(const char *machine, const char *pools,
                        MigrateFn migrate_fn, bool stream_fd)
{
    Rig r;
    g_autofree char *src_pools = NULL, *extra = NULL;

    rig_init(&r);
    if (stream_fd) {
        extra = g_strdup_printf("5>%s/stream", r.dir);
    }
    source_run(&r, machine, pools, extra, 7);
    src_pools = pool_table(r.src);
    migrate_fn(&r, machine, pools);
    /* Stopped for good: what reaches the source now is not the guest's. */
    inject(&r, r.src_dev);
    r.sent--;
    guest_continues(&r, src_pools);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

static void via_file(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *file = rig_path(r, "stream");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *incoming = g_strdup_printf("-incoming %s", uri);

    migrate(r->src, uri);
    r->dst = start(r, r->dst_dev, machine, pools, incoming);
    assert_completed(r->dst);
}

static void via_unix(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *sock = rig_path(r, "mig.sock");
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *incoming = g_strdup_printf("-incoming %s", uri);

    r->dst = start(r, r->dst_dev, machine, pools, incoming);
    migrate(r->src, uri);
    assert_completed(r->dst);
}

/* exec: out through a shell pipeline, in with -incoming defer. */
static void via_exec(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *file = rig_path(r, "stream");
    g_autofree char *out = g_strdup_printf("exec:cat > %s", file);
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate-incoming', 'arguments': "
        "{'uri': 'exec:cat %s'}}", file);

    g_autofree char *state = NULL;

    migrate(r->src, out);
    r->dst = start(r, r->dst_dev, machine, pools, "-incoming defer");
    state = run_state(r->dst);
    g_assert_cmpstr(state, ==, "inmigrate");
    json_object_unref(qmp_ok(r->dst, cmd));
    assert_completed(r->dst);
}

/* fd: descriptors the shell opened for each process: the source has
 * the stream file as descriptor 5 for writing, the destination for
 * reading. */
static void via_fd(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *file = rig_path(r, "stream");
    g_autofree char *incoming = g_strdup_printf("-incoming fd:5 5<%s", file);

    migrate(r->src, "fd:5");
    r->dst = start(r, r->dst_dev, machine, pools, incoming);
    assert_completed(r->dst);
}

static void test_file_pools_on(void)
{
    two_process("pseries-2.0", NULL, via_file, false);
}

static void test_unix_pools_on(void)
{
    two_process("pseries", NULL, via_unix, false);
}

static void test_file_pools_off(void)
{
    two_process("pseries-1.0", NULL, via_file, false);
}

static void test_unix_pools_off(void)
{
    two_process("pseries-1.0", NULL, via_unix, false);
}

static void test_exec_defer(void)
{
    two_process("pseries-2.0", NULL, via_exec, false);
}

static void test_fd(void)
{
    two_process("pseries-2.0", NULL, via_fd, true);
}

/* A stream file from a source whose guest has received a few frames;
 * with @follow, the guest model stays with @r to follow the stream. */
static void make_stream(Rig *r, const char *machine, const char *pools,
                        const char *file, bool follow)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);

    r->src = start(r, r->src_dev, machine, pools, NULL);
    open_guest(r);
    for (int i = 0; i < 3; i++) {
        inject(r, r->src_dev);
        expect_next(r);
    }
    migrate(r->src, uri);
    if (!follow) {
        qibmveth_close(r->veth);
    }
    qtest_quit(r->src);
}

/* Loads @file into a waiting destination, which must refuse it in one
 * line and keep waiting. */
static char *refused(QTestState *dst, const char *file)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate-incoming', 'arguments': "
        "{'uri': 'file:%s'}}", file);
    g_autoptr(JsonObject) info = NULL;
    g_autofree char *state = NULL;
    char *desc;

    json_object_unref(qmp_ok(dst, cmd));
    info = wait_migration(dst);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "failed");
    desc = g_strdup(json_object_get_string_member(info, "error-desc"));
    g_test_message("refused: %s", desc);
    g_assert_null(strchr(desc, '\n'));
    state = run_state(dst);
    g_assert_cmpstr(state, ==, "inmigrate");
    /* Nothing was committed: the LAN is still closed. */
    g_assert_cmpint(qtest_hcallv(dst, H_FREE_LOGICAL_LAN, UNIT), ==,
                    H_RESOURCE);
    return desc;
}

static void assert_contains(const char *text, const char *part)
{
    if (!strstr(text, part)) {
        g_error("'%s' does not say '%s'", text, part);
    }
}

static char *variant(Rig *r, const char *name, const char *data, size_t len)
{
    char *path = rig_path(r, name);

    g_assert_true(g_file_set_contents(path, data, len, NULL));
    return path;
}

static void test_refusals(void)
{
    static const char idstr[] = "l-lan@71000000/spapr_llan";
    Rig r, r10;
    g_autofree char *good = NULL, *data = NULL, *msg = NULL;
    g_autofree char *truncated = NULL, *bad_id = NULL, *bad_version = NULL;
    g_autofree char *pools_on_10 = NULL;
    QTestState *dst10;
    gsize len;
    size_t at;

    rig_init(&r);
    good = rig_path(&r, "good");
    make_stream(&r, "pseries-2.0", NULL, good, true);
    g_assert_true(g_file_get_contents(good, &data, &len, NULL));
    at = (char *)memmem(data, len, idstr, strlen(idstr)) - data;
    g_assert_cmpuint(at, <, len);
    truncated = variant(&r, "truncated", data, at + 2000);
    data[at + strlen(idstr) - 1] ^= 1;
    bad_id = variant(&r, "bad-id", data, len);
    data[at + strlen(idstr) - 1] ^= 1;
    data[at + strlen(idstr) + 7] ^= 2;          /* version 1 -> 3 */
    bad_version = variant(&r, "bad-version", data, len);

    r.dst = start(&r, r.dst_dev, "pseries-2.0", NULL, "-incoming defer");
    msg = refused(r.dst, truncated);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0");
    assert_contains(msg, "truncated");
    g_free(msg);
    msg = refused(r.dst, bad_id);
    assert_contains(msg, "unknown section 'l-lan@71000000/spapr_llao'");
    g_free(msg);
    msg = refused(r.dst, bad_version);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0");
    assert_contains(msg, "version 3 is newer than this build reads (1)");
    g_free(msg);

    /* Wrong machine type, and pools-on state into pseries-1.0's LAN. */
    rig_init(&r10);
    pools_on_10 = rig_path(&r10, "pools-on-1.0");
    make_stream(&r10, "pseries-1.0", "on", pools_on_10, false);
    dst10 = start(&r10, r10.dst_dev, "pseries-1.0", NULL, "-incoming defer");
    msg = refused(dst10, good);
    assert_contains(msg, "machine type mismatch: the stream is from "
                    "'pseries-2.0' and this machine is 'pseries-1.0'");
    g_free(msg);
    msg = refused(dst10, pools_on_10);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0: "
                    "subsection 'spapr_llan/rx_pools'");
    assert_contains(msg, "use-rx-buffer-pools=off");
    qtest_quit(dst10);

    /* The destination that refused four streams takes the good one. */
    {
        g_autofree char *cmd = g_strdup_printf(
            "{'execute': 'migrate-incoming', 'arguments': "
            "{'uri': 'file:%s'}}", good);
        json_object_unref(qmp_ok(r.dst, cmd));
    }
    assert_completed(r.dst);
    qibmveth_migrate(r.veth, r.dst);
    inject(&r, r.dst_dev);
    expect_next(&r);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.dst);
    rig_free(&r);
    rig_free(&r10);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/file/pools-on", test_file_pools_on);
    g_test_add_func("/migration/unix/pools-on", test_unix_pools_on);
    g_test_add_func("/migration/file/pools-off", test_file_pools_off);
    g_test_add_func("/migration/unix/pools-off", test_unix_pools_off);
    g_test_add_func("/migration/exec/defer", test_exec_defer);
    g_test_add_func("/migration/fd", test_fd);
    g_test_add_func("/migration/refusals", test_refusals);
    return g_test_run();
}
