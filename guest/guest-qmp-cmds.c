/*
 * The built-in guests' QMP commands: x-query-guest-stats, what each guest
 * saw and did; x-guest-set-mac, x-guest-set-mtu and x-guest-set-link,
 * what "ip link set" does to a Linux guest's interface, and
 * x-guest-add-multicast and x-guest-del-multicast, what "ip maddr"
 * does, only while the machine runs.
 */
#include "guest/guest.h"
#include "guest/guest-mem.h"
#include "hw/qdev.h"
#include "migration/migration.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"
#include "qemu/runstate.h"

#include <string.h>

static JsonObject *guest_pool_frames(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        g_autofree char *key = g_strdup_printf("%" G_GUINT64_FORMAT,
                                               st->pool_size[i]);

        if (st->pool_size[i]) {
            json_object_set_int_member(o, key, st->frames_in_pool[i]);
        }
    }
    return o;
}

static JsonObject *guest_memory(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_int_member(o, "charged-bytes", st->charged_bytes);
    json_object_set_int_member(o, "peak-bytes", st->charged_peak_bytes);
    return o;
}

static JsonObject *guest_reasm(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_int_member(o, "fragments", st->fragments);
    json_object_set_int_member(o, "fragments-refused", st->fragments_refused);
    json_object_set_int_member(o, "datagrams-ok", st->datagrams_ok);
    json_object_set_int_member(o, "datagrams-failed", st->datagrams_failed);
    json_object_set_int_member(o, "timeouts",
                               st->drops[GUEST_DROP_REASM_TIMEOUT]);
    return o;
}

static JsonObject *guest_drops(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    for (GuestDrop d = 0; d < GUEST_DROP__MAX; d++) {
        json_object_set_int_member(o, guest_drop_name(d), st->drops[d]);
    }
    return o;
}

static JsonObject *guest_hcalls(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    for (GuestHcall h = 0; h < GUEST_HCALL__MAX; h++) {
        json_object_set_int_member(o, guest_hcall_name(h), st->hcalls[h]);
    }
    return o;
}

/* The TCE hcalls of the vCPU's receive and transmit paths (opens and
 * closes apart), in all and per frame. */
static JsonObject *guest_tce_hcalls(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_int_member(o, "rx", st->tce_hcalls[GUEST_PATH_RX]);
    json_object_set_int_member(o, "tx", st->tce_hcalls[GUEST_PATH_TX]);
    return o;
}

static double per_frame(uint64_t n, uint64_t frames)
{
    return frames ? (double)n / frames : 0;
}

static JsonObject *guest_tce_hcalls_per_frame(const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_double_member(o, "rx", per_frame(
        st->tce_hcalls[GUEST_PATH_RX], st->rx_frames));
    json_object_set_double_member(o, "tx", per_frame(
        st->tce_hcalls[GUEST_PATH_TX], st->tx_frames));
    return o;
}

/* What was negotiated with the device, and what it carried. */
static JsonObject *guest_offloads(const IbmvethGuestConf *c,
                                  const IbmvethGuestStats *st)
{
    JsonObject *o = json_object_new();

    json_object_set_boolean_member(o, "rx-csum", c->drv.rx_csum);
    json_object_set_boolean_member(o, "large-send", c->drv.large_send);
    json_object_set_int_member(o, "rx-csum-good", st->rx_csum_good);
    json_object_set_boolean_member(o, "csum-audit", c->csum_audit);
    json_object_set_int_member(o, "rx-csum-audited", st->rx_csum_audited);
    json_object_set_int_member(o, "rx-csum-lied", st->rx_csum_lied);
    json_object_set_int_member(o, "rx-large", st->rx_large);
    json_object_set_int_member(o, "tx-csum-offloaded", st->tx_csum_offloaded);
    json_object_set_int_member(o, "tx-large-sends", st->tx_large_sends);
    json_object_set_int_member(o, "gro-packets", st->gro_packets);
    json_object_set_int_member(o, "gro-merged", st->gro_merged);
    json_object_set_int_member(o, "gro-csum-checked", st->gro_csum_checked);
    return o;
}

/* The same shape as an af-xdp queue's "rx-latency". */
static JsonNode *guest_rx_latency(const IbmvethGuestStats *st)
{
    g_autoptr(GVariant) v =
        g_variant_ref_sink(latency_histogram_variant(&st->rx_latency));

    return json_gvariant_serialize(v);
}

static void add_guest_stats(IbmvethGuest *g, void *opaque)
{
    const IbmvethGuestConf *c = ibmveth_guest_conf(g);
    JsonObject *o = json_object_new();
    IbmvethGuestStats st;

    ibmveth_guest_get_stats(g, &st);
    json_object_set_string_member(o, "id", ibmveth_guest_id(g));
    json_object_set_string_member(o, "dev", ibmveth_guest_dev(g));
    json_object_set_string_member(o, "fwd", guest_fwd_name(c->fwd));
    json_object_set_string_member(o, "poll", c->spin ? "spin" : "irq");
    json_object_set_string_member(o, "dma",
                                  ibmveth_guest_dma(g) == IBMVETH_DMA_POOL ?
                                  "pool" : "per-buffer");
    json_object_set_int_member(o, "rx-frames", st.rx_frames);
    json_object_set_int_member(o, "rx-bytes", st.rx_bytes);
    json_object_set_int_member(o, "tx-frames", st.tx_frames);
    json_object_set_int_member(o, "tx-bytes", st.tx_bytes);
    json_object_set_int_member(o, "tap-rx-frames", st.tap_rx_frames);
    json_object_set_int_member(o, "rx-invalid",
                               st.drops[GUEST_DROP_RX_INVALID]);
    json_object_set_int_member(o, "tx-failed", st.drops[GUEST_DROP_TX_FAILED]);
    json_object_set_int_member(o, "replenish-add-failures", st.add_failures);
    json_object_set_int_member(o, "rx-no-buffer", st.rx_no_buffer);
    json_object_set_int_member(o, "wakeups", st.wakeups);
    json_object_set_int_member(o, "woken-late", st.woken_late);
    json_object_set_int_member(o, "resets", st.resets);
    json_object_set_int_member(o, "adapter-resets", st.adapter_resets);
    json_object_set_int_member(o, "napi-polls", st.napi_polls);
    json_object_set_object_member(o, "offloads", guest_offloads(c, &st));
    json_object_set_object_member(o, "frames-by-buffer-size",
                                  guest_pool_frames(&st));
    json_object_set_int_member(o, "buffer-bytes", st.buffer_bytes);
    json_object_set_object_member(o, "memory", guest_memory(&st));
    json_object_set_object_member(o, "reasm", guest_reasm(&st));
    json_object_set_object_member(o, "drops", guest_drops(&st));
    json_object_set_object_member(o, "hcalls", guest_hcalls(&st));
    json_object_set_object_member(o, "tce-hcalls", guest_tce_hcalls(&st));
    json_object_set_object_member(o, "tce-hcalls-per-frame",
                                  guest_tce_hcalls_per_frame(&st));
    json_object_set_int_member(o, "cpu-ns", st.cpu_ns);
    json_object_set_member(o, "rx-latency", guest_rx_latency(&st));
    json_array_add_object_element(opaque, o);
}

/* The guest memory the guests' drivers share. */
static JsonObject *driver_memory(void)
{
    JsonObject *o = json_object_new();

    json_object_set_int_member(o, "in-use-bytes", guest_mem_in_use());
    json_object_set_int_member(o, "peak-bytes", guest_mem_peak());
    json_object_set_int_member(o, "size-bytes", guest_mem_size());
    json_object_set_int_member(o, "refused-frees", guest_mem_refused_frees());
    return o;
}

static JsonNode *query_guest_stats(JsonObject *args, QmpError *err)
{
    JsonObject *ret = json_object_new();
    JsonArray *list = json_array_new();

    (void)args, (void)err;
    guest_foreach(add_guest_stats, list);
    json_object_set_array_member(ret, "guests", list);
    json_object_set_object_member(ret, "driver-memory", driver_memory());
    return qmp_return_object(ret);
}

typedef struct GuestLookup {
    const char *id;
    IbmvethGuest *found;
} GuestLookup;

static void match_id(IbmvethGuest *g, void *opaque)
{
    GuestLookup *l = opaque;

    if (!strcmp(ibmveth_guest_id(g), l->id)) {
        l->found = g;
    }
}

static IbmvethGuest *find_guest(JsonObject *args, QmpError *err)
{
    GuestLookup l = { json_object_get_string_member(args, "id"), NULL };

    guest_foreach(match_id, &l);
    if (!l.found) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "no built-in guest '%s' (see "
                      "x-query-guest-stats)", l.id);
    }
    return l.found;
}

/* A guest acts only while its vCPU may run.  In every other state the
 * machine is stopped, and in inmigrate, finish-migrate and postmigrate
 * its RAM and device state are the migration's: a change there would
 * reach one side of it and not the other, or be overwritten. */
static bool guest_may_act(IbmvethGuest *g, const char *cmd, QmpError *err)
{
    if (runstate_is_running()) {
        return true;
    }
    qmp_error_set(err, QMP_ERROR_GENERIC, "guest '%s' is not running "
                  "(status: %s): %s acts only while the machine runs",
                  ibmveth_guest_id(g), runstate_name(runstate_get()), cmd);
    return false;
}

static JsonNode *guest_result(bool ok, GError *gerr, QmpError *err)
{
    if (!ok) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
        g_error_free(gerr);
        return NULL;
    }
    return qmp_return_empty();
}

static JsonNode *guest_set_mtu(JsonObject *args, QmpError *err)
{
    IbmvethGuest *g = find_guest(args, err);
    int64_t mtu = json_object_get_int_member(args, "mtu");
    GError *gerr = NULL;
    bool ok;

    if (!g) {
        return NULL;
    }
    if (mtu < 0 || mtu > UINT32_MAX) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter 'mtu' expects an "
                      "MTU in bytes, not %" G_GINT64_FORMAT, mtu);
        return NULL;
    }
    if (!guest_may_act(g, "x-guest-set-mtu", err)) {
        return NULL;
    }
    ok = ibmveth_guest_set_mtu(g, mtu, &gerr);
    return guest_result(ok, gerr, err);
}

static JsonNode *guest_set_offloads(JsonObject *args, QmpError *err)
{
    IbmvethGuest *g = find_guest(args, err);
    bool rx_csum = json_object_get_boolean_member(args, "rx-csum");
    bool tso = json_object_get_boolean_member(args, "tso");
    GError *gerr = NULL;
    bool ok;

    if (!g || !guest_may_act(g, "x-guest-set-offloads", err)) {
        return NULL;
    }
    ok = ibmveth_guest_set_offloads(g, rx_csum, tso, &gerr);
    return guest_result(ok, gerr, err);
}

static JsonNode *guest_set_link(JsonObject *args, QmpError *err)
{
    IbmvethGuest *g = find_guest(args, err);
    bool up = json_object_get_boolean_member(args, "up");
    GError *gerr = NULL;
    bool ok;

    if (!g || !guest_may_act(g, "x-guest-set-link", err)) {
        return NULL;
    }
    /* Its switchover would find no driver to save. */
    if (!up && migration_in_progress()) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "guest '%s': a migration is "
                      "in progress: bring the guest down after it, or "
                      "cancel it (migrate_cancel)", ibmveth_guest_id(g));
        return NULL;
    }
    ok = ibmveth_guest_set_link(g, up, &gerr);
    return guest_result(ok, gerr, err);
}

typedef bool (*MacOp)(IbmvethGuest *g, const uint8_t *addr, GError **errp);

/* x-guest-set-mac, x-guest-add-multicast and x-guest-del-multicast: a
 * guest, a MAC, and @op on them. */
static JsonNode *guest_mac_command(JsonObject *args, const char *cmd,
                                   MacOp op, QmpError *err)
{
    IbmvethGuest *g = find_guest(args, err);
    const char *str = json_object_get_string_member(args, "mac");
    GError *gerr = NULL;
    MACAddr mac;
    bool ok;

    if (!g) {
        return NULL;
    }
    if (!mac_parse(str, &mac)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter 'mac' expects a "
                      "MAC address, not '%s'", str);
        return NULL;
    }
    if (!guest_may_act(g, cmd, err)) {
        return NULL;
    }
    ok = op(g, mac.a, &gerr);
    return guest_result(ok, gerr, err);
}

static JsonNode *guest_set_mac(JsonObject *args, QmpError *err)
{
    return guest_mac_command(args, "x-guest-set-mac", ibmveth_guest_set_mac,
                             err);
}

static JsonNode *guest_add_multicast(JsonObject *args, QmpError *err)
{
    return guest_mac_command(args, "x-guest-add-multicast",
                             ibmveth_guest_add_multicast, err);
}

static JsonNode *guest_del_multicast(JsonObject *args, QmpError *err)
{
    return guest_mac_command(args, "x-guest-del-multicast",
                             ibmveth_guest_del_multicast, err);
}

static const QmpArg set_mac_args[] = {
    { "id", QMP_ARG_STR, false }, { "mac", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg set_mtu_args[] = {
    { "id", QMP_ARG_STR, false }, { "mtu", QMP_ARG_INT, false },
    { NULL, 0, false }
};

static const QmpArg set_offloads_args[] = {
    { "id", QMP_ARG_STR, false }, { "rx-csum", QMP_ARG_BOOL, false },
    { "tso", QMP_ARG_BOOL, false }, { NULL, 0, false }
};

static const QmpArg set_link_args[] = {
    { "id", QMP_ARG_STR, false }, { "up", QMP_ARG_BOOL, false },
    { NULL, 0, false }
};

static const QmpCommand guest_commands[] = {
    { "x-query-guest-stats", NULL, false, query_guest_stats, false },
    { "x-guest-set-mac", set_mac_args, false, guest_set_mac, false },
    { "x-guest-set-mtu", set_mtu_args, false, guest_set_mtu, false },
    { "x-guest-set-offloads", set_offloads_args, false, guest_set_offloads,
      false },
    { "x-guest-set-link", set_link_args, false, guest_set_link, false },
    { "x-guest-add-multicast", set_mac_args, false, guest_add_multicast,
      false },
    { "x-guest-del-multicast", set_mac_args, false, guest_del_multicast,
      false },
};

static void guest_commands_register(void)
{
    qmp_register_commands(guest_commands, G_N_ELEMENTS(guest_commands));
}
illan_init(guest_commands_register)
