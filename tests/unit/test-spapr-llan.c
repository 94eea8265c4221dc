/*
 * spapr-vlan in-process, with a real dgram backend on a unix socket: the
 * device's counters by drop reason, their balance with the net core's,
 * one interrupt per batch, reset, and H_PARAMETER for a unit address that
 * names another kind of VIO device.
 */
#include "hw/net/spapr_llan.h"
#include "hw/ppc/spapr.h"
#include "net/net.h"
#include "qemu/option.h"
#include "qemu/runstate.h"

#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define BD_VALID    0x8000000000000000ULL
#define BD(len, addr) (BD_VALID | (uint64_t)(len) << 32 | (addr))
#define BUF_LIST    0x100000ULL
#define FILTER      0x101000ULL
#define RXQ         0x102000ULL
#define BUFS        0x200000ULL
#define OUR_MAC     0x525400123456ULL

typedef struct Fixture {
    SpaprMachineState *spapr;
    SpaprVlanState *lan;
    uint32_t unit;
    int peer;               /* the test's end of the dgram link */
    char *dev_path, *peer_path;
    unsigned irq_raises;
    uint64_t next_buf;      /* where the next posted buffer goes */
} Fixture;

static void count_irq(void *opaque, int n, int level)
{
    Fixture *f = opaque;

    (void)n;
    f->irq_raises += level;
}

static int bind_unix_dgram(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(addr.sun_path, path, sizeof(addr.sun_path));
    unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    return fd;
}

static void add_netdev(Fixture *f)
{
    g_autofree char *arg = g_strdup_printf(
        "dgram,id=n0,local.type=unix,local.path=%s,remote.type=unix,"
        "remote.path=%s", f->dev_path, f->peer_path);
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "type", NULL);
    g_autoptr(GError) err = NULL;

    g_assert_nonnull(opts);
    g_assert_true(net_netdev_add(opts, &err));
    g_assert_no_error(err);
}

/* Plugs a device with properties given as name, value, ..., NULL. */
static DeviceState *plug(Fixture *f, const char *type, ...)
{
    g_autoptr(GError) err = NULL;
    DeviceState *dev = device_new(device_class_find(type), &err);
    const char *name;
    va_list ap;

    g_assert_nonnull(dev);
    va_start(ap, type);
    while ((name = va_arg(ap, const char *))) {
        g_assert_true(device_set_prop(dev, name, va_arg(ap, const char *),
                                      &err));
    }
    va_end(ap);
    g_assert_true(spapr_machine_plug(f->spapr, dev, &err));
    g_assert_no_error(err);
    return dev;
}

static void fixture_init(Fixture *f, bool pools)
{
    MachineOptions mo = { .ram_size = 64ULL << 20 };
    g_autoptr(GError) err = NULL;
    SpaprVioDevice *vdev;
    SpaprTceTable *tcet;

    memset(f, 0, sizeof(*f));
    f->next_buf = BUFS;
    f->dev_path = g_strdup_printf("%s/llan-dev-%d.sock", g_get_tmp_dir(),
                                  getpid());
    f->peer_path = g_strdup_printf("%s/llan-peer-%d.sock", g_get_tmp_dir(),
                                   getpid());
    f->peer = bind_unix_dgram(f->peer_path);
    f->spapr = spapr_machine_new(machine_class_find("pseries"), &mo, &err);
    g_assert_no_error(err);
    add_netdev(f);
    vdev = (SpaprVioDevice *)plug(f, "spapr-vlan", "netdev", "n0",
                                  "use-rx-buffer-pools",
                                  pools ? "on" : "off", NULL);
    f->lan = spapr_vlan_from_vio(vdev);
    f->unit = vdev->reg;
    spapr_machine_reset(f->spapr);
    runstate_set(RUN_STATE_RUNNING);
    spapr_irq_intercept(f->spapr, count_irq, f);
    /* Identity-map the first 4 MiB read/write. */
    tcet = spapr_tce_find_by_liobn(spapr_tce_registry(f->spapr), f->unit);
    for (uint64_t a = 0; a < (4 << 20); a += 4096) {
        g_assert_true(spapr_tce_put(tcet, a, a | 3));
    }
}

static void fixture_free(Fixture *f)
{
    spapr_machine_free(f->spapr);
    net_cleanup();
    close(f->peer);
    unlink(f->peer_path);
    g_free(f->dev_path);
    g_free(f->peer_path);
}

static int64_t hcall(Fixture *f, uint64_t op, uint64_t a1, uint64_t a2,
                     uint64_t a3, uint64_t a4)
{
    uint64_t args[HCALL_NARGS] = { f->unit, a1, a2, a3, a4 };
    unsigned nout;

    return spapr_hypercall(f->spapr, op, args, &nout);
}

static void open_lan_queue(Fixture *f, uint32_t rxq_len)
{
    g_assert_cmpint(hcall(f, H_REGISTER_LOGICAL_LAN, BUF_LIST,
                          BD(rxq_len, RXQ), FILTER, OUR_MAC), ==, H_SUCCESS);
}

static void open_lan(Fixture *f)
{
    open_lan_queue(f, 0x1000);
}

static SpaprTceTable *tce_table(Fixture *f)
{
    return spapr_tce_find_by_liobn(spapr_tce_registry(f->spapr), f->unit);
}

static void add_buffers(Fixture *f, unsigned n, uint32_t size)
{
    for (unsigned i = 0; i < n; i++, f->next_buf += size) {
        g_assert_cmpint(hcall(f, H_ADD_LOGICAL_LAN_BUFFER,
                              BD(size, f->next_buf), 0, 0, 0), ==, H_SUCCESS);
    }
}

/* Sends Ethernet frames to the device's socket. */
static void inject(Fixture *f, unsigned n, size_t len, const uint8_t *dst)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    g_autofree uint8_t *frame = g_malloc0(len);

    g_strlcpy(addr.sun_path, f->dev_path, sizeof(addr.sun_path));
    memcpy(frame, dst, 6);
    for (unsigned i = 0; i < n; i++) {
        frame[len - 1] = i;
        g_assert_cmpint(sendto(f->peer, frame, len, 0,
                               (struct sockaddr *)&addr, sizeof(addr)), ==,
                        (ssize_t)len);
    }
}

static uint64_t nic_frames(Fixture *f)
{
    NetClientStats st;

    net_client_get_stats(spapr_vlan_nic(f->lan), &st);
    return st.rx_frames;
}

/* Runs the main loop until the NIC has seen @total frames (or 5 s). */
static void wait_frames(Fixture *f, uint64_t total)
{
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    while (nic_frames(f) < total && g_get_monotonic_time() < deadline) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    g_assert_cmpuint(nic_frames(f), ==, total);
}

static const uint8_t to_us[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t to_other[6] = { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 };

static void test_one_interrupt_per_batch(void)
{
    Fixture f;
    NetClientStats st;
    SpaprVlanStats vs;

    fixture_init(&f, true);
    open_lan(&f);
    add_buffers(&f, 32, 2048);
    g_assert_cmpint(hcall(&f, H_VIO_SIGNAL, 1, 0, 0, 0), ==, H_SUCCESS);
    /* Queued before the loop runs, so the backend reads them at once. */
    inject(&f, 10, 60, to_us);
    wait_frames(&f, 10);
    net_client_get_stats(spapr_vlan_nic(f.lan), &st);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 10);
    g_assert_cmpuint(st.rx_batches, ==, 1);
    g_assert_cmpuint(f.irq_raises, ==, 1);
    g_assert_cmpuint(vs.rx_interrupts, ==, 1);
    /* Disabled: frames still land, with no interrupt. */
    g_assert_cmpint(hcall(&f, H_VIO_SIGNAL, 0, 0, 0, 0), ==, H_SUCCESS);
    inject(&f, 3, 60, to_us);
    wait_frames(&f, 13);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 13);
    g_assert_cmpuint(f.irq_raises, ==, 1);
    fixture_free(&f);
}

static uint64_t sum_results(const NetClientStats *st)
{
    uint64_t sum = 0;

    for (int i = 0; i < NET_RX__MAX; i++) {
        sum += st->rx_results[i];
    }
    return sum;
}

static void test_drops_by_reason_balance(void)
{
    Fixture f;
    NetClientStats st;
    SpaprVlanStats vs;
    SpaprTceTable *tcet;
    uint64_t guest_counter;

    fixture_init(&f, true);
    inject(&f, 2, 60, to_us);                   /* not registered */
    wait_frames(&f, 2);
    open_lan(&f);
    add_buffers(&f, 4, 512);
    inject(&f, 3, 1500, to_us);                 /* no buffer fits */
    wait_frames(&f, 5);
    g_assert_cmpint(hcall(&f, H_MULTICAST_CTRL, 0x50000, 0, 0, 0), ==,
                    H_SUCCESS);
    inject(&f, 4, 60, to_other);                /* filtered */
    inject(&f, 2, 60, to_us);                   /* delivered */
    wait_frames(&f, 11);
    /* The guest revokes the buffers' mapping: the DMA fails cleanly. */
    tcet = tce_table(&f);
    g_assert_true(spapr_tce_put(tcet, BUFS, 0));
    inject(&f, 1, 60, to_us);
    wait_frames(&f, 12);

    spapr_vlan_get_stats(f.lan, &vs);
    net_client_get_stats(spapr_vlan_nic(f.lan), &st);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_NOT_REGISTERED], ==, 2);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_NO_BUFFER], ==, 3);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_FILTERED], ==, 4);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_DMA_ERROR], ==, 1);
    g_assert_cmpuint(vs.rx_frames, ==, 2);
    g_assert_cmpuint(vs.rx_bytes, ==, 120);
    g_assert_cmpuint(vs.rx_buffer_bytes, ==, 1024);
    for (int r = NET_RX_DROP_NOT_REGISTERED; r < NET_RX__MAX; r++) {
        g_assert_cmpuint(st.rx_results[r], ==, vs.rx_dropped[r]);
    }
    g_assert_cmpuint(st.rx_results[NET_RX_DELIVERED], ==, 2);
    g_assert_cmpuint(st.rx_frames, ==, 12);
    g_assert_cmpuint(sum_results(&st), ==, st.rx_frames);
    /* The guest sees the no-buffer drops once each. */
    g_assert_true(guest_ram_ld_be(spapr_ram(f.spapr), BUF_LIST + 4088, 8,
                                  &guest_counter));
    g_assert_cmpuint(guest_counter, ==, 3);
    fixture_free(&f);
}

static void test_pool_stats_and_reset(void)
{
    Fixture f;
    SpaprVlanStats vs;
    const uint8_t new_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
    MACAddr mac;

    fixture_init(&f, true);
    open_lan(&f);
    add_buffers(&f, 3, 512);
    add_buffers(&f, 2, 2048);
    inject(&f, 2, 60, to_us);
    wait_frames(&f, 2);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.npools, ==, 2);
    g_assert_cmpint(vs.pools[0].bufsize, ==, 512);
    g_assert_cmpuint(vs.pools[0].posted, ==, 1);
    g_assert_cmpuint(vs.pools[0].hits, ==, 2);
    g_assert_cmpint(vs.pools[1].bufsize, ==, 2048);
    g_assert_cmpuint(vs.pools[1].posted, ==, 2);
    g_assert_cmpuint(vs.rx_bufs, ==, 3);
    g_assert_cmpint(hcall(&f, H_CHANGE_LOGICAL_LAN_MAC, 0x525400abcdefULL, 0,
                          0, 0), ==, H_SUCCESS);
    mac = spapr_vlan_get_mac(f.lan);
    g_assert_cmpmem(mac.a, 6, new_mac, 6);
    spapr_machine_reset(f.spapr);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.npools, ==, 0);
    g_assert_cmpuint(vs.rx_bufs, ==, 0);
    mac = spapr_vlan_get_mac(f.lan);
    g_assert_cmpmem(mac.a, 6, to_us, 6);
    /* Closed, as the guest sees it. */
    g_assert_cmpint(hcall(&f, H_FREE_LOGICAL_LAN, 0, 0, 0, 0), ==,
                    H_RESOURCE);
    fixture_free(&f);
}

/* Another kind of VIO device, to check that LAN hcalls refuse it. */
static const Property other_vio_props[] = {
    { "reg", PROP_UINT32, offsetof(SpaprVioDevice, reg), "0xffffffff",
      "unit address" },
    PROP_END
};

static const SpaprVioDeviceClass other_vio_class = {
    .parent = {
        .name = "test-vio-other",
        .bus_type = TYPE_SPAPR_VIO_BUS,
        .instance_size = sizeof(SpaprVioDevice),
        .props = other_vio_props,
    },
    .dt_name = "vty",
    .dt_type = "serial",
    .dt_compatible = "hvterm1",
    .signal_mask = 0x1,
};

static void test_other_vio_device(void)
{
    Fixture f;
    DeviceState *other;
    uint64_t ops[] = { H_REGISTER_LOGICAL_LAN, H_FREE_LOGICAL_LAN,
                       H_ADD_LOGICAL_LAN_BUFFER, H_ADD_LOGICAL_LAN_BUFFERS,
                       H_SEND_LOGICAL_LAN, H_MULTICAST_CTRL,
                       H_CHANGE_LOGICAL_LAN_MAC, H_ILLAN_ATTRIBUTES };

    fixture_init(&f, true);
    other = plug(&f, "test-vio-other", NULL);
    f.unit = ((SpaprVioDevice *)other)->reg;
    for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
        g_assert_cmpint(hcall(&f, ops[i], BUF_LIST, BD(0x1000, RXQ), FILTER,
                              0), ==, H_PARAMETER);
    }
    /* It is a VIO device all the same. */
    g_assert_cmpint(hcall(&f, H_VIO_SIGNAL, 1, 0, 0, 0), ==, H_SUCCESS);
    fixture_free(&f);
}

/* Page mode: a descriptor the guest plants in its page without posting it
 * is used, and the posted count does not wrap below zero. */
static void test_planted_descriptor(void)
{
    Fixture f;
    SpaprVlanStats vs;

    fixture_init(&f, false);
    open_lan(&f);
    g_assert_true(guest_ram_st_be(spapr_ram(f.spapr), BUF_LIST + 16, 8,
                                  BD(2048, BUFS)));
    inject(&f, 1, 60, to_us);
    wait_frames(&f, 1);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 1);
    g_assert_cmpuint(vs.rx_bufs, ==, 0);
    add_buffers(&f, 1, 2048);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_bufs, ==, 1);
    fixture_free(&f);
}

/* A queue entry that wraps is written only if the toggle can be flipped:
 * with the buffer list read-only it is dropped, and nothing of it shows. */
static void test_wrap_needs_writable_toggle(void)
{
    Fixture f;
    SpaprVlanStats vs;
    uint64_t entry;

    fixture_init(&f, true);
    open_lan_queue(&f, 32);
    add_buffers(&f, 4, 512);
    g_assert_true(spapr_tce_put(tce_table(&f), BUF_LIST, BUF_LIST | 1));
    inject(&f, 2, 60, to_us);
    wait_frames(&f, 2);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 1);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_DMA_ERROR], ==, 1);
    g_assert_true(guest_ram_ld_be(spapr_ram(f.spapr), RXQ + 16, 8, &entry));
    g_assert_cmphex(entry, ==, 0);
    fixture_free(&f);
}

/* Registering starts with filters open, whatever was set before. */
static void test_register_resets_filters(void)
{
    Fixture f;
    SpaprVlanFilter filter;

    fixture_init(&f, true);
    g_assert_cmpint(hcall(&f, H_MULTICAST_CTRL, 0x50001, 0x01005e000001ULL,
                          0, 0), ==, H_SUCCESS);
    spapr_vlan_get_filter(f.lan, &filter);
    g_assert_true(filter.filtering);
    g_assert_cmpuint(filter.nmcast, ==, 1);
    open_lan(&f);
    spapr_vlan_get_filter(f.lan, &filter);
    g_assert_false(filter.filtering);
    g_assert_true(filter.rx_multicast);
    g_assert_cmpuint(filter.nmcast, ==, 0);
    fixture_free(&f);
}

/* While the machine is stopped no frame reaches guest memory; each is
 * counted as vm-stopped, and delivery resumes with the machine. */
static void test_stopped_machine(void)
{
    Fixture f;
    SpaprVlanStats vs;
    NetClientStats st;
    uint64_t entry;

    fixture_init(&f, true);
    open_lan(&f);
    add_buffers(&f, 4, 512);
    vm_stop();
    g_assert_cmpint(runstate_get(), ==, RUN_STATE_PAUSED);
    inject(&f, 3, 60, to_us);
    wait_frames(&f, 3);
    g_assert_true(guest_ram_ld_be(spapr_ram(f.spapr), RXQ, 8, &entry));
    g_assert_cmphex(entry, ==, 0);
    vm_start();
    inject(&f, 1, 60, to_us);
    wait_frames(&f, 4);
    spapr_vlan_get_stats(f.lan, &vs);
    net_client_get_stats(spapr_vlan_nic(f.lan), &st);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_VM_STOPPED], ==, 3);
    g_assert_cmpuint(st.rx_results[NET_RX_DROP_VM_STOPPED], ==, 3);
    g_assert_cmpuint(vs.rx_frames, ==, 1);
    g_assert_true(guest_ram_ld_be(spapr_ram(f.spapr), RXQ, 8, &entry));
    g_assert_cmphex(entry, !=, 0);
    fixture_free(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    device_class_register(&other_vio_class.parent);
    g_test_add_func("/spapr-llan/one-interrupt-per-batch",
                    test_one_interrupt_per_batch);
    g_test_add_func("/spapr-llan/drops-by-reason-balance",
                    test_drops_by_reason_balance);
    g_test_add_func("/spapr-llan/pool-stats-and-reset",
                    test_pool_stats_and_reset);
    g_test_add_func("/spapr-llan/other-vio-device", test_other_vio_device);
    g_test_add_func("/spapr-llan/planted-descriptor",
                    test_planted_descriptor);
    g_test_add_func("/spapr-llan/wrap-needs-writable-toggle",
                    test_wrap_needs_writable_toggle);
    g_test_add_func("/spapr-llan/register-resets-filters",
                    test_register_resets_filters);
    g_test_add_func("/spapr-llan/stopped-machine", test_stopped_machine);
    return g_test_run();
}
