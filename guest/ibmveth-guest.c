/*
 * The built-in ibmveth guest (see guest/ibmveth-guest.h): a vCPU thread
 * that runs the driver model against the machine in-process.
 */
#include "guest/ibmveth-guest.h"
#include "qemu/thread.h"

#include <errno.h>
#include <libfdt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "guest/gro.h"
#include "guest/guest-mem.h"
#include "guest/ibmveth-xmit.h"
#include "guest/inet-l4.h"
#include "guest/ip-reasm.h"
#include "guest/skb-truesize.h"
#include "guest/tap.h"
#include "guest/tx-frames.h"
#include "hw/net/spapr_llan.h"
#include "hw/ppc/spapr_vio.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "qemu/pause.h"
#include "qemu/runstate.h"

/* A vCPU asleep with its interrupt on reads its queue's next entry from
 * memory this often, and at each reassembly timer: no hcall, and rare
 * enough to cost no CPU. */
#define LOOK_MS             1000
/* A frame it finds there gets this long for its interrupt before it
 * counts as woken late (a lost interrupt), and is then taken as the
 * interrupt would have had it.  A run of batches shares one interrupt,
 * pulsed at its end or after 256 frames (hw/net/spapr_llan.c), so a look
 * inside a run finds its first frames before their interrupt, and they
 * wait for as long as the I/O thread is off its CPU mid-run.  Under ASan
 * on two CPUs at load 30 that was up to 22 ms, always with the run's
 * interrupt still owed: a late interrupt, not a lost one. */
#define LOST_IRQ_MS         250
/* More entries than any receive queue holds (Linux's: 64 KiB / 16). */
#define IBMVETH_RESET_DRAIN_MAX 65536
#define ETH_ALEN            6

/* The groups a Linux interface with IPv4 and IPv6 joins at ifup: IPv6's
 * all-nodes ff02::1, IPv4's all-hosts 224.0.0.1, and the solicited-node
 * group ff02::1:ffXX:XXXX of its link-local address (EUI-64, so the
 * MAC's last three bytes), as Ethernet addresses. */
#define MC_IPV6_ALL_NODES   0x333300000001ULL
#define MC_IPV4_ALL_HOSTS   0x01005e000001ULL
#define MC_SOLICITED_NODE   0x3333ff000000ULL
#define MC_IFUP_GROUPS      3
/* Linux's dev->mc has no bound; the model's holds this many addresses
 * the admin added besides the stack's. */
#define MC_ADMIN_GROUPS_MAX 32
#define MC_LIST_MAX         (MC_IFUP_GROUPS + MC_ADMIN_GROUPS_MAX)

/* An address on the interface's multicast list, and who holds it: the
 * stack (joined at ifup, dropped at close) or the admin (ip maddr add,
 * __hw_addr's global_use, kept until ip maddr del). */
typedef struct McEntry {
    uint64_t addr;
    bool by_stack, by_admin;
} McEntry;

/* The interface's multicast list (dev->mc), in the order added. */
typedef struct McList {
    McEntry e[MC_LIST_MAX];
    unsigned n;
} McList;

struct IbmvethGuest {
    IbmvethGuestConf conf;
    IbmvethConf boot_drv;   /* the driver's conf at boot: -guest's pools,
                               the device tree's MAC */
    uint32_t mcast_filters; /* the device's ibm,mac-address-filters */
    bool illan_options;     /* the device tree offers checksum offload */
    char *id, *dev_id, *ifname;
    SpaprMachineState *spapr;
    GuestRam *ram;
    uint32_t irq;
    bool irq_claimed;
    SpaprVlanState *vlan;   /* the device, for the rx stamps only */
    /* By rx-queue entry, the device's stamps (see
     * spapr_vlan_set_rx_stamps): ours, lent to it while the driver is
     * open; the vCPU takes them. */
    uint64_t *rx_stamps;
    uint32_t rx_nstamps;
    IbmvethDriver *drv;     /* NULL while the state is awaited from an
                               incoming stream */
    uint32_t mtu;           /* the interface's: ibmveth_poll() reads
                               longer frames as large packets */
    IpReasm *reasm;
    Gro *gro;               /* fwd=tap */
    TxFrames *tx;
    int tap_fd;
    int wake_fd;            /* eventfd: the device's interrupt, a pause
                               or stop */
    bool irq_raised;        /* atomic: the interrupt came (set by
                               whichever thread delivered, taken by the
                               vCPU, or main with it parked) */
    bool napi_scheduled;    /* the vCPU polls, its interrupt off (vCPU;
                               main with it parked) */
    bool reset_pending;     /* atomic: an entry named no posted buffer;
                               the vCPU waits for the main thread's
                               adapter reset (set by the vCPU, cleared
                               by main) */
    GThread *thread;
    PauseThread *pause;
    bool stop;              /* atomic */
    uint8_t *frame;         /* scratch for frames from the TAP */
    uint64_t now_ns;        /* the clock at the start of this iteration:
                               one read per NAPI poll, not per frame */
    /* Which of the vCPU's paths its TCE hcalls are counted for. */
    GuestPath path;
    /* This poll's frames under rx_copybreak, copied out before their
     * buffers were posted again. */
    uint8_t rx_copy[IBMVETH_GUEST_BUDGET_MAX][IBMVETH_RX_COPYBREAK];
    IbmvethGuestStats st;   /* written by the vCPU, or main with it
                               parked (STAT_ADD) */
    bool reboot;            /* a machine reset closed the driver: open it
                               again (main thread) */
    bool link_down;         /* ip link set down: no driver, the vCPU
                               asleep until up (main, with the vCPU
                               parked; the vCPU reads it) */
    McList mc;              /* main thread, vCPU parked */
};

static const char *const fwd_names[GUEST_FWD__MAX] = {
    [GUEST_FWD_RXONLY] = "rxonly",
    [GUEST_FWD_TXONLY] = "txonly",
    [GUEST_FWD_MACSWAP] = "macswap",
    [GUEST_FWD_TAP] = "tap",
};

static const char *const drop_names[GUEST_DROP__MAX] = {
    [GUEST_DROP_RX_INVALID] = "rx-invalid",
    [GUEST_DROP_BAD_HANDLE] = "bad-handle",
    [GUEST_DROP_REASM_REFUSED] = "reasm-refused",
    [GUEST_DROP_REASM_DROPPED] = "reasm-dropped",
    [GUEST_DROP_REASM_TIMEOUT] = "reasm-timeout",
    [GUEST_DROP_IP_HEADER] = "ip-header-error",
    [GUEST_DROP_TAP_WRITE] = "tap-write",
    [GUEST_DROP_TX_FAILED] = "tx-failed",
    [GUEST_DROP_MACHINE_RESET] = "machine-reset",
    [GUEST_DROP_CLOSED] = "closed",
    [GUEST_DROP_TX_BAD_OFFLOAD] = "tx-bad-offload",
    [GUEST_DROP_RX_CSUM_BAD] = "rx-csum-bad",
};

const char *guest_fwd_name(GuestFwd fwd)
{
    return fwd < GUEST_FWD__MAX ? fwd_names[fwd] : "?";
}

const char *guest_drop_name(GuestDrop drop)
{
    return drop < GUEST_DROP__MAX ? drop_names[drop] : "?";
}

static const struct {
    uint64_t opcode;
    const char *name;
} hcall_names[GUEST_HCALL__MAX] = {
    [GUEST_HCALL_PUT_TCE] = { H_PUT_TCE, "H_PUT_TCE" },
    [GUEST_HCALL_PUT_TCE_INDIRECT] = { H_PUT_TCE_INDIRECT,
                                       "H_PUT_TCE_INDIRECT" },
    [GUEST_HCALL_STUFF_TCE] = { H_STUFF_TCE, "H_STUFF_TCE" },
    [GUEST_HCALL_VIO_SIGNAL] = { H_VIO_SIGNAL, "H_VIO_SIGNAL" },
    [GUEST_HCALL_REGISTER_LOGICAL_LAN] = { H_REGISTER_LOGICAL_LAN,
                                           "H_REGISTER_LOGICAL_LAN" },
    [GUEST_HCALL_FREE_LOGICAL_LAN] = { H_FREE_LOGICAL_LAN,
                                       "H_FREE_LOGICAL_LAN" },
    [GUEST_HCALL_ADD_LOGICAL_LAN_BUFFER] = { H_ADD_LOGICAL_LAN_BUFFER,
                                             "H_ADD_LOGICAL_LAN_BUFFER" },
    [GUEST_HCALL_ADD_LOGICAL_LAN_BUFFERS] = { H_ADD_LOGICAL_LAN_BUFFERS,
                                              "H_ADD_LOGICAL_LAN_BUFFERS" },
    [GUEST_HCALL_SEND_LOGICAL_LAN] = { H_SEND_LOGICAL_LAN,
                                       "H_SEND_LOGICAL_LAN" },
    [GUEST_HCALL_MULTICAST_CTRL] = { H_MULTICAST_CTRL, "H_MULTICAST_CTRL" },
    [GUEST_HCALL_CHANGE_LOGICAL_LAN_MAC] = { H_CHANGE_LOGICAL_LAN_MAC,
                                             "H_CHANGE_LOGICAL_LAN_MAC" },
    [GUEST_HCALL_ILLAN_ATTRIBUTES] = { H_ILLAN_ATTRIBUTES,
                                       "H_ILLAN_ATTRIBUTES" },
    [GUEST_HCALL_OTHER] = { 0, "other" },
};

const char *guest_hcall_name(GuestHcall h)
{
    return h < GUEST_HCALL__MAX ? hcall_names[h].name : "?";
}

static GuestHcall hcall_of_opcode(uint64_t opcode)
{
    GuestHcall h;

    for (h = 0; h < GUEST_HCALL_OTHER; h++) {
        if (hcall_names[h].opcode == opcode) {
            break;
        }
    }
    return h;
}

/* Counters have one writer at a time: the vCPU thread, or main while
 * the vCPU is parked (bus_hcall's counts during the open at boot, the
 * x-guest-set-* commands, the adapter reset, a machine reset); readers
 * load them whole. */
#define STAT_ADD(g, field, n) qemu_counter_add(&(g)->st.field, (n))

/* ---- The bus: hcalls and memory in-process ---- */

static int64_t bus_hcall(void *opaque, uint64_t opcode, unsigned nargs,
                         uint64_t *args, unsigned nout)
{
    IbmvethGuest *g = opaque;
    uint64_t regs[HCALL_NARGS];
    unsigned valid = 0;
    GuestHcall h = hcall_of_opcode(opcode);
    int64_t rc;

    /* Not memcpy: the compiler made it a rep movsq, whose start-up was a
     * third of this function's time on every hcall. */
    for (unsigned i = 0; i < HCALL_NARGS; i++) {
        regs[i] = i < nargs ? args[i] : 0;
    }
    STAT_ADD(g, hcalls[h], 1);
    if (g->path != GUEST_PATH_NONE && (h == GUEST_HCALL_PUT_TCE ||
                                       h == GUEST_HCALL_PUT_TCE_INDIRECT ||
                                       h == GUEST_HCALL_STUFF_TCE)) {
        STAT_ADD(g, tce_hcalls[g->path], 1);
    }
    rc = spapr_hypercall(g->spapr, opcode, regs, &valid);
    memcpy(args, regs, MIN(nout, valid) * sizeof(regs[0]));
    return rc;
}

/* The driver's own structures always lie in RAM; a failed access would
 * be a bug in the model, never the device's doing.  The access stays out
 * of the assertion, which G_DISABLE_ASSERT compiles out. */
static void bus_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    if (!guest_ram_read(((IbmvethGuest *)opaque)->ram, gpa, buf, len)) {
        g_assert_not_reached();
    }
}

static void bus_write(void *opaque, uint64_t gpa, const void *buf,
                      size_t len)
{
    if (!guest_ram_write(((IbmvethGuest *)opaque)->ram, gpa, buf, len)) {
        g_assert_not_reached();
    }
}

static uint8_t bus_read_u8_acquire(void *opaque, uint64_t gpa)
{
    uint8_t *p = guest_ram_ptr(((IbmvethGuest *)opaque)->ram, gpa, 1);

    g_assert(p);
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void bus_fill(void *opaque, uint64_t gpa, uint8_t byte, size_t len)
{
    if (!guest_ram_fill(((IbmvethGuest *)opaque)->ram, gpa, byte, len)) {
        g_assert_not_reached();
    }
}

static uint64_t bus_alloc(void *opaque, uint64_t size, uint64_t align)
{
    (void)opaque;
    return guest_mem_alloc(size, align);
}

static void bus_free(void *opaque, uint64_t gpa, uint64_t size)
{
    (void)opaque;
    guest_mem_free(gpa, size);
}

/* ---- Interrupt ---- */

/* Runs in whichever thread delivered the frames.  The interrupt is only
 * enabled while the vCPU is about to sleep, so this is one eventfd write
 * per sleep, not per batch. */
static void on_irq(void *opaque, int n, int level)
{
    IbmvethGuest *g = opaque;

    (void)n;
    if (level) {
        __atomic_store_n(&g->irq_raised, true, __ATOMIC_RELEASE);
        eventfd_write(g->wake_fd, 1);
    }
}

static bool take_irq(IbmvethGuest *g)
{
    return __atomic_exchange_n(&g->irq_raised, false, __ATOMIC_ACQUIRE);
}

/* ibmveth_interrupt: the interrupt off, the poll scheduled. */
static void irq_handler(IbmvethGuest *g)
{
    ibmveth_set_irq(g->drv, false);
    g->napi_scheduled = true;
}

/* ---- Receive ---- */

static void adapter_reset(void *opaque);

static uint64_t now_ns(void)
{
    return (uint64_t)g_get_monotonic_time() * 1000;
}

static void tap_write(IbmvethGuest *g, const struct iovec *iov, int iovcnt)
{
    ssize_t want = 0;

    for (int i = 0; i < iovcnt; i++) {
        want += iov[i].iov_len;
    }
    if (writev(g->tap_fd, iov, iovcnt) != want) {
        STAT_ADD(g, drops[GUEST_DROP_TAP_WRITE], 1);
    }
}

static void gro_output(void *opaque, const struct iovec *iov, int iovcnt)
{
    tap_write(opaque, iov, iovcnt);
}

/* A frame as it is: no offload asked of the kernel. */
static void tap_deliver(IbmvethGuest *g, const uint8_t *frame, size_t len)
{
    struct virtio_net_hdr none = { 0 };
    struct iovec iov[2] = {
        { &none, sizeof(none) }, { (void *)frame, len },
    };

    tap_write(g, iov, 2);
}

static void publish_gro_stats(IbmvethGuest *g)
{
    GroStats gs;

    gro_get_stats(g->gro, &gs);
    __atomic_store_n(&g->st.gro_packets, gs.packets, __ATOMIC_RELAXED);
    __atomic_store_n(&g->st.gro_merged, gs.merged, __ATOMIC_RELAXED);
    __atomic_store_n(&g->st.gro_csum_checked, gs.csum_checked,
                     __ATOMIC_RELAXED);
}

static void publish_reasm_stats(IbmvethGuest *g)
{
    IpReasmStats rs;

    ip_reasm_stats(g->reasm, &rs);
    STAT_ADD(g, datagrams_ok, rs.datagrams_ok - g->st.datagrams_ok);
    STAT_ADD(g, datagrams_failed,
             rs.datagrams_failed - g->st.datagrams_failed);
    STAT_ADD(g, fragments, rs.fragments - g->st.fragments);
    STAT_ADD(g, fragments_refused,
             rs.fragments_refused - g->st.fragments_refused);
    STAT_ADD(g, drops[GUEST_DROP_REASM_REFUSED],
             rs.fragments_refused - g->st.drops[GUEST_DROP_REASM_REFUSED]);
    STAT_ADD(g, drops[GUEST_DROP_REASM_DROPPED],
             rs.fragments_dropped - g->st.drops[GUEST_DROP_REASM_DROPPED]);
    STAT_ADD(g, drops[GUEST_DROP_REASM_TIMEOUT],
             rs.timeouts - g->st.drops[GUEST_DROP_REASM_TIMEOUT]);
    STAT_ADD(g, drops[GUEST_DROP_IP_HEADER],
             rs.bad - g->st.drops[GUEST_DROP_IP_HEADER]);
    __atomic_store_n(&g->st.charged_bytes, rs.mem_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&g->st.charged_peak_bytes,
                     MAX(rs.mem_peak_bytes, g->st.charged_peak_bytes),
                     __ATOMIC_RELAXED);
}

/* Without GRO (fwd=rxonly), the check Linux's TCP makes of a segment
 * whose checksum the device did not vouch for. */
static bool tcp_csum_refused(const uint8_t *frame, uint32_t len,
                             GroCsum csum)
{
    InetL4 l4;

    return csum == GRO_CSUM_NONE && inet_l4_find(frame, len, &l4) &&
           l4.proto == INET_IPPROTO_TCP && !inet_l4_csum_ok(frame, &l4);
}

/*
 * What the guest's stack does with a frame: it is charged its buffer's
 * truesize while the stack holds it; a fragment is held until its
 * datagram completes or times out, and only a whole datagram goes up.
 */
static void stack_receive(IbmvethGuest *g, uint8_t *frame, uint32_t len,
                          uint32_t buf_size, GroCsum csum, uint16_t mss)
{
    uint32_t truesize = ibmveth_rx_truesize(len, buf_size,
                                            g->conf.page_size);
    size_t dlen;
    const uint8_t *dgram;

    /* Every TCP segment goes through GRO, as napi_gro_receive() has it;
     * IP reassembly sees the rest. */
    if (g->gro && gro_receive(g->gro, frame, len, csum, mss)) {
        __atomic_store_n(&g->st.charged_peak_bytes,
                         MAX(g->st.charged_peak_bytes,
                             g->st.charged_bytes + truesize),
                         __ATOMIC_RELAXED);
        return;
    }
    if (!g->gro && tcp_csum_refused(frame, len, csum)) {
        STAT_ADD(g, drops[GUEST_DROP_RX_CSUM_BAD], 1);
        return;
    }
    switch (ip_reasm_input(g->reasm, frame, len, truesize, g->now_ns)) {
    case IP_REASM_PASS:
        __atomic_store_n(&g->st.charged_peak_bytes,
                         MAX(g->st.charged_peak_bytes,
                             g->st.charged_bytes + truesize),
                         __ATOMIC_RELAXED);
        if (g->tap_fd >= 0) {
            tap_deliver(g, frame, len);
        }
        return;
    case IP_REASM_COMPLETE:
        dgram = ip_reasm_datagram(g->reasm, &dlen);
        if (g->tap_fd >= 0) {
            tap_deliver(g, dgram, dlen);
        }
        break;
    default:
        break;
    }
    publish_reasm_stats(g);
}

static void send_frame(IbmvethGuest *g, const void *frame, size_t len)
{
    int64_t rc = ibmveth_send(g->drv, frame, len);

    /* Linux counts H_DROPPED as sent, as it does H_SUCCESS. */
    if (rc == H_SUCCESS || rc == H_DROPPED) {
        STAT_ADD(g, tx_frames, 1);
        STAT_ADD(g, tx_bytes, len);
    } else {
        STAT_ADD(g, drops[GUEST_DROP_TX_FAILED], 1);
    }
}

static void macswap(uint8_t *frame)
{
    uint8_t tmp[ETH_ALEN];

    memcpy(tmp, frame, ETH_ALEN);
    memcpy(frame, frame + ETH_ALEN, ETH_ALEN);
    memcpy(frame + ETH_ALEN, tmp, ETH_ALEN);
}

/* What ibmveth_poll() makes of the entry's flags: CSUM_GOOD means
 * CHECKSUM_UNNECESSARY. */
static GroCsum rx_csum_state(IbmvethGuest *g, const IbmvethRxEntry *e)
{
    if (e->control & IBMVETH_RXQ_CSUM_GOOD) {
        STAT_ADD(g, rx_csum_good, 1);
        return GRO_CSUM_UNNECESSARY;
    }
    return GRO_CSUM_NONE;
}

/*
 * csum-audit=on: the guest checks with its own code a TCP or UDP
 * checksum the device vouched for (CSUM_GOOD over a full checksum, not
 * NO_CSUM), which Linux takes as CHECKSUM_UNNECESSARY unchecked.  A test
 * instrument: a wrong one is counted, and the frame goes on as Linux
 * would take it.
 */
static void audit_rx_csum(IbmvethGuest *g, const IbmvethRxEntry *e,
                          const uint8_t *frame)
{
    InetL4 l4;

    if (!g->conf.csum_audit ||
        (e->control & (IBMVETH_RXQ_CSUM_GOOD | IBMVETH_RXQ_NO_CSUM)) !=
            IBMVETH_RXQ_CSUM_GOOD ||
        !inet_l4_find(frame, e->len, &l4)) {
        return;
    }
    STAT_ADD(g, rx_csum_audited, 1);
    if (!inet_l4_csum_ok(frame, &l4)) {
        STAT_ADD(g, rx_csum_lied, 1);
    }
}

/* Linux's large-packet reading of the frame at @frame (see
 * ibmveth_rx_large()); returns the MSS it gives the stack, 0 when the
 * skb is not GSO. */
static uint16_t rx_large(IbmvethGuest *g, const IbmvethRxEntry *e,
                         uint8_t *frame)
{
    bool lrg_pkt = e->control & IBMVETH_RXQ_LRG_PKT;
    IbmvethRxLarge r = ibmveth_rx_large(frame, e->len, g->mtu, lrg_pkt,
                                        lrg_pkt ? ibmveth_rx_mss(g->drv, e)
                                                : 0);

    if (r.large) {
        STAT_ADD(g, rx_large, 1);
    }
    if (r.zeroed_at) {
        guest_ram_mark_dirty(g->ram, ibmveth_rx_data_addr(g->drv, e) +
                                     r.zeroed_at, 2);
    }
    return r.gso_size;
}

/* Sends a packet the stack left unfinished through ibmveth_start_xmit()'s
 * offloads, or finished in software when they are not in force. */
static void xmit_unfinished(IbmvethGuest *g,
                            const struct virtio_net_hdr *vnet,
                            uint8_t *frame, size_t len)
{
    IbmvethXmit x;
    int64_t rc;

    if (ibmveth_xmit_prepare(vnet, frame, len, g->conf.drv.rx_csum,
                             g->conf.drv.large_send, &x) !=
            IBMVETH_XMIT_OK) {
        STAT_ADD(g, drops[GUEST_DROP_TX_BAD_OFFLOAD], 1);
        return;
    }
    rc = ibmveth_send_offload(g->drv, frame, len, x.bd_flags, x.mss);
    if (rc == H_SUCCESS || rc == H_DROPPED) {
        STAT_ADD(g, tx_frames, 1);
        STAT_ADD(g, tx_bytes, len);
        STAT_ADD(g, tx_csum_offloaded, !!(x.bd_flags & IBMVETH_BD_NO_CSUM));
        STAT_ADD(g, tx_large_sends, !!(x.bd_flags & IBMVETH_BD_LRG_SND));
    } else {
        STAT_ADD(g, drops[GUEST_DROP_TX_FAILED], 1);
    }
}

static void send_segment(void *opaque, const uint8_t *frame, uint32_t len)
{
    send_frame(opaque, frame, len);
}

/*
 * fwd=macswap sends a frame back as Linux's stack forwards the skb
 * ibmveth_poll() made of it: one the device left unfinished (a merged
 * large packet, a partial TCP checksum) goes out with start_xmit's
 * offloads, large send with the MSS ibmveth_rx_mss_helper() gave it
 * (the device's, or for a frame over the MTU not marked LRG_PKT the
 * one read from its checksum field); a large packet the
 * offloads in force cannot take is segmented in software first, as
 * validate_xmit_skb() does.  A large packet without CSUM_GOOD is a
 * CHECKSUM_NONE GSO skb, which netif_needs_gso() always hands to
 * software segmenting, and tcp4_gso_segment() checksums each segment
 * afresh.
 */
static void macswap_forward(IbmvethGuest *g, uint8_t *frame,
                            const IbmvethRxEntry *e)
{
    uint64_t addr = ibmveth_rx_data_addr(g->drv, e);
    uint16_t gso_size = rx_large(g, e, frame);
    struct virtio_net_hdr vnet;

    rx_csum_state(g, e);
    if (e->len < 2 * ETH_ALEN) {
        send_frame(g, frame, e->len);
        return;
    }
    macswap(frame);
    if (gso_size && !(e->control & IBMVETH_RXQ_CSUM_GOOD)) {
        guest_ram_mark_dirty(g->ram, addr, e->len);
        if (ibmveth_xmit_segment(frame, e->len, gso_size, send_segment, g)) {
            return;
        }
    }
    if (!ibmveth_rx_partial(frame, e->len, e->control, gso_size, &vnet)) {
        guest_ram_mark_dirty(g->ram, addr, 2 * ETH_ALEN);
        send_frame(g, frame, e->len);
        return;
    }
    /* Headers rewritten in the guest's buffer, segments' over its data. */
    guest_ram_mark_dirty(g->ram, addr, e->len);
    if (vnet.gso_type != VIRTIO_NET_HDR_GSO_NONE &&
        !(g->conf.drv.rx_csum && g->conf.drv.large_send)) {
        ibmveth_xmit_segment(frame, e->len, vnet.gso_size, send_segment, g);
        return;
    }
    xmit_unfinished(g, &vnet, frame, e->len);
}

static void receive_frame(IbmvethGuest *g, const IbmvethRxEntry *e,
                          uint8_t *frame)
{
    STAT_ADD(g, rx_frames, 1);
    STAT_ADD(g, rx_bytes, e->len);
    STAT_ADD(g, frames_in_pool[e->pool], 1);
    STAT_ADD(g, buffer_bytes, e->buf_size);
    if (!frame) {
        return;
    }
    audit_rx_csum(g, e, frame);
    switch (g->conf.fwd) {
    case GUEST_FWD_MACSWAP:
        macswap_forward(g, frame, e);
        break;
    case GUEST_FWD_RXONLY:
    case GUEST_FWD_TAP:
        stack_receive(g, frame, e->len, e->buf_size, rx_csum_state(g, e),
                      rx_large(g, e, frame));
        break;
    default:
        break;
    }
}

/* The device's stamp for the entry @e, if it left one (the entry of the
 * last frame of a batch that came with one): a sample of the delay from
 * the host's XDP program to the frame's consumption, now. */
static void sample_rx_latency(IbmvethGuest *g, const IbmvethRxEntry *e)
{
    uint64_t stamp;

    if (G_UNLIKELY(e->index >= g->rx_nstamps) ||
        G_LIKELY(!__atomic_load_n(&g->rx_stamps[e->index],
                                  __ATOMIC_RELAXED))) {
        return;
    }
    stamp = __atomic_exchange_n(&g->rx_stamps[e->index], 0,
                                __ATOMIC_RELAXED);
    latency_histogram_add_since(&g->st.rx_latency, stamp);
}

/*
 * Takes the READY entry @e, the @n-th of this poll, as ibmveth_poll()
 * does: a frame under rx_copybreak is copied out and its buffer posted
 * again at once, as is the buffer of an entry without the valid bit;
 * any other buffer is consumed (unmapped) and posted again by the
 * replenish.  Returns the frame, NULL when there is none to receive.
 */
static uint8_t *take_entry(IbmvethGuest *g, const IbmvethRxEntry *e,
                           unsigned n)
{
    uint8_t *frame = guest_ram_ptr(g->ram, ibmveth_rx_data_addr(g->drv, e),
                                   e->len);

    if (e->valid && e->len >= IBMVETH_RX_COPYBREAK) {
        __builtin_prefetch(frame);
        ibmveth_rx_consume(g->drv, e);
        return frame;
    }
    if (e->valid && frame) {
        memcpy(g->rx_copy[n], frame, e->len);
        frame = g->rx_copy[n];
    }
    ibmveth_rx_recycle(g->drv, e);
    return frame;
}

/*
 * One NAPI poll: up to budget entries, then the replenish.  The entries
 * are taken first and their frames prefetched together, since the device
 * wrote them a while ago and each first touch would otherwise stall on
 * its own; a consumed buffer goes back to its pool's free list at once
 * but is posted again only by the replenish, after the frames are done
 * with.
 */
static unsigned napi_poll(IbmvethGuest *g)
{
    IbmvethRxEntry e[IBMVETH_GUEST_BUDGET_MAX];
    uint8_t *frame[IBMVETH_GUEST_BUDGET_MAX];
    IbmvethRxStatus status;
    unsigned n = 0;

    g->path = GUEST_PATH_RX;
    while (n < g->conf.budget) {
        status = ibmveth_rx_peek(g->drv, &e[n]);
        if (status == IBMVETH_RX_EMPTY) {
            break;
        }
        /* Mainline's ibmveth_poll stops at it, untaken, and schedules
         * its reset work (which counts it). */
        if (status == IBMVETH_RX_BAD_HANDLE) {
            __atomic_store_n(&g->reset_pending, true, __ATOMIC_RELAXED);
            main_loop_run_or_post(adapter_reset, g);
            break;
        }
        sample_rx_latency(g, &e[n]);
        frame[n] = take_entry(g, &e[n], n);
        n++;
    }
    for (unsigned i = 0; i < n; i++) {
        if (!e[i].valid) {
            STAT_ADD(g, drops[GUEST_DROP_RX_INVALID], 1);
        } else {
            receive_frame(g, &e[i], frame[i]);
        }
    }
    /* GRO's packets point into the buffers the replenish posts again. */
    if (g->gro) {
        gro_flush(g->gro);
        publish_gro_stats(g);
    }
    ibmveth_replenish(g->drv);
    g->path = GUEST_PATH_NONE;
    STAT_ADD(g, napi_polls, 1);
    return n;
}

/* ---- Transmit sources ---- */

/* The guest's stack hands the driver what the TAP's namespace sends. */
static unsigned tap_poll(IbmvethGuest *g)
{
    unsigned n = 0;

    while (n < g->conf.budget) {
        struct virtio_net_hdr vnet;
        struct iovec iov[2] = {
            { &vnet, sizeof(vnet) }, { g->frame, IBMVETH_TX_BUF_SIZE },
        };
        ssize_t len = readv(g->tap_fd, iov, 2);

        if (len <= (ssize_t)sizeof(vnet)) {
            break;
        }
        STAT_ADD(g, tap_rx_frames, 1);
        xmit_unfinished(g, &vnet, g->frame, len - sizeof(vnet));
        n++;
    }
    return n;
}

static unsigned txonly_burst(IbmvethGuest *g)
{
    for (unsigned i = 0; i < g->conf.budget; i++) {
        size_t len;
        const uint8_t *frame = tx_frames_next(g->tx, &len);

        send_frame(g, frame, len);
    }
    return g->conf.budget;
}

/* Work that does not wait for the interrupt: transmit sources. */
static unsigned tx_work(IbmvethGuest *g)
{
    unsigned n = 0;

    g->path = GUEST_PATH_TX;
    if (g->conf.fwd == GUEST_FWD_TXONLY) {
        n = txonly_burst(g);
    } else if (g->conf.fwd == GUEST_FWD_TAP) {
        n = tap_poll(g);
    }
    g->path = GUEST_PATH_NONE;
    return n;
}

/* ---- The vCPU loop ---- */

static int sleep_timeout_ms(IbmvethGuest *g)
{
    uint64_t next = ip_reasm_next_expiry(g->reasm), now = now_ns();

    if (next == UINT64_MAX) {
        return LOOK_MS;
    }
    return next <= now ? 0 : (int)MIN((next - now) / 1000000 + 1, LOOK_MS);
}

typedef enum VcpuWake {
    WAKE_IRQ,
    WAKE_TIMEOUT,
    WAKE_OTHER,         /* a TAP frame, a pause or a stop */
} VcpuWake;

static VcpuWake vcpu_wait(IbmvethGuest *g, struct pollfd *fds, nfds_t nfds,
                          int timeout_ms)
{
    int ready = poll(fds, nfds, timeout_ms);
    eventfd_t count;

    if (ready > 0 && (fds[0].revents & POLLIN)) {
        eventfd_read(g->wake_fd, &count);
    }
    if (take_irq(g)) {
        STAT_ADD(g, wakeups, 1);
        return WAKE_IRQ;
    }
    return ready == 0 ? WAKE_TIMEOUT : WAKE_OTHER;
}

/*
 * Sleeps with the interrupt on until it comes, a TAP frame, a reassembly
 * timeout or a pause; no hcall but the interrupt handler's.  At a
 * timeout it reads the queue's next entry from memory: a frame there
 * with no interrupt after LOST_IRQ_MS more has sat in the queue that
 * long while the interrupt was on, "woken late", and is taken as the
 * interrupt would have had it.  A pause or stop cuts that wait short
 * (the I/O thread may be parked mid-run, its interrupt still owed), and
 * the next look decides.
 */
static void vcpu_sleep(IbmvethGuest *g)
{
    struct pollfd fds[2] = {
        { .fd = g->wake_fd, .events = POLLIN },
        { .fd = g->tap_fd, .events = POLLIN },
    };
    IbmvethRxEntry e;
    VcpuWake wake = vcpu_wait(g, fds, g->tap_fd >= 0 ? 2 : 1,
                              sleep_timeout_ms(g));

    if (wake == WAKE_TIMEOUT) {
        if (ibmveth_rx_peek(g->drv, &e) == IBMVETH_RX_EMPTY) {
            return;
        }
        wake = vcpu_wait(g, fds, 1, LOST_IRQ_MS);
        if (wake == WAKE_TIMEOUT) {
            STAT_ADD(g, woken_late, 1);
        }
    }
    if (wake != WAKE_OTHER) {
        irq_handler(g);
    }
}

/* The last look after the interrupt went on, since a frame that came
 * before it was on raised nothing: one found (or the interrupt, come
 * meanwhile) schedules the poll again, as the interrupt would. */
static void napi_recheck(IbmvethGuest *g)
{
    IbmvethRxEntry e;

    g->napi_scheduled = false;
    if (take_irq(g) || ibmveth_rx_peek(g->drv, &e) != IBMVETH_RX_EMPTY) {
        irq_handler(g);
    }
}

/* The end of ibmveth_poll with budget to spare. */
static void napi_complete(IbmvethGuest *g)
{
    ibmveth_set_irq(g->drv, true);
    napi_recheck(g);
}

/* Until the main thread parks the vCPU, or stops it: for its adapter
 * reset, as Linux's poll makes no progress past the entry until its
 * reset work runs, or for ip link set up. */
static void sleep_until_woken(IbmvethGuest *g)
{
    struct pollfd fd = { .fd = g->wake_fd, .events = POLLIN };
    eventfd_t count;

    if (poll(&fd, 1, -1) > 0) {
        eventfd_read(g->wake_fd, &count);
    }
}

static void vcpu_iteration(IbmvethGuest *g)
{
    unsigned rx = 0, tx;

    if (__atomic_load_n(&g->reset_pending, __ATOMIC_RELAXED) ||
        g->link_down) {
        sleep_until_woken(g);
        return;
    }
    g->now_ns = now_ns();
    if (g->napi_scheduled) {
        rx = napi_poll(g);
        /* poll=spin never completes its poll, nor does one stopped at
         * a bad handle. */
        if (rx < g->conf.budget && !g->conf.spin &&
            !__atomic_load_n(&g->reset_pending, __ATOMIC_RELAXED)) {
            napi_complete(g);
        }
    }
    tx = tx_work(g);
    ip_reasm_expire(g->reasm, g->now_ns);
    if (g->conf.spin) {
        /* As a spinning I/O thread does: the CPU may be shared. */
        if (rx < g->conf.budget && tx == 0) {
            sched_yield();
        }
        return;
    }
    if (!g->napi_scheduled && tx == 0) {
        vcpu_sleep(g);
    }
}

static void publish_cpu(IbmvethGuest *g)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
        __atomic_store_n(&g->st.cpu_ns,
                         (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
                         __ATOMIC_RELAXED);
    }
}

/* The device adds to this counter from whichever thread delivers frames,
 * with nothing the guest could order its read after: a CPU's load of a
 * word DMA may be writing, which is what guest_ram_cpu_read is for. */
static uint64_t rx_no_buffer(IbmvethGuest *g)
{
    uint64_t be = 0;

    guest_ram_cpu_read(g->ram, ibmveth_buffer_list(g->drv) +
                       IBMVETH_RX_NO_BUFFER_OFFSET, &be, sizeof(be));
    return GUINT64_FROM_BE(be);
}

static gpointer vcpu_thread(gpointer opaque)
{
    IbmvethGuest *g = opaque;
    unsigned n = 0;

    while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
        /* Between hcalls: the machine's state is whole here.  A guest
         * waiting for its state (inmigrate) never gets past it: the
         * machine runs only once the stream has been committed. */
        if (pause_point(g->pause)) {
            continue;
        }
        vcpu_iteration(g);
        if ((++n & 1023) == 0 && g->drv) {
            publish_cpu(g);
            __atomic_store_n(&g->st.rx_no_buffer, rx_no_buffer(g),
                             __ATOMIC_RELAXED);
            __atomic_store_n(&g->st.add_failures,
                             ibmveth_add_failures(g->drv), __ATOMIC_RELAXED);
        }
    }
    publish_cpu(g);
    return NULL;
}

/* ---- Life cycle ---- */

/* The child of /vdevice whose unit address is @reg. */
static int find_devnode(const void *fdt, uint32_t reg)
{
    int vdevice = fdt_path_offset(fdt, "/vdevice");
    int node;

    fdt_for_each_subnode(node, fdt, vdevice) {
        int len;
        const fdt32_t *r = fdt_getprop(fdt, node, "reg", &len);

        if (r && len == sizeof(*r) && fdt32_to_cpu(*r) == reg) {
            return node;
        }
    }
    return -FDT_ERR_NOTFOUND;
}

/* A MAC as hcalls carry it: the low 48 bits, first octet highest. */
static uint64_t mac_to_u64(const uint8_t *p)
{
    uint64_t mac = 0;

    for (int i = 0; i < ETH_ALEN; i++) {
        mac = mac << 8 | p[i];
    }
    return mac;
}

/* As Linux's ibmveth_probe() does: local-mac-address is 6 bytes, or 8
 * with two leading zero bytes (older firmware's form). */
static bool read_mac(const void *fdt, int node, uint64_t *mac)
{
    int len;
    const uint8_t *p = fdt_getprop(fdt, node, "local-mac-address", &len);

    if (!p || (len != ETH_ALEN && len != ETH_ALEN + 2)) {
        return false;
    }
    *mac = mac_to_u64(p + len - ETH_ALEN);
    return true;
}

/* The guest knows its device as Linux does, from the device tree the
 * machine gives it: unit address, interrupt and MAC.  Only dev=ID, the
 * user's name for the device, is looked up on the bus. */
static bool find_device(IbmvethGuest *g, const char *dev, GError **errp)
{
    SpaprVioDevice *vdev = spapr_vio_find_by_path(spapr_vio_bus(g->spapr),
                                                  dev);
    g_autofree void *fdt = NULL;
    const fdt32_t *irq, *filters;
    int node, len, flen;

    if (!vdev) {
        g_set_error(errp, ILLAN_ERROR, 0, "dev=%s: no such device (give "
                    "the spapr-vlan an id: -device spapr-vlan,id=%s,...)",
                    dev, dev);
        return false;
    }
    fdt = spapr_build_fdt(g->spapr, errp);
    if (!fdt) {
        return false;
    }
    node = find_devnode(fdt, vdev->reg);
    if (node < 0 || fdt_node_check_compatible(fdt, node, "IBM,l-lan")) {
        g_set_error(errp, ILLAN_ERROR, 0, "dev=%s is not a spapr-vlan", dev);
        return false;
    }
    irq = fdt_getprop(fdt, node, "interrupts", &len);
    filters = fdt_getprop(fdt, node, "ibm,mac-address-filters", &flen);
    if (!irq || len < (int)sizeof(*irq) ||
        !filters || flen != (int)sizeof(*filters) ||
        !read_mac(fdt, node, &g->conf.drv.mac)) {
        g_set_error(errp, ILLAN_ERROR, 0, "dev=%s: its device-tree node "
                    "lacks interrupts, ibm,mac-address-filters or "
                    "local-mac-address", dev);
        return false;
    }
    g->conf.drv.unit = vdev->reg;
    g->vlan = spapr_vlan_from_vio(vdev);
    g->irq = fdt32_to_cpu(*irq);
    g->mcast_filters = fdt32_to_cpu(*filters);
    g->illan_options = fdt_getprop(fdt, node, "ibm,illan-options",
                                   NULL) != NULL;
    g->boot_drv = g->conf.drv;
    return true;
}

static IbmvethBus guest_bus(IbmvethGuest *g)
{
    return (IbmvethBus) {
        .hcall = bus_hcall, .read = bus_read, .write = bus_write,
        .fill = bus_fill, .read_u8_acquire = bus_read_u8_acquire,
        .alloc = bus_alloc, .free = bus_free, .opaque = g,
    };
}

static void publish_pool_sizes(IbmvethGuest *g)
{
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        __atomic_store_n(&g->st.pool_size[i], ibmveth_pool_size(g->drv, i),
                         __ATOMIC_RELAXED);
    }
}

/* The TAP's kernel may leave to us what the device does for us. */
static bool tap_offloads(IbmvethGuest *g, GError **errp)
{
    return g->tap_fd < 0 ||
           tap_set_offload(g->tap_fd, g->conf.drv.rx_csum,
                           g->conf.drv.large_send, errp);
}

/* Linux's probe: the features it asks the device for (after a reset the
 * device has forgotten them). */
static bool probe_driver(IbmvethGuest *g, GError **errp)
{
    IbmvethBus bus = guest_bus(g);

    ibmveth_probe_features(&bus, &g->conf.drv, g->illan_options,
                           g->conf.offloads);
    return tap_offloads(g, errp);
}

/* The driver is open: the device may stamp its queue's entries. */
static void lend_rx_stamps(IbmvethGuest *g)
{
    g->rx_nstamps = ibmveth_rxq_entries(g->drv);
    g->rx_stamps = g_new0(uint64_t, g->rx_nstamps);
    spapr_vlan_set_rx_stamps(g->vlan, g->rx_stamps, g->rx_nstamps);
}

static void close_driver(IbmvethGuest *g)
{
    /* Linux keeps rx_buffers_per_hcall from probe to the next probe,
     * dropped to one for good by an H_FUNCTION. */
    g->conf.drv.bulk_add = ibmveth_bds_per_add(g->drv) > 1;
    spapr_vlan_set_rx_stamps(g->vlan, NULL, 0);
    ibmveth_close(g_steal_pointer(&g->drv));
    g_clear_pointer(&g->rx_stamps, g_free);
    g->rx_nstamps = 0;
}

static bool open_driver(IbmvethGuest *g, GError **errp)
{
    IbmvethBus bus = guest_bus(g);

    g->drv = ibmveth_open(&bus, &g->conf.drv, NULL, errp);
    if (!g->drv) {
        return false;
    }
    lend_rx_stamps(g);
    /* ibmveth_open's first poll ended with the interrupt on: its last
     * look, or poll=spin's polling, which runs with it off. */
    if (g->conf.spin) {
        irq_handler(g);
    } else {
        napi_recheck(g);
    }
    publish_pool_sizes(g);
    return true;
}

/* ndo_set_rx_mode, ibmveth_set_multicast_list over the list as it
 * stands; nothing on a down interface (__dev_set_rx_mode).  The stack
 * behind a TAP joins groups this model cannot see: all multicast, as a
 * bridged (promiscuous) interface has it. */
static void set_rx_mode(IbmvethGuest *g)
{
    uint64_t addr[MC_LIST_MAX];

    if (!g->drv) {
        return;
    }
    for (unsigned i = 0; i < g->mc.n; i++) {
        addr[i] = g->mc.e[i].addr;
    }
    ibmveth_set_rx_mode(g->drv, g->conf.fwd == GUEST_FWD_TAP, addr,
                        g->mc.n, g->mcast_filters);
}

static McEntry *mc_find(McList *mc, uint64_t addr)
{
    for (unsigned i = 0; i < mc->n; i++) {
        if (mc->e[i].addr == addr) {
            return &mc->e[i];
        }
    }
    return NULL;
}

/*
 * The entry for @addr, listed once.  The list cannot be full: the stack
 * holds at most its MC_IFUP_GROUPS (joined at ifup, dropped at close),
 * and ibmveth_guest_add_multicast refuses an admin's address beyond
 * MC_ADMIN_GROUPS_MAX, and MC_LIST_MAX is their sum.
 */
static McEntry *mc_add(McList *mc, uint64_t addr)
{
    McEntry *e = mc_find(mc, addr);

    if (!e) {
        g_assert(mc->n < MC_LIST_MAX);
        e = &mc->e[mc->n++];
        *e = (McEntry){ .addr = addr };
    }
    return e;
}

/* Entries no one holds any more leave the list, the others keep their
 * order. */
static void mc_prune(McList *mc)
{
    unsigned kept = 0;

    for (unsigned i = 0; i < mc->n; i++) {
        if (mc->e[i].by_stack || mc->e[i].by_admin) {
            mc->e[kept++] = mc->e[i];
        }
    }
    mc->n = kept;
}

/* dev_mc_add from the stack, on an interface that is up: the group
 * listed once, and ndo_set_rx_mode called whether it is new or not
 * (__dev_mc_add). */
static void mc_join(IbmvethGuest *g, uint64_t addr)
{
    mc_add(&g->mc, addr)->by_stack = true;
    set_rx_mode(g);
}

/* At close the stack's groups go (IPv4's ip_mc_down, IPv6's
 * ipv6_mc_down and its link-local address), with the device already
 * down: no rx mode.  The admin's stay on dev->mc. */
static void mc_drop_stack(McList *mc)
{
    for (unsigned i = 0; i < mc->n; i++) {
        mc->e[i].by_stack = false;
    }
    mc_prune(mc);
}

/*
 * The ndo_set_rx_mode calls of an ifup (dev_open), after ibmveth_open:
 * __dev_open's own, then IPv4's ip_mc_up joining all-hosts, then IPv6's
 * addrconf_dad_begin joining the link-local address's solicited-node
 * group.  At boot IPv6 joined all-nodes when the interface registered
 * (ipv6_add_dev), so it is listed from the start; after a dev_close,
 * which dropped the stack's groups and kept the admin's, ipv6_mc_up
 * joins it again between the other two.  ibmveth's own close and open
 * (MTU change) call none.
 */
static void ifup_rx_mode(IbmvethGuest *g, bool boot)
{
    if (boot) {
        g->mc.n = 0;
        mc_add(&g->mc, MC_IPV6_ALL_NODES)->by_stack = true;
    }
    set_rx_mode(g);
    mc_join(g, MC_IPV4_ALL_HOSTS);
    if (!boot) {
        mc_join(g, MC_IPV6_ALL_NODES);
    }
    mc_join(g, MC_SOLICITED_NODE | (g->conf.drv.mac & 0xFFFFFF));
}

/* A boot: probe, then ifup. */
static bool boot_driver(IbmvethGuest *g, GError **errp)
{
    if (!probe_driver(g, errp) || !open_driver(g, errp)) {
        return false;
    }
    ifup_rx_mode(g, true);
    return true;
}

static bool open_workload(IbmvethGuest *g, GError **errp)
{
    uint8_t src[ETH_ALEN];

    g->reasm = ip_reasm_new(g->conf.ipfrag_high_thresh,
                            g->conf.ipfrag_time_ns);
    if (g->conf.fwd == GUEST_FWD_TAP) {
        g->tap_fd = tap_open(g->ifname, errp);
        g->frame = g_malloc(IBMVETH_TX_BUF_SIZE);
        g->gro = gro_new(gro_output, g);
        return g->tap_fd >= 0;
    }
    if (g->conf.fwd == GUEST_FWD_TXONLY) {
        for (int i = 0; i < ETH_ALEN; i++) {
            src[i] = g->conf.drv.mac >> (8 * (ETH_ALEN - 1 - i));
        }
        g->tx = tx_frames_new(g->conf.tx_size, g->conf.tx_dst, src);
    }
    return true;
}

IbmvethGuest *ibmveth_guest_new(SpaprMachineState *spapr, const char *dev,
                                const IbmvethGuestConf *conf, bool incoming,
                                GError **errp)
{
    IbmvethGuest *g = g_new0(IbmvethGuest, 1);

    g->conf = *conf;
    g->id = g_strdup(conf->id);
    g->dev_id = g_strdup(dev);
    g->ifname = g_strdup(conf->ifname);
    g->conf.id = g->id;
    g->conf.ifname = g->ifname;
    g->spapr = spapr;
    g->ram = spapr_ram(spapr);
    g->tap_fd = -1;
    g->path = GUEST_PATH_NONE;
    g->mtu = IBMVETH_DEFAULT_MTU;
    g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g->wake_fd < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "eventfd: %s", g_strerror(errno));
    } else if (find_device(g, dev, errp) && open_workload(g, errp) &&
               (incoming || boot_driver(g, errp))) {
        g->irq_claimed = spapr_irq_claim(spapr, g->irq, on_irq, g);
        if (g->irq_claimed) {
            return g;
        }
        g_set_error(errp, ILLAN_ERROR, 0, "dev=%s: its interrupt 0x%x "
                    "already has a guest", dev, g->irq);
    }
    ibmveth_guest_free(g);
    return NULL;
}

static void kick_vcpu(void *opaque)
{
    eventfd_write(((IbmvethGuest *)opaque)->wake_fd, 1);
}

bool ibmveth_guest_start(IbmvethGuest *g, GError **errp)
{
    g_autofree char *name = g_strdup_printf("vcpu-%s", g->id);

    g->pause = pause_thread_register(name, kick_vcpu, g);
    g->thread = g_thread_try_new(name, vcpu_thread, g, errp);
    if (!g->thread) {
        pause_thread_free(g_steal_pointer(&g->pause));
    }
    return g->thread != NULL;
}

/* Frames the device delivered that the guest had not taken yet when it
 * closed (a reset, an MTU change): a closing guest never sees them. */
static void count_lost(IbmvethGuest *g, GuestDrop why)
{
    IbmvethRxEntry e;
    IbmvethRxStatus status;
    unsigned lost = 0, bad = 0;

    /* Bounded by the queue, but the device wrote it: bound it here too.
     * An entry naming no posted buffer keeps its own reason. */
    while (lost + bad < IBMVETH_RESET_DRAIN_MAX &&
           (status = ibmveth_rx_peek(g->drv, &e)) != IBMVETH_RX_EMPTY) {
        ibmveth_rx_consume(g->drv, &e);
        if (status == IBMVETH_RX_BAD_HANDLE) {
            bad++;
        } else {
            lost++;
        }
    }
    STAT_ADD(g, drops[why], lost);
    STAT_ADD(g, drops[GUEST_DROP_BAD_HANDLE], bad);
}

void ibmveth_guest_reset_close(IbmvethGuest *g)
{
    /* inmigrate: the state is still to come, and stays so; a guest
     * whose interface is down boots as any other */
    g->reboot = g->drv != NULL || g->link_down;
    if (g->drv) {
        count_lost(g, GUEST_DROP_MACHINE_RESET);
        close_driver(g);
    }
}

void ibmveth_guest_reset_open(IbmvethGuest *g)
{
    g_autoptr(GError) err = NULL;

    if (!g->reboot) {
        return;
    }
    g->conf.drv = g->boot_drv;
    g->mtu = IBMVETH_DEFAULT_MTU;
    g->link_down = false;
    if (!boot_driver(g, &err)) {
        g_error("guest %s: reopening after reset: %s", g->id, err->message);
    }
    STAT_ADD(g, resets, 1);
}

/*
 * Mainline's ibmveth_reset, the work ibmveth_poll schedules for an entry
 * whose handle names no buffer of its pools: dev_close and dev_open, so
 * the ifup's rx mode too.  The entry goes with the queue, counted
 * bad-handle, the others delivered since closed.  Nothing to do if a close (machine reset, MTU change) or an
 * exit came first; a machine stopped meanwhile (stop, a migration) is
 * left as it is, and its vCPU, polling again when it runs, finds the
 * entry again.
 */
static void adapter_reset(void *opaque)
{
    IbmvethGuest *g = opaque;
    g_autoptr(GError) err = NULL;
    IbmvethRxEntry e;

    pause_all();
    if (runstate_is_running() && g->thread && g->drv &&
        ibmveth_rx_peek(g->drv, &e) == IBMVETH_RX_BAD_HANDLE) {
        count_lost(g, GUEST_DROP_CLOSED);
        close_driver(g);
        mc_drop_stack(&g->mc);
        if (!open_driver(g, &err)) {
            g_error("guest %s: reopening after a bad rx handle: %s", g->id,
                    err->message);
        }
        ifup_rx_mode(g, false);
        STAT_ADD(g, adapter_resets, 1);
    }
    __atomic_store_n(&g->reset_pending, false, __ATOMIC_RELAXED);
    resume_all();
}

/* An admin's command needs the guest's state, which an incoming
 * migration may still be bringing; its interface may be up or down. */
static bool has_driver(IbmvethGuest *g, GError **errp)
{
    if (!g->drv && !g->link_down) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s' has no driver yet "
                    "(it waits for an incoming migration)", g->id);
        return false;
    }
    return true;
}

/* @addr as an error message spells it. */
static char *mac_string(const uint8_t *addr)
{
    MACAddr mac;

    memcpy(mac.a, addr, sizeof(mac.a));
    return mac_format(&mac);
}

/* ibmveth_set_mac_addr's hcall, which it makes whether the interface
 * is up or down. */
static int64_t change_mac(IbmvethGuest *g, uint64_t mac)
{
    uint64_t args[2] = { g->conf.drv.unit, mac };

    if (g->drv) {
        return ibmveth_change_mac(g->drv, mac);
    }
    return bus_hcall(g, H_CHANGE_LOGICAL_LAN_MAC, 2, args, 0);
}

bool ibmveth_guest_set_mac(IbmvethGuest *g, const uint8_t *addr,
                           GError **errp)
{
    static const uint8_t zero[6];
    uint64_t mac = mac_to_u64(addr);
    int64_t rc;

    /* ibmveth_set_mac_addr: is_valid_ether_addr, before any hcall. */
    if ((addr[0] & 1) || !memcmp(addr, zero, 6)) {
        g_autofree char *str = mac_string(addr);

        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': MAC %s is not a "
                    "valid unicast address; Linux's ibmveth refuses it "
                    "before H_CHANGE_LOGICAL_LAN_MAC (EADDRNOTAVAIL)", g->id,
                    str);
        return false;
    }
    if (!has_driver(g, errp)) {
        return false;
    }
    pause_all();
    rc = change_mac(g, mac);
    if (rc == H_SUCCESS) {
        g->conf.drv.mac = mac;
    }
    resume_all();
    if (rc != H_SUCCESS) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': "
                    "H_CHANGE_LOGICAL_LAN_MAC returned %" G_GINT64_FORMAT,
                    g->id, rc);
    }
    return rc == H_SUCCESS;
}

/* Linux's change_mtu: the first pool that holds the MTU, and every one
 * before it, become active; -1 if none holds it. */
static int pool_for_mtu(const IbmvethConf *drv, uint32_t mtu)
{
    for (unsigned i = 0; i < drv->npools; i++) {
        if (drv->pool_size[i] >= (uint64_t)mtu + IBMVETH_BUFF_OH) {
            return i;
        }
    }
    return -1;
}

static uint32_t largest_pool(const IbmvethConf *drv)
{
    uint32_t size = 0;

    for (unsigned i = 0; i < drv->npools; i++) {
        size = MAX(size, drv->pool_size[i]);
    }
    return size;
}

/* Whether the driver, reopened with @conf, finds its memory once it
 * has given its own back: tried on the allocator, which is then put
 * back, so that the real close and open allocate exactly as tried. */
static bool reopen_fits(IbmvethGuest *g, const IbmvethConf *conf,
                        GError **errp)
{
    GuestMemState *saved = guest_mem_save();
    IbmvethBus bus = guest_bus(g);
    bool fits = ibmveth_memory_fits(&bus, conf, g->drv, errp);

    guest_mem_restore(saved);
    return fits;
}

bool ibmveth_guest_set_mtu(IbmvethGuest *g, uint32_t mtu, GError **errp)
{
    g_autoptr(GError) err = NULL;
    int last = pool_for_mtu(&g->conf.drv, mtu);
    IbmvethConf want;

    /* The net core checks min_mtu and max_mtu before the driver sees
     * the MTU (dev_validate_mtu), then change_mtu looks for a pool. */
    if (mtu > IBMVETH_MAX_MTU) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': MTU %u is out of "
                    "range %d to %d (Linux's ibmveth: ETH_MAX_MTU 65535 "
                    "less the %d bytes a buffer adds to the MTU)", g->id,
                    mtu, IBMVETH_MIN_MTU, IBMVETH_MAX_MTU, IBMVETH_BUFF_OH);
        return false;
    }
    if (mtu < IBMVETH_MIN_MTU || last < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': MTU %u is out of "
                    "range %d to %u (a buffer holds the MTU + %d bytes, and "
                    "the largest pool's are %u)", g->id, mtu,
                    IBMVETH_MIN_MTU,
                    largest_pool(&g->conf.drv) - IBMVETH_BUFF_OH,
                    IBMVETH_BUFF_OH, largest_pool(&g->conf.drv));
        return false;
    }
    if (!has_driver(g, errp)) {
        return false;
    }
    want = g->conf.drv;
    for (int i = 0; i <= last; i++) {
        want.pool_active[i] = true;
    }
    pause_all();
    /* ibmveth_change_mtu on a down interface: the pools, no close or
     * open; the next up opens with them. */
    if (g->link_down) {
        g->conf.drv = want;
        g->mtu = mtu;
        resume_all();
        return true;
    }
    /* Linux's open would fail and leave the interface down; the model
     * refuses instead, and stays open as it was. */
    if (!reopen_fits(g, &want, errp)) {
        resume_all();
        g_prefix_error(errp, "guest '%s': MTU %u: ", g->id, mtu);
        return false;
    }
    count_lost(g, GUEST_DROP_CLOSED);
    close_driver(g);
    g->conf.drv = want;
    g->mtu = mtu;
    /* Its memory is there (above); what is left to fail is the device. */
    if (!open_driver(g, &err)) {
        g_error("guest %s: reopening for MTU %u: %s", g->id, mtu,
                err->message);
    }
    resume_all();
    return true;
}

typedef bool (*FeatureSetter)(const IbmvethBus *bus, IbmvethConf *conf,
                              bool on, GError **errp);

/* Linux's close and open around one feature's attribute hcalls
 * (ibmveth_set_csum_offload, ibmveth_set_tso), which reopen whether the
 * device took the change or not; the open gets the same memory the
 * close gave back, since the pools are the same.  False, saying what
 * the device answered, when Linux's function returns EIO. */
static bool reopen_for_feature(IbmvethGuest *g, FeatureSetter set, bool on,
                               GError **errp)
{
    IbmvethBus bus = guest_bus(g);
    g_autoptr(GError) err = NULL;
    bool taken;

    /* ibmveth_set_csum_offload and ibmveth_set_tso close and open only
     * a running interface. */
    if (g->link_down) {
        taken = set(&bus, &g->conf.drv, on, errp);
    } else {
        count_lost(g, GUEST_DROP_CLOSED);
        close_driver(g);
        taken = set(&bus, &g->conf.drv, on, errp);
        if (!open_driver(g, &err)) {
            g_error("guest %s: reopening for ethtool -K: %s", g->id,
                    err->message);
        }
    }
    if (!taken) {
        g_prefix_error(errp, "guest '%s': ", g->id);
    }
    return taken;
}

bool ibmveth_guest_set_offloads(IbmvethGuest *g, bool rx_csum, bool tso,
                                GError **errp)
{
    g_autoptr(GError) csum_err = NULL, tso_err = NULL;

    if (!has_driver(g, errp)) {
        return false;
    }
    if ((rx_csum && !g->conf.drv.csum_offered) ||
        (tso && !g->conf.drv.tso_offered)) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': %s is fixed off: "
                    "the device %s, so Linux's ibmveth does not offer it "
                    "(ethtool: Could not change any device features)",
                    g->id, rx_csum && !g->conf.drv.csum_offered ?
                    "rx-checksumming" : "tcp-segmentation-offload",
                    rx_csum && !g->conf.drv.csum_offered ?
                    "tree has no ibm,illan-options" :
                    "reports no LRG_SND_SUPPORT");
        return false;
    }
    pause_all();
    /* ibmveth_set_features: each feature that changes, in this order,
     * the second tried even when the first failed; the first error is
     * the one returned. */
    if (rx_csum != g->conf.drv.rx_csum) {
        reopen_for_feature(g, ibmveth_set_csum_offload, rx_csum, &csum_err);
    }
    if (tso != g->conf.drv.large_send) {
        reopen_for_feature(g, ibmveth_set_tso, tso, &tso_err);
    }
    resume_all();
    if (!tap_offloads(g, errp)) {
        return false;
    }
    if (csum_err) {
        g_propagate_error(errp, g_steal_pointer(&csum_err));
        return false;
    }
    if (tso_err) {
        g_propagate_error(errp, g_steal_pointer(&tso_err));
        return false;
    }
    return true;
}

/*
 * ip link set down: __dev_change_flags calls ndo_set_rx_mode while the
 * interface is still up, then __dev_close runs ibmveth_close; the
 * frames still in the queue are lost, counted closed.  The stack's
 * groups then go with no hcall.
 */
static void link_down(IbmvethGuest *g)
{
    set_rx_mode(g);
    count_lost(g, GUEST_DROP_CLOSED);
    close_driver(g);
    mc_drop_stack(&g->mc);
    g->napi_scheduled = false;
    g->link_down = true;
}

/* ip link set up: __dev_open's ibmveth_open, then the rx mode of an
 * ifup after a close.  A failed open leaves it down, as in Linux. */
static bool link_up(IbmvethGuest *g, GError **errp)
{
    if (!open_driver(g, errp)) {
        g_prefix_error(errp, "guest '%s': ip link set up: ", g->id);
        return false;
    }
    g->link_down = false;
    ifup_rx_mode(g, false);
    return true;
}

bool ibmveth_guest_set_link(IbmvethGuest *g, bool up, GError **errp)
{
    bool ok = true;

    if (!has_driver(g, errp)) {
        return false;
    }
    if (up == !g->link_down) {
        return true;
    }
    pause_all();
    if (up) {
        ok = link_up(g, errp);
    } else {
        link_down(g);
    }
    resume_all();
    return ok;
}

bool ibmveth_guest_link_up(IbmvethGuest *g)
{
    return !g->link_down;
}

/* The admin's addresses on the list. */
static unsigned mc_admin_count(const McList *mc)
{
    unsigned n = 0;

    for (unsigned i = 0; i < mc->n; i++) {
        n += mc->e[i].by_admin;
    }
    return n;
}

bool ibmveth_guest_add_multicast(IbmvethGuest *g, const uint8_t *addr,
                                 GError **errp)
{
    uint64_t mac = mac_to_u64(addr);

    if (!has_driver(g, errp)) {
        return false;
    }
    if (!mc_find(&g->mc, mac) && mc_admin_count(&g->mc) >=
        MC_ADMIN_GROUPS_MAX) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': its multicast list "
                    "holds at most %d addresses added with ip maddr add "
                    "(remove one with x-guest-del-multicast)", g->id,
                    MC_ADMIN_GROUPS_MAX);
        return false;
    }
    /* dev_mc_add_global, and __dev_set_rx_mode even when the address
     * was already listed. */
    pause_all();
    mc_add(&g->mc, mac)->by_admin = true;
    set_rx_mode(g);
    resume_all();
    return true;
}

bool ibmveth_guest_del_multicast(IbmvethGuest *g, const uint8_t *addr,
                                 GError **errp)
{
    McEntry *e = mc_find(&g->mc, mac_to_u64(addr));

    if (!has_driver(g, errp)) {
        return false;
    }
    /* dev_mc_del_global: ENOENT, and no rx mode, for an address the
     * admin did not add, even one the stack holds. */
    if (!e || !e->by_admin) {
        g_autofree char *str = mac_string(addr);

        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': %s was not added to "
                    "its multicast list (ip maddr del: No such file or "
                    "directory)", g->id, str);
        return false;
    }
    pause_all();
    e->by_admin = false;
    mc_prune(&g->mc);
    set_rx_mode(g);
    resume_all();
    return true;
}

void ibmveth_guest_stop(IbmvethGuest *g)
{
    if (!g->thread) {
        return;
    }
    __atomic_store_n(&g->stop, true, __ATOMIC_RELEASE);
    pause_thread_leave(g->pause);
    eventfd_write(g->wake_fd, 1);
    g_thread_join(g->thread);
    g->thread = NULL;
    pause_thread_free(g_steal_pointer(&g->pause));
}

void ibmveth_guest_free(IbmvethGuest *g)
{
    ibmveth_guest_stop(g);
    if (g->drv) {
        close_driver(g);
    }
    if (g->irq_claimed) {
        spapr_irq_claim(g->spapr, g->irq, NULL, NULL);
    }
    if (g->reasm) {
        ip_reasm_free(g->reasm);
    }
    tx_frames_free(g->tx);
    if (g->gro) {
        gro_free(g->gro);
    }
    if (g->tap_fd >= 0) {
        close(g->tap_fd);
    }
    if (g->wake_fd >= 0) {
        close(g->wake_fd);
    }
    g_free(g->frame);
    g_free(g->id);
    g_free(g->dev_id);
    g_free(g->ifname);
    g_free(g);
}

IbmvethDriver *ibmveth_guest_driver(IbmvethGuest *g)
{
    return g->drv;
}

uint32_t ibmveth_guest_unit(IbmvethGuest *g)
{
    return g->conf.drv.unit;
}

uint32_t ibmveth_guest_tx_position(IbmvethGuest *g)
{
    return g->tx ? tx_frames_position(g->tx) : 0;
}

/* On a machine type with QEMU's legacy numbering the device may have
 * taken the stream's interrupt number (its section commits before this
 * guest's); the claim follows it. */
static void follow_device_irq(IbmvethGuest *g)
{
    uint32_t irq = spapr_vio_find_by_reg(spapr_vio_bus(g->spapr),
                                         g->conf.drv.unit)->irq;

    if (irq == g->irq) {
        return;
    }
    spapr_irq_claim(g->spapr, g->irq, NULL, NULL);
    g->irq = irq;
    g->irq_claimed = spapr_irq_claim(g->spapr, irq, on_irq, g);
}

void ibmveth_guest_adopt(IbmvethGuest *g, const IbmvethState *s,
                         uint32_t tx_position)
{
    IbmvethBus bus = guest_bus(g);
    g_autoptr(GError) err = NULL;

    g_assert(!g->drv);
    follow_device_irq(g);
    g->drv = ibmveth_adopt(&bus, s);
    lend_rx_stamps(g);
    /* Whether the source slept or polled is not in the stream: a poll,
     * which ends as every poll does, covers both. */
    g->napi_scheduled = true;
    /* The source's probe set the device's attributes, which came with
     * the device's state. */
    ibmveth_read_features(&bus, &g->conf.drv);
    g->conf.drv.csum_offered = g->illan_options;
    ibmveth_set_large_send(g->drv, g->conf.drv.large_send);
    if (!tap_offloads(g, &err)) {
        g_warning("guest %s: %s", g->id, err->message);
    }
    /* What the source's admin changed (address, MTU) the next open
     * keeps, as the source's would have. */
    g->conf.drv.mac = s->mac;
    g->conf.drv.bulk_add = s->bds_per_add > 1;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        g->conf.drv.pool_active[i] = s->pool[i].active;
    }
    if (g->tx) {
        tx_frames_seek(g->tx, tx_position);
    }
    /* The stream does not carry the multicast list: the stack's groups
     * of an interface that is up, as the source's ifup joined them. */
    g->mc.n = 0;
    mc_add(&g->mc, MC_IPV6_ALL_NODES)->by_stack = true;
    mc_add(&g->mc, MC_IPV4_ALL_HOSTS)->by_stack = true;
    mc_add(&g->mc, MC_SOLICITED_NODE | (s->mac & 0xFFFFFF))->by_stack = true;
    publish_pool_sizes(g);
}

const char *ibmveth_guest_id(IbmvethGuest *g)
{
    return g->id;
}

const char *ibmveth_guest_dev(IbmvethGuest *g)
{
    return g->dev_id;
}

const IbmvethGuestConf *ibmveth_guest_conf(IbmvethGuest *g)
{
    return &g->conf;
}

IbmvethDma ibmveth_guest_dma(IbmvethGuest *g)
{
    return g->drv ? ibmveth_dma(g->drv) : g->conf.drv.dma;
}

void ibmveth_guest_get_stats(IbmvethGuest *g, IbmvethGuestStats *st)
{
    uint64_t *dst = (uint64_t *)st;
    const uint64_t *src = (const uint64_t *)&g->st;

    G_STATIC_ASSERT(sizeof(*st) % sizeof(uint64_t) == 0);
    for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++) {
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    }
}
