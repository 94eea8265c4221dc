/*
 * The net core: the registry of backend types, and the clients that carry
 * frames between a NIC and its netdev.
 *
 * Every NIC and every netdev is a NetClientState; a pair points at each
 * other through @peer.  Received frames cross in batches, so that the NIC
 * is called once per batch, and each frame is counted on both clients under
 * the result the NIC (or the core) gave it.
 *
 * Threads: the registry (add, del, pairing) belongs to the main thread.
 * Frames cross on any thread: the af-xdp I/O threads deliver, several at
 * once, while hcalls send.  The receive counters have one lock, taken
 * once per batch, never around a call into the NIC or the backend.  The
 * transmit counters have one writer at a time, as a NIC's sends come one
 * at a time (net_nic_send): relaxed atomic stores, no lock.  Link states
 * are atomic.
 */
#include "net/net.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Destination MAC, source MAC and EtherType. */
#define ETH_HEADER_LEN 14

struct NetClientState {
    char *name;                     /* the netdev id, or the NIC's name */
    bool is_nic;
    const NetNicOps *nic_ops;       /* set on NICs */
    const NetBackendOps *backend_ops;   /* set on netdevs */
    void *opaque;
    NetClientState *peer;           /* the other side, or NULL */
    bool link_up;
    bool rx_filter_notify;          /* NICs: the next change is reported;
                                       main thread */
    bool rx_filter_posted;          /* NICs, atomic: a change is on its
                                       way to the main thread */
    const NetdevType *type;         /* netdevs: what created it */
    uint64_t created;               /* creation order, across both kinds */
    char *info_str;                 /* "info network" text; main thread */
    NetClientStats stats;
};

static void (*rx_filter_notifier)(NetClientState *nic);
static void (*link_event_notifier)(NetClientState *backend, const char *state,
                                   const char *detail);
static void (*stream_event_notifier)(NetClientState *backend, GVariant *addr);
static uint64_t clients_created;    /* main thread */
static QemuMutex stats_lock = { PTHREAD_MUTEX_INITIALIZER };

static GPtrArray *netdev_types;
/* In creation order; net_foreach_client() walks NICs, then netdevs. */
static GQueue nics = G_QUEUE_INIT;
static GQueue backends = G_QUEUE_INIT;

void netdev_type_register(const NetdevType *type)
{
    if (!netdev_types) {
        netdev_types = g_ptr_array_new();
    }
    g_ptr_array_add(netdev_types, (gpointer)type);
}

static const NetdevType *find_type(const char *name)
{
    for (guint i = 0; netdev_types && i < netdev_types->len; i++) {
        const NetdevType *t = g_ptr_array_index(netdev_types, i);
        if (!strcmp(t->name, name)) {
            return t;
        }
    }
    return NULL;
}

static gint compare_type_names(gconstpointer a, gconstpointer b)
{
    const NetdevType *ta = *(const NetdevType *const *)a;
    const NetdevType *tb = *(const NetdevType *const *)b;

    return strcmp(ta->name, tb->name);
}

bool netdev_type_exists(const char *name)
{
    return find_type(name) != NULL;
}

void net_print_netdev_types(void)
{
    guint n = netdev_types ? netdev_types->len : 0;

    printf("Available netdev backend types:\n");
    if (n == 0) {
        printf("(none in this build yet)\n");
        return;
    }
    /* Constructors register in no fixed order; print in a stable one. */
    g_ptr_array_sort(netdev_types, compare_type_names);
    for (guint i = 0; i < n; i++) {
        const NetdevType *t = g_ptr_array_index(netdev_types, i);
        printf("%-10s %s\n", t->name, t->desc);
    }
}

bool net_print_netdev_help(const char *name)
{
    const NetdevType *t = find_type(name);

    if (!t) {
        return false;
    }
    printf("%s options (id=ID is required):\n%s", t->name,
           t->help ? t->help : "");
    return true;
}

static NetClientState *find_backend(const char *id)
{
    for (GList *l = backends.head; l; l = l->next) {
        NetClientState *nc = l->data;
        if (!strcmp(nc->name, id)) {
            return nc;
        }
    }
    return NULL;
}

static NetClientState *client_new(const char *name, bool is_nic,
                                  void *opaque)
{
    NetClientState *nc = g_new0(NetClientState, 1);

    nc->name = g_strdup(name);
    nc->is_nic = is_nic;
    nc->opaque = opaque;
    nc->link_up = true;
    nc->created = clients_created++;
    return nc;
}

/* What every -netdev must have: a known type, and an id not in use. */
static const NetdevType *check_type_and_id(const QemuOpts *opts,
                                           GError **errp)
{
    const char *type_name = qemu_opt_get(opts, "type");
    const char *id = qemu_opt_get(opts, "id");
    const NetdevType *type;

    if (!type_name || !*type_name) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'type' is missing (see -netdev help)");
        return NULL;
    }
    type = find_type(type_name);
    if (!type) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'type' does not accept value '%s' "
                    "(see -netdev help)", type_name);
        return NULL;
    }
    if (!id || !*id) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'id' is missing");
        return NULL;
    }
    if (net_netdev_exists(id)) {
        g_set_error(errp, ILLAN_ERROR, 0, "Duplicate ID '%s' for netdev", id);
        return NULL;
    }
    return type;
}

bool net_netdev_add(const QemuOpts *opts, GError **errp)
{
    const NetdevType *type = check_type_and_id(opts, errp);
    const char *id = qemu_opt_get(opts, "id");

    if (!type) {
        return false;
    }
    if (!type->create(id, opts, errp)) {
        /* create() registers last, once nothing can fail any more. */
        g_assert(!find_backend(id));
        return false;
    }
    /* A successful create() has registered its backend. */
    find_backend(id)->type = type;
    return true;
}

bool net_netdev_check(const QemuOpts *opts, GError **errp)
{
    const NetdevType *type = check_type_and_id(opts, errp);

    return type && (!type->check || type->check(opts, errp));
}

bool net_netdev_exists(const char *id)
{
    return find_backend(id) != NULL;
}

NetClientState *net_backend_new(const char *id, const NetBackendOps *ops,
                                void *opaque)
{
    NetClientState *nc;

    g_assert(ops && ops->send);
    /* net_netdev_add() refuses duplicate ids before create() runs. */
    g_assert(!find_backend(id));
    nc = client_new(id, false, opaque);
    nc->backend_ops = ops;
    g_queue_push_tail(&backends, nc);
    return nc;
}

static void client_free(NetClientState *nc)
{
    g_free(nc->info_str);
    g_free(nc->name);
    g_free(nc);
}

static void backend_free(NetClientState *nc)
{
    if (nc->peer) {
        nc->peer->peer = NULL;
    }
    if (nc->backend_ops->cleanup) {
        nc->backend_ops->cleanup(nc->opaque);
    }
    client_free(nc);
}

/* NICs belong to their devices and outlive this; they are only unpaired. */
void net_cleanup(void)
{
    NetClientState *nc;

    while ((nc = g_queue_pop_head(&backends))) {
        backend_free(nc);
    }
}

bool net_netdev_del(const char *id, GError **errp)
{
    NetClientState *nc = find_backend(id);

    if (!nc) {
        g_set_error(errp, ILLAN_ERROR, 0, "Device '%s' not found", id);
        return false;
    }
    if (nc->peer) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "netdev '%s' is in use by NIC '%s'", id, nc->peer->name);
        return false;
    }
    g_queue_remove(&backends, nc);
    backend_free(nc);
    return true;
}

const char *net_netdev_type(const char *id)
{
    NetClientState *nc = find_backend(id);

    return nc && nc->type ? nc->type->name : NULL;
}

NetClientState *net_nic_new(const char *name, const char *netdev_id,
                            const NetNicOps *ops, void *opaque,
                            GError **errp)
{
    NetClientState *backend = NULL;
    NetClientState *nic;

    g_assert(name && ops && ops->receive_batch);
    if (netdev_id) {
        backend = find_backend(netdev_id);
        if (!backend) {
            g_set_error(errp, ILLAN_ERROR, 0, "netdev '%s' not found",
                        netdev_id);
            return NULL;
        }
        if (backend->peer) {
            g_set_error(errp, ILLAN_ERROR, 0,
                        "netdev '%s' is already in use by NIC '%s'",
                        netdev_id, backend->peer->name);
            return NULL;
        }
    }
    nic = client_new(name, true, opaque);
    nic->nic_ops = ops;
    nic->rx_filter_notify = true;
    if (backend) {
        nic->peer = backend;
        backend->peer = nic;
    }
    g_queue_push_tail(&nics, nic);
    return nic;
}

void net_nic_free(NetClientState *nic)
{
    if (!nic) {
        return;
    }
    g_assert(nic->is_nic);
    if (nic->peer) {
        nic->peer->peer = NULL;
    }
    g_queue_remove(&nics, nic);
    client_free(nic);
}

const char *net_rx_result_name(NetRxResult result)
{
    static const char *const names[NET_RX__MAX] = {
        [NET_RX_DELIVERED] = "delivered",
        [NET_RX_DROP_NO_NIC] = "no-nic",
        [NET_RX_DROP_LINK_DOWN] = "link-down",
        [NET_RX_DROP_NOT_REGISTERED] = "not-registered",
        [NET_RX_DROP_FILTERED] = "filtered",
        [NET_RX_DROP_NO_BUFFER] = "no-buffer",
        [NET_RX_DROP_DMA_ERROR] = "dma-error",
        [NET_RX_DROP_TOO_SHORT] = "too-short",
        [NET_RX_DROP_VM_STOPPED] = "vm-stopped",
        [NET_RX_DROP_JUMBO_TCP] = "jumbo-tcp",
    };

    g_assert((unsigned)result < NET_RX__MAX);
    return names[result];
}

GVariant *net_rx_dropped_variant(const uint64_t *by_result)
{
    GVariantBuilder b;

    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    for (int r = NET_RX_DELIVERED + 1; r < NET_RX__MAX; r++) {
        g_variant_builder_add(&b, "{sv}", net_rx_result_name(r),
                              g_variant_new_uint64(by_result[r]));
    }
    return g_variant_builder_end(&b);
}

static void count_rx_batch_locked(NetClientState *nc, uint64_t frames,
                                  uint64_t bytes)
{
    nc->stats.rx_batches++;
    nc->stats.rx_frames += frames;
    nc->stats.rx_bytes += bytes;
}

/* Counts @count frames under @result on the backend and, if any, its NIC. */
static void count_rx_result_locked(NetClientState *backend,
                                   NetRxResult result, uint64_t count)
{
    backend->stats.rx_results[result] += count;
    if (backend->peer) {
        backend->peer->stats.rx_results[result] += count;
    }
}

/* What one batch did, counted under the lock in one go. */
typedef struct RxTally {
    uint64_t bytes;
    uint64_t by_result[NET_RX__MAX];
} RxTally;

static void count_rx(NetClientState *backend, unsigned n,
                     const RxTally *tally)
{
    qemu_mutex_lock(&stats_lock);
    count_rx_batch_locked(backend, n, tally->bytes);
    if (backend->peer) {
        count_rx_batch_locked(backend->peer, n, tally->bytes);
    }
    for (unsigned r = 0; r < NET_RX__MAX; r++) {
        if (tally->by_result[r]) {
            count_rx_result_locked(backend, r, tally->by_result[r]);
        }
    }
    qemu_mutex_unlock(&stats_lock);
}

static uint64_t frames_bytes(const NetFrame *frames, unsigned n)
{
    uint64_t bytes = 0;

    for (unsigned i = 0; i < n; i++) {
        bytes += frames[i].len;
    }
    return bytes;
}

/* A batch that ends a run of NET_RX_MORE ones but gives the NIC nothing
 * still ends the run there. */
static void end_rx_run(NetClientState *nic, unsigned flags)
{
    if (!(flags & NET_RX_MORE) && nic->nic_ops->rx_run_end) {
        nic->nic_ops->rx_run_end(nic->opaque);
    }
}

/* Frames the net core dropped before the NIC saw them: buffers it lent
 * are its own again. */
static void unlend(NetClientState *nic, const NetFrame *frames, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (frames[i].lent && nic->nic_ops->rx_unlend) {
            nic->nic_ops->rx_unlend(nic->opaque, &frames[i], 1);
        }
    }
}

/*
 * Hands the frames long enough to carry an Ethernet header to the NIC, in
 * one call, and tallies the result of every frame it took.  Returns how
 * many of @frames that covers: all of them, or those before the first
 * frame the NIC held.  Short frames are dropped as they come, so a short
 * frame after a held one is held with it.
 */
static unsigned deliver_to_nic(NetClientState *nic, const NetFrame *frames,
                               unsigned n, unsigned flags, NetRxStamp *stamp,
                               RxTally *tally)
{
    NetFrame passed[NET_BATCH_MAX];
    unsigned index[NET_BATCH_MAX];
    NetRxResult results[NET_BATCH_MAX];
    unsigned n_passed = 0, taken, covered;

    for (unsigned i = 0; i < n; i++) {
        if (frames[i].len >= ETH_HEADER_LEN) {
            index[n_passed] = i;
            passed[n_passed++] = frames[i];
        }
    }
    /* The stamp is the last frame's: it goes only with that frame. */
    if (!n_passed || index[n_passed - 1] != n - 1) {
        stamp = NULL;
    }
    if (n_passed) {
        taken = nic->nic_ops->receive_batch(nic->opaque, passed, n_passed,
                                            flags, stamp, results);
    } else {
        taken = 0;
        end_rx_run(nic, flags);
    }
    g_assert(taken <= n_passed &&
             ((flags & NET_RX_MAY_HOLD) || taken == n_passed));
    covered = taken < n_passed ? index[taken] : n;
    for (unsigned i = 0; i < taken; i++) {
        g_assert((unsigned)results[i] < NET_RX__MAX);
        tally->by_result[results[i]]++;
    }
    tally->by_result[NET_RX_DROP_TOO_SHORT] += covered - taken;
    for (unsigned i = 0; i < covered; i++) {
        if (frames[i].len < ETH_HEADER_LEN) {
            unlend(nic, &frames[i], 1);
        }
    }
    tally->bytes = frames_bytes(frames, covered);
    return covered;
}

uint64_t net_backend_rx_error(NetClientState *backend)
{
    uint64_t n;

    qemu_mutex_lock(&stats_lock);
    n = ++backend->stats.rx_errors;
    qemu_mutex_unlock(&stats_lock);
    return n;
}

void net_nic_rx_lendable(NetClientState *nic, GuestRam *ram)
{
    NetClientState *backend = nic->peer;

    if (backend && backend->backend_ops->rx_lendable) {
        backend->backend_ops->rx_lendable(backend->opaque, ram);
    }
}

void net_nic_rx_reclaim(NetClientState *nic)
{
    NetClientState *backend = nic->peer;

    if (backend && backend->backend_ops->rx_reclaim) {
        backend->backend_ops->rx_reclaim(backend->opaque);
    }
}

unsigned net_backend_rx_lend(NetClientState *backend, uint64_t *addrs,
                             unsigned max, unsigned keep,
                             NetLendOutlook *outlook)
{
    NetClientState *nic = backend->peer;

    *outlook = NET_LEND_OFF;
    if (!nic || !nic->nic_ops->rx_lend) {
        return 0;
    }
    return nic->nic_ops->rx_lend(nic->opaque, addrs, max, keep, outlook);
}

void net_backend_rx_lent_lost(NetClientState *backend)
{
    NetClientState *nic = backend->peer;

    if (nic && nic->nic_ops->rx_lent_lost) {
        nic->nic_ops->rx_lent_lost(nic->opaque);
    }
}

void net_nic_rx_ready(NetClientState *nic)
{
    NetClientState *backend = nic->peer;

    if (backend && backend->backend_ops->rx_ready) {
        backend->backend_ops->rx_ready(backend->opaque);
    }
}

static unsigned deliver(NetClientState *backend, const NetFrame *frames,
                        unsigned n, unsigned flags, NetRxStamp *stamp)
{
    NetClientState *nic = backend->peer;
    RxTally tally = { 0 };
    unsigned taken = n;

    g_assert(!backend->is_nic);
    g_assert(n <= NET_BATCH_MAX);
    if (n == 0 || !nic || !net_client_link_up(backend) ||
        !net_client_link_up(nic)) {
        tally.by_result[nic ? NET_RX_DROP_LINK_DOWN : NET_RX_DROP_NO_NIC] = n;
        tally.bytes = frames_bytes(frames, n);
        if (nic) {
            unlend(nic, frames, n);
            end_rx_run(nic, flags);
        }
    } else {
        taken = deliver_to_nic(nic, frames, n, flags, stamp, &tally);
    }
    if (taken) {
        count_rx(backend, taken, &tally);
    }
    return taken;
}

void net_backend_deliver(NetClientState *backend, const NetFrame *frames,
                         unsigned n)
{
    deliver(backend, frames, n, 0, NULL);
}

unsigned net_backend_deliver_or_hold(NetClientState *backend,
                                     const NetFrame *frames, unsigned n,
                                     NetRxStamp *stamp, bool more)
{
    return deliver(backend, frames, n,
                   NET_RX_MAY_HOLD | (more ? NET_RX_MORE : 0), stamp);
}

typedef enum TxOutcome {
    TX_SENT,
    TX_ERROR,
    TX_DROPPED,
} TxOutcome;

/* A transmit counter: one writer at a time (see net_nic_send). */
#define TX_ADD(field, n) qemu_counter_add(&(field), (n))

static void count_tx_on(NetClientState *nc, TxOutcome outcome, size_t len)
{
    switch (outcome) {
    case TX_SENT:
        TX_ADD(nc->stats.tx_frames, 1);
        TX_ADD(nc->stats.tx_bytes, len);
        break;
    case TX_ERROR:
        TX_ADD(nc->stats.tx_errors, 1);
        break;
    case TX_DROPPED:
        TX_ADD(nc->stats.tx_dropped, 1);
        break;
    }
}

/* Counts on the NIC and, if any, its netdev, so both balance. */
static bool count_tx(NetClientState *nic, TxOutcome outcome, size_t len)
{
    count_tx_on(nic, outcome, len);
    if (nic->peer) {
        count_tx_on(nic->peer, outcome, len);
    }
    return outcome == TX_SENT;
}

bool net_nic_send(NetClientState *nic, const uint8_t *data, size_t len)
{
    NetClientState *backend = nic->peer;

    g_assert(nic->is_nic);
    if (!backend || !net_client_link_up(nic) ||
        !net_client_link_up(backend)) {
        return count_tx(nic, TX_DROPPED, len);
    }
    if (len == 0 || len > NET_FRAME_MAX ||
        !backend->backend_ops->send(backend->opaque, data, len)) {
        return count_tx(nic, TX_ERROR, len);
    }
    return count_tx(nic, TX_SENT, len);
}

static void hold_sends(NetClientState *nic, bool hold)
{
    if (nic->nic_ops->hold_sends) {
        nic->nic_ops->hold_sends(nic->opaque, hold);
    }
}

void net_backend_hold_sends(NetClientState *backend, bool hold)
{
    g_assert(!backend->is_nic);
    if (backend->peer) {
        hold_sends(backend->peer, hold);
    }
}

void net_nic_send_announce(NetClientState *nic, const uint8_t *frame,
                           size_t len)
{
    g_assert(nic->is_nic);
    hold_sends(nic, true);
    net_nic_send(nic, frame, len);
    hold_sends(nic, false);
}

bool net_nic_send_in_place(NetClientState *nic, const uint8_t *data,
                           size_t len)
{
    NetClientState *backend = nic->peer;

    g_assert(nic->is_nic);
    if (!backend || !backend->backend_ops->send_in_place ||
        !net_client_link_up(nic) || !net_client_link_up(backend) ||
        len == 0 || len > NET_FRAME_MAX ||
        !backend->backend_ops->send_in_place(backend->opaque, data, len)) {
        return false;
    }
    return count_tx(nic, TX_SENT, len);
}

const char *net_client_name(const NetClientState *nc)
{
    return nc->name;
}

void net_client_set_info_str(NetClientState *nc, const char *fmt, ...)
{
    va_list ap;

    g_free(nc->info_str);
    va_start(ap, fmt);
    nc->info_str = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

const char *net_client_info_str(const NetClientState *nc)
{
    return nc->info_str ? nc->info_str : "";
}

bool net_client_link_up(const NetClientState *nc)
{
    return __atomic_load_n(&nc->link_up, __ATOMIC_ACQUIRE);
}

void net_client_set_link(NetClientState *nc, bool up)
{
    __atomic_store_n(&nc->link_up, up, __ATOMIC_RELEASE);
}

void net_client_get_stats(const NetClientState *nc, NetClientStats *stats)
{
    qemu_mutex_lock(&stats_lock);
    stats->rx_frames = nc->stats.rx_frames;
    stats->rx_bytes = nc->stats.rx_bytes;
    stats->rx_batches = nc->stats.rx_batches;
    memcpy(stats->rx_results, nc->stats.rx_results,
           sizeof(stats->rx_results));
    stats->rx_errors = nc->stats.rx_errors;
    qemu_mutex_unlock(&stats_lock);
    stats->tx_frames = __atomic_load_n(&nc->stats.tx_frames,
                                       __ATOMIC_RELAXED);
    stats->tx_bytes = __atomic_load_n(&nc->stats.tx_bytes, __ATOMIC_RELAXED);
    stats->tx_errors = __atomic_load_n(&nc->stats.tx_errors,
                                       __ATOMIC_RELAXED);
    stats->tx_dropped = __atomic_load_n(&nc->stats.tx_dropped,
                                        __ATOMIC_RELAXED);
}

void net_backend_link_event(NetClientState *backend, const char *state,
                            const char *detail)
{
    g_assert(!backend->is_nic);
    if (link_event_notifier) {
        link_event_notifier(backend, state, detail);
    }
}

void net_set_link_event_notifier(void (*fn)(NetClientState *backend,
                                            const char *state,
                                            const char *detail))
{
    link_event_notifier = fn;
}

void net_backend_stream_event(NetClientState *backend, GVariant *addr)
{
    g_autoptr(GVariant) held = addr ? g_variant_ref_sink(addr) : NULL;

    g_assert(!backend->is_nic);
    if (stream_event_notifier) {
        stream_event_notifier(backend, held);
    }
}

void net_set_stream_event_notifier(void (*fn)(NetClientState *backend,
                                              GVariant *addr))
{
    stream_event_notifier = fn;
}

GVariant *net_backend_query(NetClientState *backend)
{
    g_assert(!backend->is_nic);
    if (!backend->backend_ops->query) {
        return NULL;
    }
    return g_variant_ref_sink(backend->backend_ops->query(backend->opaque));
}

const char *net_nic_model(const NetClientState *nic)
{
    g_assert(nic->is_nic);
    return nic->nic_ops->model;
}

GVariant *net_nic_query(NetClientState *nic)
{
    g_assert(nic->is_nic);
    if (!nic->nic_ops->query) {
        return NULL;
    }
    return g_variant_ref_sink(nic->nic_ops->query(nic->opaque));
}

GVariant *net_nic_query_rx_filter(NetClientState *nic)
{
    g_assert(nic->is_nic);
    if (!nic->nic_ops->query_rx_filter) {
        return NULL;
    }
    return g_variant_ref_sink(nic->nic_ops->query_rx_filter(nic->opaque));
}

bool net_nic_get_mac(NetClientState *nic, uint8_t mac[6])
{
    g_assert(nic->is_nic);
    if (!nic->nic_ops->get_mac) {
        return false;
    }
    nic->nic_ops->get_mac(nic->opaque, mac);
    return true;
}

static void rx_filter_changed_on_main(void *opaque)
{
    NetClientState *nic = opaque;

    __atomic_store_n(&nic->rx_filter_posted, false, __ATOMIC_RELEASE);
    if (nic->rx_filter_notify && rx_filter_notifier) {
        nic->rx_filter_notify = false;
        rx_filter_notifier(nic);
    }
}

/* Changes made on a vCPU thread travel to the main thread; one posted at
 * a time is enough, since the notifier hears of a change only once. */
void net_nic_rx_filter_changed(NetClientState *nic)
{
    if (!__atomic_exchange_n(&nic->rx_filter_posted, true,
                             __ATOMIC_ACQ_REL)) {
        main_loop_run_or_post(rx_filter_changed_on_main, nic);
    }
}

void net_nic_rx_filter_rearm(NetClientState *nic)
{
    nic->rx_filter_notify = true;
}

void net_set_rx_filter_notifier(void (*fn)(NetClientState *nic))
{
    rx_filter_notifier = fn;
}

NetClientState *net_client_peer(const NetClientState *nc)
{
    return nc->peer;
}

void net_foreach_client(void (*fn)(NetClientState *nc, bool is_nic,
                                   void *opaque), void *opaque)
{
    for (GList *l = nics.head; l; l = l->next) {
        fn(l->data, true, opaque);
    }
    for (GList *l = backends.head; l; l = l->next) {
        fn(l->data, false, opaque);
    }
}

/* Merges the two lists, each already in creation order. */
void net_foreach_client_created(void (*fn)(NetClientState *nc, bool is_nic,
                                           void *opaque), void *opaque)
{
    GList *n = nics.head, *b = backends.head;

    while (n || b) {
        NetClientState *nic = n ? n->data : NULL;
        NetClientState *backend = b ? b->data : NULL;

        if (nic && (!backend || nic->created < backend->created)) {
            fn(nic, true, opaque);
            n = n->next;
        } else {
            fn(backend, false, opaque);
            b = b->next;
        }
    }
}
