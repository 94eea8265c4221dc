/*
 * The admin operations on the built-in guest's interface, counted hcall
 * by hcall against Linux 6.1's ibmveth with IPv4 and IPv6 (see
 * docs/devel/linux-hcalls.md): "ip link set eth0 down" and "up"
 * (x-guest-set-link), "ip maddr add" and "del" (x-guest-add-multicast,
 * x-guest-del-multicast), against a device with 16 multicast filters
 * (offloads=on) and one with none (offloads=off, QEMU's).
 */
#include <string.h>

#include "hw/ppc/hcall.h"
#include "libqos/eth-frames.h"
#include "libqos/rig.h"
#include "libqtest.h"

#define UNIT            0x71000000u     /* the LAN's unit address */
/* Buffers posted after an open: Linux's active pools, 256 + 512 + 256. */
#define POSTED_AT_OPEN  1024

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t mdns[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
static const uint8_t other_group[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfc };

static const char *const hcall_names[] = {
    "H_PUT_TCE", "H_PUT_TCE_INDIRECT", "H_STUFF_TCE", "H_VIO_SIGNAL",
    "H_REGISTER_LOGICAL_LAN", "H_FREE_LOGICAL_LAN",
    "H_ADD_LOGICAL_LAN_BUFFER", "H_ADD_LOGICAL_LAN_BUFFERS",
    "H_SEND_LOGICAL_LAN", "H_MULTICAST_CTRL", "H_CHANGE_LOGICAL_LAN_MAC",
    "H_ILLAN_ATTRIBUTES", "other",
};
#define NHCALLS G_N_ELEMENTS(hcall_names)

/* The guest's hcalls by name, in hcall_names' order. */
typedef struct Hcalls {
    gint64 n[NHCALLS];
} Hcalls;

/* Expected: these names this many times, every other one 0. */
typedef struct HcallWant {
    const char *name;
    gint64 n;
} HcallWant;

/* illan with a LAN (spapr-vlan @nic_opts) and the guest g0, booted. */
static void rig_start(QRig *r, const char *nic_opts)
{
    g_autofree char *nic = g_strdup_printf(",id=net0,%s", nic_opts);

    qrig_init(r);
    qrig_bind_peer(r);
    qrig_start(r, &(QRigOpts){
        .nic = nic, .extra = "-guest ibmveth,id=g0,dev=net0,fwd=rxonly" });
    qrig_wait_stat_min(r->qts, "guest.hcalls.H_VIO_SIGNAL", 3);
}

static gint64 hcall_delta(const Hcalls *now, const Hcalls *before,
                          const char *name)
{
    for (unsigned i = 0; i < NHCALLS; i++) {
        if (!strcmp(hcall_names[i], name)) {
            return now->n[i] - before->n[i];
        }
    }
    g_assert_not_reached();
}

/* Every counter from one x-query-guest-stats, so that they agree. */
static Hcalls hcalls(QRig *r)
{
    g_autoptr(JsonObject) st = qrig_guest_stats(r->qts);
    JsonObject *g = qrig_stats_guest(st);
    Hcalls h;

    for (unsigned i = 0; i < NHCALLS; i++) {
        g_autofree char *path = g_strdup_printf("hcalls.%s",
                                                hcall_names[i]);

        h.n[i] = qjson_int(g, path);
    }
    return h;
}

/* Since @before, exactly the hcalls @want lists (ended by a NULL name). */
static void assert_hcalls_since(QRig *r, const Hcalls *before,
                                const HcallWant *want)
{
    Hcalls now = hcalls(r);

    for (unsigned i = 0; i < NHCALLS; i++) {
        gint64 expect = 0;

        for (const HcallWant *w = want; w->name; w++) {
            if (!strcmp(w->name, hcall_names[i])) {
                expect = w->n;
            }
        }
        g_test_message("%s: %" G_GINT64_FORMAT, hcall_names[i],
                       now.n[i] - before->n[i]);
        g_assert_cmpint(now.n[i] - before->n[i], ==, expect);
    }
}

static void assert_no_hcall_since(QRig *r, const Hcalls *before)
{
    assert_hcalls_since(r, before, (const HcallWant[]) { { NULL, 0 } });
}

static void cmd_ok(QRig *r, const char *cmd)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->qts, "%s", cmd);

    if (!json_object_has_member(rsp, "return")) {
        g_test_message("%s: %s", cmd, json_object_get_string_member(
            json_object_get_object_member(rsp, "error"), "desc"));
    }
    g_assert_true(json_object_has_member(rsp, "return"));
}

static char *error_desc(QRig *r, const char *cmd)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->qts, "%s", cmd);

    g_assert_true(json_object_has_member(rsp, "error"));
    return g_strdup(json_object_get_string_member(
                        json_object_get_object_member(rsp, "error"), "desc"));
}

static void set_link(QRig *r, bool up)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'x-guest-set-link', 'arguments': "
        "{'id': 'g0', 'up': %s}}", up ? "true" : "false");

    cmd_ok(r, cmd);
}

static void multicast(QRig *r, const char *verb, const char *mac)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'x-guest-%s-multicast', 'arguments': "
        "{'id': 'g0', 'mac': '%s'}}", verb, mac);

    cmd_ok(r, cmd);
}

static void send_to(QRig *r, const uint8_t *dst, uint16_t tag)
{
    uint8_t f[60];

    eth_frame_udp(f, sizeof(f), dst, peer_mac, tag);
    qrig_send(r, f, sizeof(f));
}

/*
 * ndo_set_rx_mode's hcalls (ibmveth_set_multicast_list) over a list of
 * @n addresses: one (all multicast) when the device's @filters cannot
 * hold them, else a clear, one add each and an enable.
 */
static gint64 rx_mode(unsigned n, unsigned filters)
{
    return n > filters ? 1 : n + 2;
}

/*
 * "ip link set eth0 down", then "up", each twice.  Down
 * (__dev_change_flags): dev_set_rx_mode while still up, over the three
 * groups of the ifup (all-nodes, all-hosts, solicited-node), then
 * ibmveth_close: H_VIO_SIGNAL off, H_FREE_LOGICAL_LAN, and an
 * H_STUFF_TCE per area (buffer list, filter list, rx queue, send
 * buffer) and per posted buffer; the stack's groups are dropped with
 * the device down, so with no hcall.  While down, nothing: a frame the
 * device refuses is no hcall for the guest.  Up: ibmveth_open (its
 * three H_VIO_SIGNALs, H_REGISTER_LOGICAL_LAN, the adds) and the rx mode
 * of an ifup after a close: dev_open's over an empty list, then one per
 * group joined again (all-hosts, all-nodes, solicited-node).  A second
 * down or up is no hcall, as for ip link.
 */
static void check_link(const char *nic_opts, unsigned filters)
{
    HcallWant down[] = {
        { "H_MULTICAST_CTRL", rx_mode(3, filters) }, { "H_VIO_SIGNAL", 1 },
        { "H_FREE_LOGICAL_LAN", 1 }, { "H_STUFF_TCE", 4 + POSTED_AT_OPEN },
        { NULL, 0 },
    };
    Hcalls before, now;
    QRig r;

    rig_start(&r, nic_opts);
    before = hcalls(&r);
    set_link(&r, false);
    assert_hcalls_since(&r, &before, down);
    before = hcalls(&r);
    set_link(&r, false);
    send_to(&r, qrig_mac, 1);
    qrig_wait_stat(r.qts, "nic.rx.dropped.not-registered", 1);
    assert_no_hcall_since(&r, &before);

    set_link(&r, true);
    now = hcalls(&r);
    g_assert_cmpint(hcall_delta(&now, &before, "H_MULTICAST_CTRL"), ==,
                    rx_mode(0, filters) + rx_mode(1, filters) +
                    rx_mode(2, filters) + rx_mode(3, filters));
    g_assert_cmpint(hcall_delta(&now, &before, "H_VIO_SIGNAL"), ==, 3);
    g_assert_cmpint(hcall_delta(&now, &before, "H_REGISTER_LOGICAL_LAN"),
                    ==, 1);
    g_assert_cmpint(hcall_delta(&now, &before, "H_FREE_LOGICAL_LAN"), ==, 0);
    g_assert_cmpint(hcall_delta(&now, &before, "H_STUFF_TCE"), ==, 0);
    g_assert_cmpint(hcall_delta(&now, &before, "H_ILLAN_ATTRIBUTES"), ==, 0);
    g_assert_cmpint(hcall_delta(&now, &before, "H_ADD_LOGICAL_LAN_BUFFER") +
                    8 * hcall_delta(&now, &before,
                                    "H_ADD_LOGICAL_LAN_BUFFERS"), ==,
                    POSTED_AT_OPEN);
    before = now;
    set_link(&r, true);
    assert_no_hcall_since(&r, &before);
    send_to(&r, qrig_mac, 2);
    qrig_wait_stat(r.qts, "guest.rx-frames", 1);
    qrig_stop(&r);
}

static void test_link_filters(void)
{
    check_link("offloads=on", 16);
}

static void test_link_no_filters(void)
{
    check_link("offloads=off", 0);
}

/*
 * "ip maddr add dev eth0 01:00:5e:00:00:fb", again, "ip maddr del"
 * twice: dev_mc_add_global and dev_mc_del_global, each one
 * ndo_set_rx_mode over the list as it stands (__dev_mc_add calls it
 * for an address already listed too); a del of an address not added
 * is ENOENT with no hcall.  With 16 filters the device then passes the
 * group joined and filters another; with none it passes every group.
 * On a down interface the list changes with no hcall, and the next
 * ifup's rx mode includes the group (dev_close keeps it on dev->mc).
 */
static void check_multicast(const char *nic_opts, unsigned filters)
{
    g_autofree char *unlisted = NULL;
    Hcalls before, now;
    QRig r;

    rig_start(&r, nic_opts);
    before = hcalls(&r);
    multicast(&r, "add", "01:00:5e:00:00:fb");
    assert_hcalls_since(&r, &before, (const HcallWant[]) {
        { "H_MULTICAST_CTRL", rx_mode(4, filters) }, { NULL, 0 } });
    send_to(&r, mdns, 1);
    qrig_wait_stat(r.qts, "guest.rx-frames", 1);
    send_to(&r, other_group, 2);
    if (filters) {
        qrig_wait_stat(r.qts, "nic.rx.dropped.filtered", 1);
    } else {
        qrig_wait_stat(r.qts, "guest.rx-frames", 2);
    }

    before = hcalls(&r);
    multicast(&r, "add", "01:00:5e:00:00:fb");
    multicast(&r, "del", "01:00:5e:00:00:fb");
    assert_hcalls_since(&r, &before, (const HcallWant[]) {
        { "H_MULTICAST_CTRL", rx_mode(4, filters) + rx_mode(3, filters) },
        { NULL, 0 } });
    before = hcalls(&r);
    unlisted = error_desc(&r, "{'execute': 'x-guest-del-multicast', "
                          "'arguments': {'id': 'g0', "
                          "'mac': '01:00:5e:00:00:fb'}}");
    g_assert_cmpstr(unlisted, ==, "guest 'g0': 01:00:5e:00:00:fb was not "
                    "added to its multicast list (ip maddr del: No such "
                    "file or directory)");
    assert_no_hcall_since(&r, &before);

    set_link(&r, false);
    before = hcalls(&r);
    multicast(&r, "add", "01:00:5e:00:00:fb");
    assert_no_hcall_since(&r, &before);
    set_link(&r, true);
    now = hcalls(&r);
    g_assert_cmpint(hcall_delta(&now, &before, "H_MULTICAST_CTRL"), ==,
                    rx_mode(1, filters) + rx_mode(2, filters) +
                    rx_mode(3, filters) + rx_mode(4, filters));
    send_to(&r, mdns, 3);
    qrig_wait_stat(r.qts, "guest.rx-frames", filters ? 2 : 3);
    qrig_stop(&r);
}

static void test_multicast_filters(void)
{
    check_multicast("offloads=on", 16);
}

static void test_multicast_no_filters(void)
{
    check_multicast("offloads=off", 0);
}

/*
 * A frame the device put in the queue that the guest has not taken when
 * it goes down is counted closed.  Another vCPU turns the interrupt off
 * behind the sleeping guest's back, so the frame waits for the guest's
 * next look (every second) and 250 ms more before it is taken.
 */
static void test_down_counts_closed(void)
{
    QRig r;

    rig_start(&r, "offloads=on");
    g_assert_cmpint(qtest_hcallv(r.qts, H_VIO_SIGNAL, UNIT, 0), ==,
                    H_SUCCESS);
    send_to(&r, qrig_mac, 1);
    qrig_wait_stat(r.qts, "nic.rx.frames", 1);
    set_link(&r, false);
    /* Unless the test stalled past the vCPU's look for a lost interrupt
     * (a second, then 250 ms), which takes the frame as woken late. */
    if (qrig_stat(r.qts, "guest.woken-late") == 0) {
        g_assert_cmpint(qrig_stat(r.qts, "guest.drops.closed"), ==, 1);
        g_assert_cmpint(qrig_stat(r.qts, "guest.rx-frames"), ==, 0);
    } else {
        g_test_message("the look took the frame before the down");
        g_assert_cmpint(qrig_stat(r.qts, "guest.drops.closed"), ==, 0);
        g_assert_cmpint(qrig_stat(r.qts, "guest.rx-frames"), ==, 1);
    }
    qrig_stop(&r);
}

/*
 * A down interface: "ip link set mtu" picks the pools with no close or
 * open (ibmveth_change_mtu without netif_running), "ip link set address"
 * still issues H_CHANGE_LOGICAL_LAN_MAC (ibmveth_set_mac_addr), and
 * "ethtool -K" only its attribute hcalls (ibmveth_set_csum_offload,
 * ibmveth_set_tso); the next up opens with all of them.  A migration is
 * refused; a machine reset is a reboot, up again.
 */
static void test_down_admin(void)
{
    static const uint8_t new_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0x02 };
    static uint8_t jumbo[9014];
    g_autofree char *migrate = NULL, *stopped = NULL, *unknown = NULL;
    Hcalls before, now;
    QRig r;

    rig_start(&r, "offloads=on");
    set_link(&r, false);
    before = hcalls(&r);
    cmd_ok(&r, "{'execute': 'x-guest-set-mtu', 'arguments': "
           "{'id': 'g0', 'mtu': 9000}}");
    assert_no_hcall_since(&r, &before);
    cmd_ok(&r, "{'execute': 'x-guest-set-mac', 'arguments': "
           "{'id': 'g0', 'mac': '52:54:00:ab:cd:02'}}");
    assert_hcalls_since(&r, &before, (const HcallWant[]) {
        { "H_CHANGE_LOGICAL_LAN_MAC", 1 }, { NULL, 0 } });
    cmd_ok(&r, "{'execute': 'x-guest-set-offloads', 'arguments': "
           "{'id': 'g0', 'rx-csum': false, 'tso': false}}");
    assert_hcalls_since(&r, &before, (const HcallWant[]) {
        { "H_CHANGE_LOGICAL_LAN_MAC", 1 }, { "H_ILLAN_ATTRIBUTES", 5 },
        { NULL, 0 } });

    migrate = error_desc(&r, "{'execute': 'migrate', 'arguments': "
                         "{'uri': 'exec:cat >/dev/null'}}");
    g_assert_cmpstr(migrate, ==, "guest 'g0' is down: bring it up "
                    "(x-guest-set-link) before migrating");

    set_link(&r, true);
    now = hcalls(&r);
    g_assert_cmpint(hcall_delta(&now, &before, "H_REGISTER_LOGICAL_LAN"),
                    ==, 1);
    send_to(&r, qrig_mac, 1);
    qrig_wait_stat(r.qts, "nic.rx.dropped.filtered", 1);
    eth_frame_udp(jumbo, sizeof(jumbo), new_mac, peer_mac, 2);
    qrig_send(&r, jumbo, sizeof(jumbo));
    qrig_wait_stat(r.qts, "guest.frames-by-buffer-size.16384", 1);

    set_link(&r, false);
    cmd_ok(&r, "{'execute': 'system_reset'}");
    qrig_wait_stat(r.qts, "guest.resets", 1);
    send_to(&r, qrig_mac, 3);
    qrig_wait_stat(r.qts, "guest.rx-frames", 2);

    cmd_ok(&r, "{'execute': 'stop'}");
    stopped = error_desc(&r, "{'execute': 'x-guest-set-link', 'arguments': "
                         "{'id': 'g0', 'up': false}}");
    g_assert_cmpstr(stopped, ==, "guest 'g0' is not running (status: "
                    "paused): x-guest-set-link acts only while the machine "
                    "runs");
    g_free(stopped);
    stopped = error_desc(&r, "{'execute': 'x-guest-add-multicast', "
                         "'arguments': {'id': 'g0', "
                         "'mac': '01:00:5e:00:00:fb'}}");
    g_assert_cmpstr(stopped, ==, "guest 'g0' is not running (status: "
                    "paused): x-guest-add-multicast acts only while the "
                    "machine runs");
    unknown = error_desc(&r, "{'execute': 'x-guest-del-multicast', "
                         "'arguments': {'id': 'g9', "
                         "'mac': '01:00:5e:00:00:fb'}}");
    g_assert_cmpstr(unknown, ==, "no built-in guest 'g9' (see "
                    "x-query-guest-stats)");
    qrig_stop(&r);
}

static char *migration_status(QRig *r)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->qts,
                                          "{'execute': 'query-migrate'}");

    return g_strdup(json_object_get_string_member(
        json_object_get_object_member(rsp, "return"), "status"));
}

/* A guest brought down while a migration runs would have no driver to
 * save at the switchover: refused until the migration is over. */
static void test_down_during_migration(void)
{
    g_autofree char *refused = NULL;
    gint64 deadline = g_get_monotonic_time() + QTEST_WAIT_S * G_USEC_PER_SEC;
    QRig r;

    rig_start(&r, "offloads=on");
    /* A command that never reads: the migration stays active. */
    cmd_ok(&r, "{'execute': 'migrate', 'arguments': "
           "{'uri': 'exec:exec sleep 60'}}");
    refused = error_desc(&r, "{'execute': 'x-guest-set-link', "
                         "'arguments': {'id': 'g0', 'up': false}}");
    g_assert_cmpstr(refused, ==, "guest 'g0': a migration is in progress: "
                    "bring the guest down after it, or cancel it "
                    "(migrate_cancel)");
    cmd_ok(&r, "{'execute': 'migrate_cancel'}");
    for (;;) {
        g_autofree char *status = migration_status(&r);

        if (!strcmp(status, "cancelled")) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(10 * 1000);
    }
    set_link(&r, false);
    qrig_stop(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-admin/link/filters", test_link_filters);
    g_test_add_func("/guest-admin/link/no-filters", test_link_no_filters);
    g_test_add_func("/guest-admin/multicast/filters", test_multicast_filters);
    g_test_add_func("/guest-admin/multicast/no-filters",
                    test_multicast_no_filters);
    g_test_add_func("/guest-admin/down-counts-closed",
                    test_down_counts_closed);
    g_test_add_func("/guest-admin/down-admin", test_down_admin);
    g_test_add_func("/guest-admin/down-during-migration",
                    test_down_during_migration);
    return g_test_run();
}
