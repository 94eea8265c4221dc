/*
 * Two-process migration: a source illan with frames flowing in from a
 * unix dgram socket and a guest (the libqos ibmveth model) consuming
 * them, migrated over each URI to a second illan; the guest carries on
 * there.  Also the streams a destination must refuse, each with its
 * message, and a destination that still accepts a good stream after.
 * And the state a guest changed (its MAC and filters) and the announce
 * after an incoming migration and from QMP announce-self.
 */
#include "migration-helpers.h"
#include "libqos/eth-frames.h"

#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RAM_SIZE    (64ULL << 20)

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
    r->src = rig_start(r, r->src_dev, machine, pools, extra);
    rig_open_guest(r, RAM_SIZE);
    /* Batches of 5: page mode takes buffers first fit, so small frames
     * use big buffers too, and 8 big ones must last a batch. */
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < 5; i++) {
            rig_inject(r, r->src_dev);
        }
        for (int i = 0; i < 5; i++) {
            rig_expect_next(r);
        }
    }
    for (unsigned i = 0; i < pending; i++) {
        rig_inject(r, r->src_dev);
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
        rig_expect_next(r);
    }
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 5; i++) {
            rig_inject(r, r->dst_dev);
        }
        for (int i = 0; i < 5; i++) {
            rig_expect_next(r);
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
    rig_inject(&r, r.src_dev);
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
    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
    assert_completed(r->dst);
}

static void via_unix(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *sock = rig_path(r, "mig.sock");
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *incoming = g_strdup_printf("-incoming %s", uri);

    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
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
    r->dst = rig_start(r, r->dst_dev, machine, pools, "-incoming defer");
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
    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
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

    r->src = rig_start(r, r->src_dev, machine, pools, NULL);
    rig_open_guest(r, RAM_SIZE);
    for (int i = 0; i < 3; i++) {
        rig_inject(r, r->src_dev);
        rig_expect_next(r);
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

    r.dst = rig_start(&r, r.dst_dev, "pseries-2.0", NULL,
                      "-incoming defer");
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
    dst10 = rig_start(&r10, r10.dst_dev, "pseries-1.0", NULL,
                      "-incoming defer");
    msg = refused(dst10, good);
    /* The stream names the type, never the alias it was started as. */
    assert_contains(msg, "machine type mismatch: the stream is from "
                    "'pseries-2.6' and this machine is 'pseries-2.5'");
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
    rig_inject(&r, r.dst_dev);
    rig_expect_next(&r);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.dst);
    rig_free(&r);
    rig_free(&r10);
}

/* A stream given with -incoming on the command line and refused ends the
 * run with its one line and status 1, as QEMU does. */
static void test_cmdline_refusal(void)
{
    g_autofree char *path = g_strdup_printf("%s/illan-mig-%d.trunc",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *args = g_strdup_printf("-nodefaults -display none "
                                            "-device spapr-vlan "
                                            "-incoming file:%s", path);
    g_autofree char *out = NULL, *err = NULL;

    g_assert_true(g_file_set_contents(path, "QEVM\0\0", 6, NULL));
    g_assert_cmpint(illan_run(args, &out, &err), ==, 1);
    unlink(path);
    g_test_message("%s", err);
    g_assert_true(g_str_has_prefix(err, "illan: -incoming file:"));
    assert_contains(err, "truncated");
    g_assert_cmpint(strchr(err, '\n') - err, ==, (long)strlen(err) - 1);
}

/*
 * What a guest changed travels, and the destination announces it.  The
 * guest sets a MAC of its own and a multicast filter on a source; the
 * destination, started with another mac=, must deliver unicast to the
 * guest's MAC and filter the rest, and every NIC announces the guest's
 * MAC on the wire: QEMU's 5 RARP frames, 50, 150, 250 and 350 ms apart.
 */

#define GUEST_MAC       0x525400abcdefULL
#define MCAST_IN        0x01005e000001ULL
#define DST_MAC_OPT     ",mac=52:54:00:99:00:01"
#define NIC_NAME        "l-lan@71000000"
#define MAC_SUB         "spapr_llan/guest_mac_filters"

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
static const uint8_t dst_mac[6] = { 0x52, 0x54, 0x00, 0x99, 0x00, 0x01 };
static const uint8_t mcast_in[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
static const uint8_t mcast_out[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x02 };

/* A numbered frame to @dst; only one that will be delivered takes a
 * number for good. */
static void inject_to(Rig *r, const char *dev_path, const uint8_t *dst,
                      bool delivered)
{
    uint8_t frame[60];

    eth_frame_tagged(frame, sizeof(frame), dst, qrig_mac, 0, r->sent,
                     ETH_FRAME_TAG_LAST);
    qtest_dgram_send(r->base.peer, dev_path, frame, sizeof(frame));
    r->sent += delivered;
}

static void expect_to(Rig *r, const uint8_t *dst)
{
    uint8_t data[2048];
    IbmvethRxEntry e = qibmveth_wait_rx(r->veth, data, sizeof(data));

    g_assert_cmpuint(eth_frame_assert_tagged(data, e.len, dst, qrig_mac, 0,
                                             ETH_FRAME_TAG_LAST), ==,
                     r->seen);
    r->seen++;
    qibmveth_replenish(r->veth);
}

/* The next datagram on the peer socket, which must come from @from;
 * -1 after QTEST_WAIT_S. */
static ssize_t peer_recv(Rig *r, const char *from, uint8_t *buf, size_t max,
                         gint64 *when)
{
    struct pollfd pfd = { .fd = r->base.peer, .events = POLLIN };
    struct sockaddr_un addr;
    socklen_t alen = sizeof(addr);
    ssize_t n;

    if (poll(&pfd, 1, QTEST_WAIT_S * 1000) != 1) {
        return -1;
    }
    *when = g_get_monotonic_time();
    n = recvfrom(r->base.peer, buf, max, 0, (struct sockaddr *)&addr, &alen);
    g_assert_cmpstr(addr.sun_path, ==, from);
    return n;
}

static void assert_rarp(const uint8_t *f, ssize_t len, const uint8_t *mac)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const uint8_t head[10] = { 0x80, 0x35, 0x00, 0x01, 0x08, 0x00,
                                      6, 4, 0x00, 0x03 };
    static const uint8_t zeros[18];

    g_assert_cmpint(len, ==, 60);
    g_assert_cmpmem(f, 6, bcast, 6);
    g_assert_cmpmem(f + 6, 6, mac, 6);
    g_assert_cmpmem(f + 12, 10, head, 10);
    g_assert_cmpmem(f + 22, 6, mac, 6);
    g_assert_cmpmem(f + 28, 4, zeros, 4);
    g_assert_cmpmem(f + 32, 6, mac, 6);
    g_assert_cmpmem(f + 38, 4, zeros, 4);
    g_assert_cmpmem(f + 42, 18, zeros, 18);
}

/* @n RARP frames for @mac from @from; each gap at least @min_gap_ms[i]
 * (GLib's timeouts have millisecond grain: 2 ms of slack). */
static void expect_rarps(Rig *r, const char *from, const uint8_t *mac,
                         unsigned n, const int *min_gap_ms)
{
    g_autoptr(GString) gaps = g_string_new(NULL);
    uint8_t frame[128];
    gint64 when, last = 0;

    for (unsigned i = 0; i < n; i++) {
        assert_rarp(frame, peer_recv(r, from, frame, sizeof(frame), &when),
                    mac);
        if (i) {
            g_assert_cmpint(when - last, >=, (min_gap_ms[i - 1] - 2) * 1000);
            g_string_append_printf(gaps, " %.1f", (when - last) / 1000.0);
        }
        last = when;
    }
    g_test_message("%u RARP frames, gaps (ms):%s", n, gaps->str);
}

static const int default_gaps[] = { 50, 150, 250, 350 };

static void test_guest_mac_filters(void)
{
    g_autofree char *sock = NULL, *uri = NULL, *incoming = NULL;
    g_autoptr(JsonObject) filter = NULL, bad = NULL;
    const int gaps[] = { 10, 20 };
    JsonObject *f0;
    Rig r;

    rig_init(&r);
    sock = rig_path(&r, "mig.sock");
    uri = g_strdup_printf("unix:%s", sock);
    incoming = g_strdup_printf("-incoming %s", uri);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    rig_open_guest(&r, RAM_SIZE);
    g_assert_cmpint(qtest_hcallv(r.src, H_CHANGE_LOGICAL_LAN_MAC, UNIT,
                                 GUEST_MAC), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r.src, H_MULTICAST_CTRL, UNIT, 0x50001,
                                 MCAST_IN), ==, H_SUCCESS);
    inject_to(&r, r.src_dev, guest_mac, true);
    expect_to(&r, guest_mac);

    r.dst = qrig_spawn(&r.base, &(QRigOpts){
        .machine = "pseries", .mem = "64M", .dev_path = r.dst_dev,
        .nic = DST_MAC_OPT, .extra = incoming });
    migrate(r.src, uri);
    assert_completed(r.dst);
    expect_rarps(&r, r.dst_dev, guest_mac, 5, default_gaps);
    g_assert_cmpint(qrig_stat(r.dst, "nic.tx.frames"), ==, 5);
    g_assert_cmpint(qrig_stat(r.dst, "netdev.tx.frames"), ==, 5);

    filter = qmp_ok(r.dst, "{'execute': 'query-rx-filter'}");
    f0 = json_array_get_object_element(
        json_object_get_array_member(filter, "return"), 0);
    g_assert_cmpstr(json_object_get_string_member(f0, "main-mac"), ==,
                    "52:54:00:ab:cd:ef");
    g_assert_cmpstr(json_object_get_string_member(f0, "unicast"), ==,
                    "normal");
    qibmveth_migrate(r.veth, r.dst);
    inject_to(&r, r.dst_dev, guest_mac, true);
    inject_to(&r, r.dst_dev, dst_mac, false);
    inject_to(&r, r.dst_dev, mcast_in, true);
    inject_to(&r, r.dst_dev, mcast_out, false);
    inject_to(&r, r.dst_dev, guest_mac, true);
    qrig_wait_stat(r.dst, "nic.device.rx-dropped.filtered", 2);
    expect_to(&r, guest_mac);
    expect_to(&r, mcast_in);
    expect_to(&r, guest_mac);

    /* By hand: named NICs only, QEMU's spacing with these parameters. */
    json_object_unref(qmp_ok(r.dst, "{'execute': 'announce-self', "
        "'arguments': {'initial': 10, 'max': 100, 'rounds': 3, 'step': 10, "
        "'interfaces': ['" NIC_NAME "'], 'id': 't'}}"));
    expect_rarps(&r, r.dst_dev, guest_mac, 3, gaps);
    json_object_unref(qmp_ok(r.dst, "{'execute': 'announce-self', "
        "'arguments': {'initial': 10, 'max': 100, 'rounds': 1, 'step': 10, "
        "'interfaces': ['nope']}}"));
    g_assert_cmpint(qrig_stat(r.dst, "nic.tx.frames"), ==, 8);
    bad = qtest_qmp(r.dst, "{'execute': 'announce-self', 'arguments': "
                    "{'initial': 10, 'max': 100, 'rounds': 1, 'step': -1}}");
    g_assert_cmpstr(json_object_get_string_member(
        json_object_get_object_member(bad, "error"), "desc"), ==,
        "Parameter 'step' expects a value between 0 and 10000");
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

/* The VM description's subsections of the spapr_llan section. */
static char *llan_subsections(const char *data, gsize len)
{
    static const char start[] = "{\"configuration\"";
    const char *json = memmem(data, len, start, strlen(start));
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GString) names = g_string_new(NULL);
    JsonArray *devices;

    g_assert_nonnull(json);
    g_assert_true(json_parser_load_from_data(parser, json,
                                             data + len - json, NULL));
    devices = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(parser)), "devices");
    for (guint i = 0; i < json_array_get_length(devices); i++) {
        JsonObject *d = json_array_get_object_element(devices, i);
        JsonArray *subs;

        if (!g_str_has_suffix(json_object_get_string_member(d, "name"),
                              "/spapr_llan")) {
            continue;
        }
        subs = json_object_get_array_member(d, "subsections");
        for (guint j = 0; subs && j < json_array_get_length(subs); j++) {
            g_string_append_printf(names, "%s ", json_object_get_string_member(
                json_array_get_object_element(subs, j), "vmsd_name"));
        }
    }
    return g_strdup(g_strstrip(names->str));
}

/* A guest that changed nothing gives QEMU's layout: no MAC subsection
 * in the bytes or in the description; the announce carries the MAC the
 * destination was given. */
static void test_unchanged_guest(void)
{
    g_autofree char *file = NULL, *uri = NULL, *incoming = NULL;
    g_autofree char *data = NULL, *subs = NULL;
    gsize len;
    Rig r;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    incoming = g_strdup_printf("-incoming %s", uri);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    rig_open_guest(&r, RAM_SIZE);
    migrate(r.src, uri);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_null(memmem(data, len, MAC_SUB, strlen(MAC_SUB)));
    subs = llan_subsections(data, len);
    g_assert_cmpstr(subs, ==, "spapr_llan/rx_pools");
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, incoming);
    assert_completed(r.dst);
    expect_rarps(&r, r.dst_dev, qrig_mac, 5, default_gaps);
    qibmveth_migrate(r.veth, r.dst);
    inject_to(&r, r.dst_dev, qrig_mac, true);
    expect_to(&r, qrig_mac);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
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
    g_test_add_func("/migration/cmdline-refusal", test_cmdline_refusal);
    g_test_add_func("/migration/state/guest-mac-filters",
                    test_guest_mac_filters);
    g_test_add_func("/migration/state/unchanged-guest",
                    test_unchanged_guest);
    return g_test_run();
}
