/*
 * spapr-vlan in-process, with a real dgram backend on a unix socket: the
 * device's counters by drop reason, their balance with the net core's,
 * one interrupt per batch, reset, H_PARAMETER for a unit address that
 * names another kind of VIO device, and the latency stamp of an rx-queue
 * entry whose control byte could not be written.  Also the device's migration state
 * through a real stream (the guest's MAC and filters, and the state the
 * loader refuses) and self-announce's frames on the wire.
 */
#include "hw/net/llan_rx_page.h"
#include "hw/net/spapr_llan.h"
#include "hw/ppc/spapr.h"
#include "migration/qemu-file.h"
#include "migration/savevm.h"
#include "net/announce.h"
#include "net/net.h"
#include "qemu/option.h"
#include "qemu/runstate.h"

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

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

static void fixture_init_mac(Fixture *f, bool pools, const char *mac)
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
                                  "mac", mac, "use-rx-buffer-pools",
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

static void fixture_init(Fixture *f, bool pools)
{
    fixture_init_mac(f, pools, "52:54:00:12:34:56");
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

/* @n frames of 60 bytes to us, straight from the backend's side, as an
 * af-xdp I/O thread hands them over; how many the device took. */
static unsigned offer_run(Fixture *f, unsigned n, bool more)
{
    uint8_t data[60] = { 0 };
    NetFrame frames[NET_BATCH_MAX];

    g_assert_cmpuint(n, <=, NET_BATCH_MAX);
    memcpy(data, to_us, 6);
    for (unsigned i = 0; i < n; i++) {
        frames[i] = (NetFrame){ .data = data, .len = sizeof(data) };
    }
    return net_backend_deliver_or_hold(net_client_peer(spapr_vlan_nic(f->lan)),
                                       frames, n, NULL, more);
}

/*
 * Batches the backend says are followed at once share one interrupt:
 * at the end of their run, or after four full batches, or when the
 * device holds frames for lack of buffers.  Nothing is owed while the
 * interrupt is off.
 */
static void test_one_interrupt_per_run(void)
{
    Fixture f;
    SpaprVlanStats vs;

    fixture_init(&f, true);
    open_lan(&f);
    add_buffers(&f, 400, 2048);
    g_assert_cmpint(hcall(&f, H_VIO_SIGNAL, 1, 0, 0, 0), ==, H_SUCCESS);
    for (unsigned i = 0; i < 3; i++) {
        g_assert_cmpuint(offer_run(&f, NET_BATCH_MAX, true), ==,
                         NET_BATCH_MAX);
    }
    g_assert_cmpuint(offer_run(&f, NET_BATCH_MAX - 1, true), ==,
                     NET_BATCH_MAX - 1);
    g_assert_cmpuint(f.irq_raises, ==, 0);
    g_assert_cmpuint(offer_run(&f, 1, true), ==, 1);
    g_assert_cmpuint(f.irq_raises, ==, 1);
    /* The run ends with a batch, or with nothing. */
    offer_run(&f, 3, true);
    offer_run(&f, 3, false);
    g_assert_cmpuint(f.irq_raises, ==, 2);
    offer_run(&f, 3, true);
    g_assert_cmpuint(f.irq_raises, ==, 2);
    offer_run(&f, 0, false);
    g_assert_cmpuint(f.irq_raises, ==, 3);
    offer_run(&f, 0, false);
    g_assert_cmpuint(f.irq_raises, ==, 3);
    /* Off: frames land and nothing is owed when it comes on again. */
    g_assert_cmpint(hcall(&f, H_VIO_SIGNAL, 0, 0, 0, 0), ==, H_SUCCESS);
    offer_run(&f, 5, true);
    g_assert_cmpint(hcall(&f, H_VIO_SIGNAL, 1, 0, 0, 0), ==, H_SUCCESS);
    offer_run(&f, 0, false);
    g_assert_cmpuint(f.irq_raises, ==, 3);
    /* 270 frames so far: a run that finds the last 130 buffers holds
     * the rest, and the guest must hear of what came in. */
    g_assert_cmpuint(offer_run(&f, NET_BATCH_MAX, true), ==, NET_BATCH_MAX);
    g_assert_cmpuint(offer_run(&f, NET_BATCH_MAX, true), ==, NET_BATCH_MAX);
    g_assert_cmpuint(f.irq_raises, ==, 3);
    g_assert_cmpuint(offer_run(&f, NET_BATCH_MAX, true), ==, 2);
    g_assert_cmpuint(f.irq_raises, ==, 4);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 400);
    g_assert_cmpuint(vs.rx_interrupts, ==, 4);
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
      "unit address", NULL },
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

static uint64_t page_slot(Fixture *f, unsigned i)
{
    uint64_t bd;

    g_assert_true(guest_ram_ld_be(spapr_ram(f->spapr), BUF_LIST + 16 + i * 8,
                                  8, &bd));
    return bd;
}

/*
 * Page mode beyond the slots a scan reads one at a time: a frame passes
 * 30 buffers too small for it to land in the 31st, and an add on a full
 * page goes round its end to the slot that frame freed.
 */
static void test_page_mode_far_slots(void)
{
    Fixture f;
    uint64_t landed = BUFS + 30 * 512, next;
    uint8_t dst[6];

    fixture_init(&f, false);
    open_lan(&f);
    add_buffers(&f, 30, 512);
    add_buffers(&f, 479, 2048);
    next = f.next_buf;
    g_assert_cmpint(hcall(&f, H_ADD_LOGICAL_LAN_BUFFER, BD(2048, next),
                          0, 0, 0), ==, H_RESOURCE);
    inject(&f, 1, 1000, to_us);
    wait_frames(&f, 1);
    g_assert_true(guest_ram_read(spapr_ram(f.spapr), landed + 8, dst, 6));
    g_assert_cmpmem(dst, 6, to_us, 6);
    g_assert_cmphex(page_slot(&f, 29), ==, BD(512, landed - 512));
    g_assert_cmphex(page_slot(&f, 30), ==, 0);
    g_assert_cmphex(page_slot(&f, 31), ==, BD(2048, landed + 2048));
    add_buffers(&f, 1, 2048);
    g_assert_cmphex(page_slot(&f, 30), ==, BD(2048, next));
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

/*
 * The guest revokes its rx queue's mapping while the device writes an
 * entry: after the entry's body, before its control byte.  An entry in
 * one I/O page is translated once, so only one that straddles two pages
 * (a queue the guest did not align) has that window: a userfaultfd
 * write-protect on the second page stops the writing thread at its first
 * store there, the way a vCPU elsewhere gets in between, and the fault
 * handler revokes the first page's TCE, the control byte's, before it
 * lets it go on.  The stamp the device left for that entry must not
 * outlive the failed write, or the guest measures the next frame landing
 * in the slot from it.
 */
typedef struct RevokeOnWrite {
    int uffd;
    SpaprTceTable *tcet;
    unsigned faults;
} RevokeOnWrite;

/* Handles the one fault the device's write takes (or gives up after
 * 5 s, and the test fails on the fault count). */
static gpointer revoke_on_write(gpointer opaque)
{
    RevokeOnWrite *r = opaque;
    struct uffd_msg msg;
    struct pollfd pfd = { .fd = r->uffd, .events = POLLIN };
    struct uffdio_writeprotect wp = { .range.len = 4096 };

    if (poll(&pfd, 1, 5000) != 1 ||
        read(r->uffd, &msg, sizeof(msg)) != sizeof(msg)) {
        return NULL;
    }
    g_assert_cmpuint(msg.event, ==, UFFD_EVENT_PAGEFAULT);
    g_assert_true(spapr_tce_put(r->tcet, RXQ, 0));
    __atomic_fetch_add(&r->faults, 1, __ATOMIC_RELAXED);
    wp.range.start = msg.arg.pagefault.address & ~4095ULL;
    g_assert_cmpint(ioctl(r->uffd, UFFDIO_WRITEPROTECT, &wp), ==, 0);
    return NULL;
}

/* Write-protects the page of guest RAM at @gpa for @r's handler. */
static bool write_protect(Fixture *f, RevokeOnWrite *r, uint64_t gpa)
{
    struct uffdio_api api = { .api = UFFD_API,
                              .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
    uint64_t page = (uintptr_t)guest_ram_ptr(spapr_ram(f->spapr), gpa, 4096);
    struct uffdio_register reg = {
        .range = { .start = page, .len = 4096 },
        .mode = UFFDIO_REGISTER_MODE_WP,
    };
    struct uffdio_writeprotect wp = {
        .range = reg.range, .mode = UFFDIO_WRITEPROTECT_MODE_WP,
    };

    r->uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
    if (r->uffd < 0 || ioctl(r->uffd, UFFDIO_API, &api) ||
        ioctl(r->uffd, UFFDIO_REGISTER, &reg)) {
        return false;
    }
    g_assert_cmpint(ioctl(r->uffd, UFFDIO_WRITEPROTECT, &wp), ==, 0);
    return true;
}

static NetRxResult deliver_stamped(Fixture *f, NetRxStamp *stamp)
{
    uint8_t frame[60] = { 0 };
    NetFrame nf = { .data = frame, .len = sizeof(frame) };
    NetClientState *backend = net_client_peer(spapr_vlan_nic(f->lan));
    SpaprVlanStats before, after;

    memcpy(frame, to_us, 6);
    spapr_vlan_get_stats(f->lan, &before);
    g_assert_cmpuint(net_backend_deliver_or_hold(backend, &nf, 1, stamp,
                                                 false), ==, 1);
    spapr_vlan_get_stats(f->lan, &after);
    if (after.rx_frames > before.rx_frames) {
        return NET_RX_DELIVERED;
    }
    g_assert_cmpuint(after.rx_dropped[NET_RX_DROP_DMA_ERROR], ==,
                     before.rx_dropped[NET_RX_DROP_DMA_ERROR] + 1);
    return NET_RX_DROP_DMA_ERROR;
}

static void test_failed_control_byte_clears_stamp(void)
{
    uint64_t stamps[1] = { 0 };
    NetRxStamp stamp = { .entered = 1000 };
    RevokeOnWrite r = { 0 };
    GThread *handler;
    Fixture f;

    fixture_init(&f, true);
    open_lan_queue(&f, 16);
    /* The guest moves its queue (the device reads its descriptor, first
     * in the buffer list, for every batch) so that the one entry has its
     * control byte in the last 8 bytes of RXQ's page and the rest of its
     * body on the next. */
    g_assert_true(guest_ram_st_be(spapr_ram(f.spapr), BUF_LIST, 8,
                                  BD(16, RXQ + 0xff8)));
    add_buffers(&f, 4, 512);
    spapr_vlan_set_rx_stamps(f.lan, stamps, G_N_ELEMENTS(stamps));
    r.tcet = tce_table(&f);
    if (!write_protect(&f, &r, RXQ + 0x1000)) {
        g_test_skip("no userfaultfd write-protect here");
        spapr_vlan_set_rx_stamps(f.lan, NULL, 0);
        fixture_free(&f);
        return;
    }
    handler = g_thread_new("revoke-on-write", revoke_on_write, &r);

    /* The entry's body is written, then its control byte is refused. */
    g_assert_cmpint(deliver_stamped(&f, &stamp), ==, NET_RX_DROP_DMA_ERROR);
    g_thread_join(handler);
    close(r.uffd);
    g_assert_cmpuint(__atomic_load_n(&r.faults, __ATOMIC_RELAXED), ==, 1);
    g_assert_cmpuint(stamp.visible, ==, 0);
    g_assert_cmphex(stamps[0], ==, 0);

    /* An unstamped frame in the same slot carries no stamp either. */
    g_assert_true(spapr_tce_put(r.tcet, RXQ, RXQ | 3));
    g_assert_cmpint(deliver_stamped(&f, NULL), ==, NET_RX_DELIVERED);
    g_assert_cmphex(stamps[0], ==, 0);
    stamp = (NetRxStamp){ .entered = 2000 };
    g_assert_cmpint(deliver_stamped(&f, &stamp), ==, NET_RX_DELIVERED);
    g_assert_cmphex(stamps[0], ==, 2000);
    g_assert_cmpuint(stamp.visible, >, 0);

    spapr_vlan_set_rx_stamps(f.lan, NULL, 0);
    fixture_free(&f);
}

/* An entry in one I/O page is one translation: revoked before it, the
 * entry is refused whole (the stamp, taken first, cleared again). */
static void test_refused_entry_clears_stamp(void)
{
    uint64_t stamps[1] = { 0 }, entry;
    NetRxStamp stamp = { .entered = 1000 };
    Fixture f;

    fixture_init(&f, true);
    open_lan_queue(&f, 16);
    add_buffers(&f, 4, 512);
    spapr_vlan_set_rx_stamps(f.lan, stamps, G_N_ELEMENTS(stamps));
    g_assert_true(spapr_tce_put(tce_table(&f), RXQ, 0));

    g_assert_cmpint(deliver_stamped(&f, &stamp), ==, NET_RX_DROP_DMA_ERROR);
    g_assert_cmpuint(stamp.visible, ==, 0);
    g_assert_cmphex(stamps[0], ==, 0);
    g_assert_true(guest_ram_ld_be(spapr_ram(f.spapr), RXQ, 8, &entry));
    g_assert_cmphex(entry, ==, 0);

    spapr_vlan_set_rx_stamps(f.lan, NULL, 0);
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

/* Migration state: the stream as bytes, saved and loaded in-process. */

#define MAC_SUB     "spapr_llan/guest_mac_filters"
/* H_MULTICAST_CTRL: filtering on, and with it add @mac to the table. */
#define MCAST_FILTER_ON_ADD 0x50001ULL

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
static const uint8_t mcast_in[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
static const uint8_t mcast_out[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x02 };
static const uint8_t dst_perm[6] = { 0x52, 0x54, 0x00, 0x99, 0x00, 0x01 };

static GBytes *save_stream(Fixture *f)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = NULL, *data = NULL;
    int fd = g_file_open_tmp("llan-stream-XXXXXX", &path, &err);
    QEMUFile *qf;
    RamStats stats;
    gsize len;

    g_assert_no_error(err);
    qf = qemu_file_new_output(fd);
    g_assert_true(qemu_savevm_state(qf, spapr_machine_type(f->spapr),
                                    spapr_ram(f->spapr), &stats, &err));
    g_assert_true(qemu_file_close(qf, &err));
    close(fd);
    g_assert_true(g_file_get_contents(path, &data, &len, &err));
    unlink(path);
    return g_bytes_new_take(g_steal_pointer(&data), len);
}

/* Loads @data; false with *errp as the destination would report it. */
static bool load_stream(Fixture *f, const void *data, size_t len,
                        GError **errp)
{
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("llan-stream-XXXXXX", &path, NULL);
    QEMUFile *qf;
    bool ok;

    g_assert_cmpint(fd, >=, 0);
    unlink(path);
    g_assert_cmpint(write(fd, data, len), ==, (ssize_t)len);
    g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
    qf = qemu_file_new_input(fd);
    ok = qemu_loadvm_state(qf, spapr_machine_type(f->spapr),
                           spapr_ram(f->spapr), errp);
    qemu_file_close(qf, NULL);
    close(fd);
    return ok;
}

static bool has_mac_subsection(GBytes *stream)
{
    gsize len;
    const char *data = g_bytes_get_data(stream, &len);

    return memmem(data, len, MAC_SUB, strlen(MAC_SUB)) != NULL;
}

/* The guest of these tests: registered, 4 x 512 bytes posted, its MAC
 * changed and one multicast address in a filter that is on. */
static void guest_changes_mac_and_filters(Fixture *f)
{
    open_lan(f);
    add_buffers(f, 4, 512);
    g_assert_cmpint(hcall(f, H_CHANGE_LOGICAL_LAN_MAC, 0x525400abcdefULL,
                          0, 0, 0), ==, H_SUCCESS);
    g_assert_cmpint(hcall(f, H_MULTICAST_CTRL, MCAST_FILTER_ON_ADD,
                          0x01005e000001ULL, 0, 0), ==, H_SUCCESS);
}

/* A guest that changed neither writes QEMU's layout: no subsection, and
 * one that changed them back writes the same bytes again. */
static void test_unchanged_guest_no_subsection(void)
{
    Fixture f;
    g_autoptr(GBytes) closed = NULL, plain = NULL, again = NULL;
    g_autoptr(GBytes) changed = NULL;

    fixture_init(&f, true);
    closed = save_stream(&f);
    open_lan(&f);
    add_buffers(&f, 4, 512);
    plain = save_stream(&f);
    g_assert_false(has_mac_subsection(closed));
    g_assert_false(has_mac_subsection(plain));
    g_assert_cmpint(hcall(&f, H_CHANGE_LOGICAL_LAN_MAC, 0x525400abcdefULL,
                          0, 0, 0), ==, H_SUCCESS);
    changed = save_stream(&f);
    g_assert_true(has_mac_subsection(changed));
    g_assert_cmpuint(g_bytes_get_size(changed), >, g_bytes_get_size(plain));
    /* Back to the device's own MAC; filtering on, then off and cleared. */
    g_assert_cmpint(hcall(&f, H_CHANGE_LOGICAL_LAN_MAC, OUR_MAC, 0, 0, 0),
                    ==, H_SUCCESS);
    g_assert_cmpint(hcall(&f, H_MULTICAST_CTRL, MCAST_FILTER_ON_ADD,
                          0x01005e000001ULL, 0, 0), ==, H_SUCCESS);
    g_assert_cmpint(hcall(&f, H_MULTICAST_CTRL, 0x40003, 0, 0, 0), ==,
                    H_SUCCESS);
    again = save_stream(&f);
    g_assert_true(g_bytes_equal(again, plain));
    fixture_free(&f);
}

static void assert_filters(Fixture *f, const uint8_t *mac)
{
    MACAddr now = spapr_vlan_get_mac(f->lan);
    SpaprVlanFilter filter;

    spapr_vlan_get_filter(f->lan, &filter);
    g_assert_cmpmem(now.a, 6, mac, 6);
    g_assert_true(filter.filtering);
    g_assert_true(filter.rx_multicast);
    g_assert_cmpuint(filter.nmcast, ==, 1);
    g_assert_cmpmem(filter.mcast[0].a, 6, mcast_in, 6);
}

/* The destination has another mac=; the guest's MAC and filters come
 * with the stream and are in force there. */
static void test_mac_filters_migrate(void)
{
    Fixture f;
    g_autoptr(GBytes) stream = NULL;
    g_autoptr(GError) err = NULL;
    SpaprVlanStats vs;
    gsize len;
    const void *data;

    fixture_init(&f, true);
    guest_changes_mac_and_filters(&f);
    stream = save_stream(&f);
    g_assert_true(has_mac_subsection(stream));
    fixture_free(&f);

    fixture_init_mac(&f, true, "52:54:00:99:00:01");
    data = g_bytes_get_data(stream, &len);
    load_stream(&f, data, len, &err);
    g_assert_no_error(err);
    assert_filters(&f, guest_mac);
    inject(&f, 1, 60, guest_mac);               /* delivered */
    inject(&f, 1, 60, dst_perm);                /* filtered: not its MAC */
    inject(&f, 1, 60, mcast_in);                /* delivered */
    inject(&f, 1, 60, mcast_out);               /* filtered */
    wait_frames(&f, 4);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 2);
    g_assert_cmpuint(vs.rx_dropped[NET_RX_DROP_FILTERED], ==, 2);
    fixture_free(&f);
}

/* Both calls work before the guest registers; the MAC it set migrates
 * with a device not open, and stays through a register that passes no
 * MAC (r8 = 0). */
static void test_mac_before_register(void)
{
    Fixture f;
    g_autoptr(GBytes) stream = NULL;
    g_autoptr(GError) err = NULL;
    SpaprVlanFilter filter;
    MACAddr mac;
    gsize len;
    const void *data;

    fixture_init(&f, true);
    g_assert_cmpint(hcall(&f, H_CHANGE_LOGICAL_LAN_MAC, 0x525400abcdefULL,
                          0, 0, 0), ==, H_SUCCESS);
    g_assert_cmpint(hcall(&f, H_MULTICAST_CTRL, MCAST_FILTER_ON_ADD,
                          0x01005e000001ULL, 0, 0), ==, H_SUCCESS);
    stream = save_stream(&f);
    g_assert_true(has_mac_subsection(stream));
    fixture_free(&f);

    fixture_init_mac(&f, true, "52:54:00:99:00:01");
    data = g_bytes_get_data(stream, &len);
    load_stream(&f, data, len, &err);
    g_assert_no_error(err);
    assert_filters(&f, guest_mac);
    g_assert_cmpint(hcall(&f, H_REGISTER_LOGICAL_LAN, BUF_LIST,
                          BD(0x1000, RXQ), FILTER, 0), ==, H_SUCCESS);
    mac = spapr_vlan_get_mac(f.lan);
    g_assert_cmpmem(mac.a, 6, guest_mac, 6);
    spapr_vlan_get_filter(f.lan, &filter);
    g_assert_false(filter.filtering);
    fixture_free(&f);
}

/* Offsets in the spapr_llan section, from the end of its idstr:
 * instance and version (8), spapr_vio (32), then QEMU's fields. */
#define AT_ISOPEN   40
#define AT_RX_BUFS  57
#define AT_SUBSECTIONS 69
/* In the rx_pools subsection, after its name and version: 5 pools of
 * {bufsize, count, 4096 descriptors}. */
#define POOL_SIZE   (4 + 4 + 4096 * 8)

typedef struct Stream {
    guint8 *data;
    gsize len;
    gsize fields;           /* the end of the spapr_llan idstr */
    gsize mac_sub;          /* the end of the MAC subsection's name */
} Stream;

static gsize find_end(const Stream *s, const char *what)
{
    const guint8 *at = memmem(s->data, s->len, what, strlen(what));

    g_assert_nonnull(at);
    return at - s->data + strlen(what);
}

static void stream_copy(Stream *s, GBytes *from, uint32_t unit)
{
    g_autofree char *idstr = g_strdup_printf("l-lan@%x/spapr_llan", unit);

    s->data = g_bytes_unref_to_data(g_bytes_ref(from), &s->len);
    s->fields = find_end(s, idstr);
    s->mac_sub = find_end(s, MAC_SUB);
}

static void put_be32_at(Stream *s, gsize at, uint32_t v)
{
    s->data[at] = v >> 24;
    s->data[at + 1] = v >> 16;
    s->data[at + 2] = v >> 8;
    s->data[at + 3] = v;
}

/* Loads @s into @f, which must refuse it naming the section and saying
 * @why; nothing changes. */
static void assert_refused(Fixture *f, Stream *s, const char *why)
{
    g_autoptr(GError) err = NULL;
    MACAddr mac;

    g_assert_false(load_stream(f, s->data, s->len, &err));
    g_assert_nonnull(err);
    g_test_message("refused: %s", err->message);
    g_assert_nonnull(strstr(err->message, "section 'l-lan@"));
    if (!strstr(err->message, why)) {
        g_error("'%s' does not say '%s'", err->message, why);
    }
    mac = spapr_vlan_get_mac(f->lan);
    g_assert_cmpmem(mac.a, 6, dst_perm, 6);
    g_assert_cmpint(hcall(f, H_FREE_LOGICAL_LAN, 0, 0, 0, 0), ==,
                    H_RESOURCE);
    g_free(s->data);
}

static void test_refuses_contradictions(void)
{
    Fixture f;
    g_autoptr(GBytes) good = NULL;
    g_autoptr(GError) err = NULL;
    uint32_t unit;
    gsize pools, len;
    const void *data;
    Stream s;

    fixture_init(&f, true);
    guest_changes_mac_and_filters(&f);
    good = save_stream(&f);
    unit = f.unit;
    fixture_free(&f);
    fixture_init_mac(&f, true, "52:54:00:99:00:01");

    stream_copy(&s, good, unit);
    put_be32_at(&s, s.fields + AT_RX_BUFS, 5);
    assert_refused(&f, &s, "rx_bufs 5 but the pools hold 4 buffers");

    stream_copy(&s, good, unit);
    s.data[s.fields + AT_ISOPEN] = 0;
    assert_refused(&f, &s, "rx_bufs 4 but the device is not registered");

    stream_copy(&s, good, unit);
    s.data[s.fields + AT_ISOPEN] = 0;
    put_be32_at(&s, s.fields + AT_RX_BUFS, 0);
    assert_refused(&f, &s, "the pools hold 4 buffers but the device is not "
                   "registered");

    /* Registered, with the pools emptied under rx_bufs. */
    stream_copy(&s, good, unit);
    pools = find_end(&s, "spapr_llan/rx_pools") + 4;
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        put_be32_at(&s, pools + i * POOL_SIZE + 4, 0);
    }
    put_be32_at(&s, s.fields + AT_RX_BUFS, 4);
    assert_refused(&f, &s, "rx_bufs 4 but the pools hold 0 buffers");

    stream_copy(&s, good, unit);
    s.data[s.mac_sub + 4] = 0x01;               /* a multicast MAC */
    assert_refused(&f, &s, "subsection '" MAC_SUB "': mac 01:54:00:ab:cd:ef "
                   "is not a unicast address");

    stream_copy(&s, good, unit);
    put_be32_at(&s, s.mac_sub + 4 + 6 + 2, 17);
    assert_refused(&f, &s, "nmcast 17 is more than the 16");

    stream_copy(&s, good, unit);
    s.data[s.mac_sub + 4 + 6 + 2 + 4] = 0x02;   /* a unicast filter */
    assert_refused(&f, &s, "multicast filter 0 is 02:00:5e:00:00:01");

    /* After all that, the stream as it was loads. */
    data = g_bytes_get_data(good, &len);
    load_stream(&f, data, len, &err);
    g_assert_no_error(err);
    assert_filters(&f, guest_mac);
    fixture_free(&f);
}

/*
 * Page mode: the posted buffers live in the buffer-list page the stream's
 * RAM carries, and rx_bufs is what the destination holds after loading
 * whatever count came with them.  A count that says none while the page
 * holds 37 would leave frames waiting for an add the guest never makes.
 */
static void load_page_mode(Fixture *f, Stream *s, uint32_t expect_bufs)
{
    g_autoptr(GError) err = NULL;
    SpaprVlanStats vs;

    g_assert_true(load_stream(f, s->data, s->len, &err));
    g_assert_no_error(err);
    g_free(s->data);
    spapr_vlan_get_stats(f->lan, &vs);
    g_assert_cmpuint(vs.rx_bufs, ==, expect_bufs);
}

static void test_page_mode_rx_bufs(void)
{
    Fixture f;
    g_autoptr(GBytes) good = NULL;
    SpaprVlanStats vs;
    uint32_t unit;
    Stream s;

    fixture_init(&f, false);
    guest_changes_mac_and_filters(&f);
    add_buffers(&f, 33, 2048);
    good = save_stream(&f);
    unit = f.unit;
    fixture_free(&f);
    fixture_init_mac(&f, false, "52:54:00:99:00:01");

    stream_copy(&s, good, unit);
    load_page_mode(&f, &s, 37);

    stream_copy(&s, good, unit);
    put_be32_at(&s, s.fields + AT_RX_BUFS, LLAN_PAGE_SLOTS);
    load_page_mode(&f, &s, 37);

    stream_copy(&s, good, unit);
    put_be32_at(&s, s.fields + AT_RX_BUFS, 0);
    load_page_mode(&f, &s, 37);
    inject(&f, 1, 60, guest_mac);
    wait_frames(&f, 1);
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.rx_frames, ==, 1);
    g_assert_cmpuint(vs.rx_bufs, ==, 36);
    fixture_free(&f);

    fixture_init_mac(&f, false, "52:54:00:99:00:01");
    stream_copy(&s, good, unit);
    put_be32_at(&s, s.fields + AT_RX_BUFS, LLAN_PAGE_SLOTS + 1);
    assert_refused(&f, &s, "rx_bufs 510 is more than the 509 buffers");
    fixture_free(&f);
}

/* Self-announce: frames read from the peer while the main loop runs. */

static ssize_t recv_frame(Fixture *f, uint8_t *buf, size_t max,
                          gint64 *when)
{
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    while (g_get_monotonic_time() < deadline) {
        struct pollfd pfd = { .fd = f->peer, .events = POLLIN };

        g_main_context_iteration(NULL, FALSE);
        if (poll(&pfd, 1, 1) == 1) {
            *when = g_get_monotonic_time();
            return recv(f->peer, buf, max, 0);
        }
    }
    return -1;
}

static void assert_rarp(const uint8_t *frame, ssize_t len, const uint8_t *mac)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const uint8_t head[10] = { 0x80, 0x35, 0x00, 0x01, 0x08, 0x00,
                                      6, 4, 0x00, 0x03 };
    static const uint8_t zeros[18];

    g_assert_cmpint(len, ==, ANNOUNCE_FRAME_LEN);
    g_assert_cmpmem(frame, 6, bcast, 6);
    g_assert_cmpmem(frame + 6, 6, mac, 6);
    g_assert_cmpmem(frame + 12, 10, head, 10);
    g_assert_cmpmem(frame + 22, 6, mac, 6);
    g_assert_cmpmem(frame + 28, 4, zeros, 4);
    g_assert_cmpmem(frame + 32, 6, mac, 6);
    g_assert_cmpmem(frame + 38, 4, zeros, 4);
    g_assert_cmpmem(frame + 42, 18, zeros, 18);
}

static uint64_t nic_tx_frames(Fixture *f)
{
    NetClientStats st;

    net_client_get_stats(spapr_vlan_nic(f->lan), &st);
    return st.tx_frames;
}

static void test_announce(void)
{
    AnnounceParameters p = { .initial = 20, .max = 25, .rounds = 3,
                             .step = 10 };
    char *nope[] = { "nope", NULL }, *ours[] = { "l-lan@71000000", NULL };
    g_autoptr(GError) err = NULL;
    uint8_t frame[128];
    gint64 when[3];
    Fixture f;

    fixture_init(&f, true);
    open_lan(&f);
    g_assert_cmpint(hcall(&f, H_CHANGE_LOGICAL_LAN_MAC, 0x525400abcdefULL,
                          0, 0, 0), ==, H_SUCCESS);
    g_assert_true(announce_self(&p, &err));
    for (int i = 0; i < 3; i++) {
        assert_rarp(frame, recv_frame(&f, frame, sizeof(frame), &when[i]),
                    guest_mac);
    }
    /* The first at once, then 20 ms, then 20 + 10 capped at 25. */
    g_assert_cmpint(when[1] - when[0], >=, 19000);
    g_assert_cmpint(when[2] - when[1], >=, 24000);
    g_test_message("gaps %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " us",
                   when[1] - when[0], when[2] - when[1]);
    g_assert_cmpuint(nic_tx_frames(&f), ==, 3);
    /* One round is sent before announce_self() returns. */
    p.rounds = 1;
    p.interfaces = nope;
    g_assert_true(announce_self(&p, &err));
    g_assert_cmpuint(nic_tx_frames(&f), ==, 3);
    p.interfaces = ours;
    g_assert_true(announce_self(&p, &err));
    g_assert_cmpuint(nic_tx_frames(&f), ==, 4);
    assert_rarp(frame, recv_frame(&f, frame, sizeof(frame), &when[0]),
                guest_mac);
    p.rounds = 0;
    g_assert_true(announce_self(&p, &err));
    g_assert_cmpuint(nic_tx_frames(&f), ==, 4);
    p.rounds = -1;
    g_assert_false(announce_self(&p, &err));
    g_assert_cmpstr(err->message, ==, "Parameter 'rounds' expects a value "
                    "between 0 and 1000");
    announce_cleanup();
    fixture_free(&f);
}

/* A self-announce between a guest's sends: the net core's transmit
 * counters take no lock (a NIC's sends come one at a time), so an
 * announce that did not wait for the device's transmit lock (its
 * hold_sends) would lose counts here, and ThreadSanitizer would name the
 * race.  The device does not count the announce: the guest did not send
 * it. */

#define RACE_SENDS 4000
#define RACE_ANNOUNCES 400
#define TX_FRAME    0x300000ULL

static gpointer send_frames(gpointer opaque)
{
    Fixture *f = opaque;

    for (unsigned i = 0; i < RACE_SENDS; i++) {
        g_assert_cmpint(hcall(f, H_SEND_LOGICAL_LAN, BD(60, TX_FRAME), 0, 0,
                              0), ==, H_SUCCESS);
    }
    return NULL;
}

static uint64_t tx_total(NetClientState *nc)
{
    NetClientStats st;

    net_client_get_stats(nc, &st);
    g_assert_cmpuint(st.tx_dropped, ==, 0);
    return st.tx_frames + st.tx_errors;
}

static void test_announce_during_sends(void)
{
    AnnounceParameters p = { .initial = 1, .max = 1, .rounds = 1, .step = 1 };
    uint8_t frame[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                          0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x00 };
    g_autoptr(GError) err = NULL;
    NetClientState *nic;
    SpaprVlanStats vs;
    GThread *sender;
    Fixture f;

    fixture_init(&f, true);
    open_lan(&f);
    nic = spapr_vlan_nic(f.lan);
    g_assert_true(guest_ram_write(spapr_ram(f.spapr), TX_FRAME, frame,
                                  sizeof(frame)));
    sender = g_thread_new("llan-sender", send_frames, &f);
    for (unsigned i = 0; i < RACE_ANNOUNCES; i++) {
        g_assert_true(announce_self(&p, &err));
    }
    g_thread_join(sender);
    /* Sent or refused by the socket (its queue may fill): each counted
     * once, on both sides. */
    g_assert_cmpuint(tx_total(nic), ==, RACE_SENDS + RACE_ANNOUNCES);
    g_assert_cmpuint(tx_total(net_client_peer(nic)), ==,
                     RACE_SENDS + RACE_ANNOUNCES);
    /* The device counts only what the guest sent. */
    spapr_vlan_get_stats(f.lan, &vs);
    g_assert_cmpuint(vs.tx_frames, ==, RACE_SENDS);
    announce_cleanup();
    fixture_free(&f);
}


int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    device_class_register(&other_vio_class.parent);
    g_test_add_func("/spapr-llan/one-interrupt-per-batch",
                    test_one_interrupt_per_batch);
    g_test_add_func("/spapr-llan/one-interrupt-per-run",
                    test_one_interrupt_per_run);
    g_test_add_func("/spapr-llan/drops-by-reason-balance",
                    test_drops_by_reason_balance);
    g_test_add_func("/spapr-llan/pool-stats-and-reset",
                    test_pool_stats_and_reset);
    g_test_add_func("/spapr-llan/other-vio-device", test_other_vio_device);
    g_test_add_func("/spapr-llan/planted-descriptor",
                    test_planted_descriptor);
    g_test_add_func("/spapr-llan/page-mode-far-slots",
                    test_page_mode_far_slots);
    g_test_add_func("/spapr-llan/wrap-needs-writable-toggle",
                    test_wrap_needs_writable_toggle);
    g_test_add_func("/spapr-llan/rx/failed-control-byte-clears-stamp",
                    test_failed_control_byte_clears_stamp);
    g_test_add_func("/spapr-llan/rx/refused-entry-clears-stamp",
                    test_refused_entry_clears_stamp);
    g_test_add_func("/spapr-llan/register-resets-filters",
                    test_register_resets_filters);
    g_test_add_func("/spapr-llan/stopped-machine", test_stopped_machine);
    g_test_add_func("/spapr-llan/migration/unchanged-guest-no-subsection",
                    test_unchanged_guest_no_subsection);
    g_test_add_func("/spapr-llan/migration/mac-filters",
                    test_mac_filters_migrate);
    g_test_add_func("/spapr-llan/migration/mac-before-register",
                    test_mac_before_register);
    g_test_add_func("/spapr-llan/migration/refuses-contradictions",
                    test_refuses_contradictions);
    g_test_add_func("/spapr-llan/migration/page-mode-rx-bufs",
                    test_page_mode_rx_bufs);
    g_test_add_func("/spapr-llan/announce", test_announce);
    g_test_add_func("/spapr-llan/announce/during-sends",
                    test_announce_during_sends);
    return g_test_run();
}
