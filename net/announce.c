/*
 * Self-announce (net/announce.h).  Each run is a GLib timeout on the main
 * loop's real-time clock: the virtual clock stands still unless qtest
 * moves it, and a switch lives in real time.  A frame goes out through
 * the NIC's netdev as a guest's would, counted as the NIC's transmit.
 */
#include "net/announce.h"
#include "net/net.h"
#include "qemu/option.h"

#include <string.h>

#define ARP_HTYPE_ETH       1
#define ARP_PTYPE_IPV4      0x0800
#define ARP_OP_REQUEST_REV  3

typedef struct AnnounceRun {
    AnnounceParameters p;
    int64_t rounds_left;
    guint source;           /* the pending timeout, or 0 */
} AnnounceRun;

static GHashTable *named_runs;          /* id -> AnnounceRun */
static AnnounceRun *migration_run;

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

/* The RARP request QEMU sends for @mac into @buf; its length. */
static size_t announce_rarp_frame(uint8_t buf[ANNOUNCE_FRAME_LEN],
                           const uint8_t mac[6])
{
    memset(buf, 0, ANNOUNCE_FRAME_LEN);
    memset(buf, 0xff, 6);                   /* to everyone */
    memcpy(buf + 6, mac, 6);
    put_be16(buf + 12, ANNOUNCE_ETHERTYPE);
    put_be16(buf + 14, ARP_HTYPE_ETH);
    put_be16(buf + 16, ARP_PTYPE_IPV4);
    buf[18] = 6;                            /* hardware address length */
    buf[19] = 4;                            /* protocol address length */
    put_be16(buf + 20, ARP_OP_REQUEST_REV);
    memcpy(buf + 22, mac, 6);               /* sender: us, no IP */
    memcpy(buf + 32, mac, 6);               /* target: us, no IP */
    return ANNOUNCE_FRAME_LEN;
}

static bool wanted(const AnnounceRun *run, const char *name)
{
    return !run->p.interfaces ||
           g_strv_contains((const char *const *)run->p.interfaces, name);
}

static void announce_nic(NetClientState *nc, bool is_nic, void *opaque)
{
    uint8_t frame[ANNOUNCE_FRAME_LEN], mac[6];

    if (is_nic && wanted(opaque, net_client_name(nc)) &&
        net_nic_get_mac(nc, mac)) {
        net_nic_send_announce(nc, frame, announce_rarp_frame(frame, mac));
    }
}

static void run_free(AnnounceRun *run)
{
    if (run->source) {
        g_source_remove(run->source);
    }
    g_strfreev(run->p.interfaces);
    g_free(run->p.id);
    g_free(run);
}

/* QEMU's spacing: initial, then a step longer each round, capped. */
static guint next_delay(const AnnounceRun *run)
{
    int64_t ms = run->p.initial +
                 (run->p.rounds - run->rounds_left - 1) * run->p.step;

    return ms < 0 || ms > run->p.max ? run->p.max : ms;
}

static gboolean round_due(gpointer opaque);

/* One round now; then the next is scheduled, or the run ends. */
static void one_round(AnnounceRun *run)
{
    net_foreach_client(announce_nic, run);
    if (--run->rounds_left > 0) {
        run->source = g_timeout_add(next_delay(run), round_due, run);
        return;
    }
    run->source = 0;
    if (run == migration_run) {
        g_clear_pointer(&migration_run, run_free);
    } else {
        g_hash_table_remove(named_runs, run->p.id);
    }
}

static gboolean round_due(gpointer opaque)
{
    AnnounceRun *run = opaque;

    run->source = 0;
    one_round(run);
    return G_SOURCE_REMOVE;
}

static bool in_range(const char *name, int64_t v, int64_t max, GError **errp)
{
    if (v < 0 || v > max) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter '%s' expects a value "
                    "between 0 and %" G_GINT64_FORMAT, name, max);
        return false;
    }
    return true;
}

/* QEMU's limits for the migration's announce parameters. */
static bool params_ok(const AnnounceParameters *p, GError **errp)
{
    return in_range("initial", p->initial, 100000, errp) &&
           in_range("max", p->max, 100000, errp) &&
           in_range("rounds", p->rounds, 1000, errp) &&
           in_range("step", p->step, 10000, errp);
}

static AnnounceRun *run_new(const AnnounceParameters *p)
{
    AnnounceRun *run = g_new0(AnnounceRun, 1);

    run->p = *p;
    run->p.interfaces = g_strdupv(p->interfaces);
    run->p.id = g_strdup(p->id ? p->id : "");
    run->rounds_left = p->rounds;
    return run;
}

bool announce_self(const AnnounceParameters *p, GError **errp)
{
    AnnounceRun *run;

    if (!params_ok(p, errp)) {
        return false;
    }
    if (!named_runs) {
        named_runs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)run_free);
    }
    run = run_new(p);
    /* The key is the run's own id, freed with it. */
    g_hash_table_replace(named_runs, run->p.id, run);
    if (run->rounds_left > 0) {
        one_round(run);
    } else {
        g_hash_table_remove(named_runs, run->p.id);
    }
    return true;
}

void announce_after_migration(void *opaque)
{
    AnnounceParameters defaults = ANNOUNCE_DEFAULTS;

    (void)opaque;
    g_clear_pointer(&migration_run, run_free);
    migration_run = run_new(&defaults);
    one_round(migration_run);
}

void announce_cleanup(void)
{
    g_clear_pointer(&migration_run, run_free);
    g_clear_pointer(&named_runs, g_hash_table_destroy);
}
