/*
 * -guest: option parsing and the list of built-in guests (see
 * guest/guest.h).
 */
#include "guest/guest.h"

#include <stdio.h>
#include <string.h>

#include "guest/guest-mem.h"
#include "guest/tx-frames.h"
#include "hw/qdev.h"
#include "qemu/option.h"

static GPtrArray *guests;       /* IbmvethGuest * */

static const char ibmveth_help[] =
    "dev=ID              the spapr-vlan it drives (required)\n"
    "id=ID               name for x-query-guest-stats (default guestN)\n"
    "fwd=rxonly|txonly|macswap|tap  what it does with frames (default rxonly)\n"
    "ifname=NAME         fwd=tap: the host TAP device to bridge to\n"
    "poll=irq|spin       sleep until the interrupt (default), or keep polling\n"
    "budget=N            NAPI weight, 1..256 (default 16, Linux's)\n"
    "size=N|mix          fwd=txonly: frame bytes without FCS, 60..65535, or\n"
    "                    mix (64/594/1518, 7:4:1) (default 64)\n"
    "dst=MAC             fwd=txonly: destination (default ff:ff:ff:ff:ff:ff)\n"
    "pools=SxC[:SxC...]  active rx pools, size x count (default Linux's\n"
    "                    512x256:2048x512:65536x256)\n"
    "bulk-add=on|off     H_ADD_LOGICAL_LAN_BUFFERS when offered (default on)\n"
    "dma=per-buffer|pool map each rx buffer when posted and unmap it when\n"
    "                    its frame is taken, as Linux does (default), or\n"
    "                    map the pools whole at open: no TCE hcall per frame\n"
    "offloads=on|off     checksum offload and TSO when the device offers\n"
    "                    them, as Linux's default features (default on)\n"
    "csum-audit=on|off   check every checksum the device flags good, which\n"
    "                    Linux trusts, counting wrong ones (default off)\n"
    "page-size=N         guest kernel page size for memory charges and the\n"
    "                    rx queue's mapping\n"
    "                    (default 65536, ppc64le's)\n"
    "ipfrag-high-thresh=SIZE  reassembly memory limit (default 4M, Linux's)\n"
    "ipfrag-time=SECONDS reassembly timeout (default 30, Linux's)\n";

static const char *const ibmveth_keys[] = {
    "type", "dev", "id", "fwd", "ifname", "poll", "budget", "size", "dst",
    "pools", "bulk-add", "dma", "offloads", "csum-audit", "page-size",
    "ipfrag-high-thresh", "ipfrag-time",
    NULL,
};

bool guest_print_help(const char *arg, bool *printed, GError **errp)
{
    g_autoptr(QemuOpts) opts = NULL;
    const char *type;

    if (!strcmp(arg, "help") || !strcmp(arg, "?")) {
        printf("Guest models:\nibmveth   Linux's ibmveth driver on a vCPU "
               "thread (-guest ibmveth,help)\n");
        *printed = true;
        return true;
    }
    opts = qemu_opts_parse(arg, "type", errp);
    if (!opts) {
        return false;
    }
    if (!qemu_opts_wants_help(opts)) {
        return true;
    }
    type = qemu_opt_get(opts, "type");
    if (g_strcmp0(type, "ibmveth")) {
        g_set_error(errp, ILLAN_ERROR, 0, "no such guest model (-guest help "
                    "lists them)");
        return false;
    }
    printf("ibmveth options:\n%s", ibmveth_help);
    *printed = true;
    return true;
}

static bool parse_fwd(const char *v, GuestFwd *fwd, GError **errp)
{
    for (GuestFwd f = 0; f < GUEST_FWD__MAX; f++) {
        if (!strcmp(v, guest_fwd_name(f))) {
            *fwd = f;
            return true;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0, "fwd=%s: use rxonly, txonly, macswap "
                "or tap", v);
    return false;
}

static bool parse_uint_range(const char *name, const char *v, uint64_t min,
                             uint64_t max, uint64_t *out, GError **errp)
{
    if (!qemu_parse_uint64(name, v, out, errp)) {
        return false;
    }
    if (*out < min || *out > max) {
        g_set_error(errp, ILLAN_ERROR, 0, "%s=%s: must be %" G_GUINT64_FORMAT
                    "..%" G_GUINT64_FORMAT, name, v, min, max);
        return false;
    }
    return true;
}

static bool parse_dma(const char *v, IbmvethDma *dma, GError **errp)
{
    if (!strcmp(v, "per-buffer")) {
        *dma = IBMVETH_DMA_PER_BUFFER;
    } else if (!strcmp(v, "pool")) {
        *dma = IBMVETH_DMA_POOL;
    } else {
        g_set_error(errp, ILLAN_ERROR, 0, "dma=%s: use per-buffer or pool",
                    v);
        return false;
    }
    return true;
}

/* pools=512x256:2048x512:...: the active pools, ascending sizes. */
static bool parse_pools(const char *v, IbmvethConf *drv, GError **errp)
{
    g_auto(GStrv) parts = g_strsplit(v, ":", -1);
    unsigned n = g_strv_length(parts);

    if (n == 0 || n > IBMVETH_NUM_POOLS) {
        g_set_error(errp, ILLAN_ERROR, 0, "pools=%s: give 1 to %d pools as "
                    "SIZExCOUNT separated by ':'", v, IBMVETH_NUM_POOLS);
        return false;
    }
    drv->npools = n;
    for (unsigned i = 0; i < n; i++) {
        unsigned size, count;
        char end;

        if (sscanf(parts[i], "%ux%u%c", &size, &count, &end) != 2 ||
            (i > 0 && size <= drv->pool_size[i - 1])) {
            g_set_error(errp, ILLAN_ERROR, 0, "pools=%s: '%s' is not SIZExCOUNT"
                        " with sizes ascending, e.g. 512x256:2048x512", v,
                        parts[i]);
            return false;
        }
        drv->pool_size[i] = size;
        drv->pool_count[i] = count;
        drv->pool_active[i] = true;
    }
    return ibmveth_conf_check(drv, errp);
}

static bool parse_size(const char *v, uint32_t *size, GError **errp)
{
    uint64_t n;

    if (!strcmp(v, "mix")) {
        *size = TX_FRAMES_MIX;
        return true;
    }
    if (!parse_uint_range("size", v, TX_FRAMES_MIN_SIZE, TX_FRAMES_MAX_SIZE,
                          &n, errp)) {
        return false;
    }
    *size = n;
    return true;
}

static void conf_defaults(IbmvethGuestConf *c)
{
    *c = (IbmvethGuestConf) {
        .fwd = GUEST_FWD_RXONLY, .budget = 16, .tx_size = 64,
        .tx_dst = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
        .page_size = 65536, .ipfrag_high_thresh = 4 << 20,
        .ipfrag_time_ns = 30 * G_TIME_SPAN_SECOND * 1000ULL,
        .offloads = true,
    };
    ibmveth_conf_linux_defaults(&c->drv, 0);
    c->drv.bulk_add = true;
}

/* One key=value; false with errp naming the key. */
static bool parse_key(IbmvethGuestConf *c, const char *key, const char *v,
                      GError **errp)
{
    uint64_t n;
    MACAddr mac;

    if (!strcmp(key, "fwd")) {
        return parse_fwd(v, &c->fwd, errp);
    } else if (!strcmp(key, "poll")) {
        if (strcmp(v, "irq") && strcmp(v, "spin")) {
            g_set_error(errp, ILLAN_ERROR, 0, "poll=%s: use irq or spin", v);
            return false;
        }
        c->spin = !strcmp(v, "spin");
    } else if (!strcmp(key, "budget")) {
        if (!parse_uint_range(key, v, 1, IBMVETH_GUEST_BUDGET_MAX, &n,
                              errp)) {
            return false;
        }
        c->budget = n;
    } else if (!strcmp(key, "size")) {
        return parse_size(v, &c->tx_size, errp);
    } else if (!strcmp(key, "dst")) {
        if (!mac_parse(v, &mac)) {
            g_set_error(errp, ILLAN_ERROR, 0, "dst=%s: not a MAC address "
                        "(xx:xx:xx:xx:xx:xx)", v);
            return false;
        }
        memcpy(c->tx_dst, mac.a, sizeof(c->tx_dst));
    } else if (!strcmp(key, "pools")) {
        return parse_pools(v, &c->drv, errp);
    } else if (!strcmp(key, "offloads")) {
        return qemu_parse_bool(key, v, &c->offloads, errp);
    } else if (!strcmp(key, "csum-audit")) {
        return qemu_parse_bool(key, v, &c->csum_audit, errp);
    } else if (!strcmp(key, "bulk-add")) {
        return qemu_parse_bool(key, v, &c->drv.bulk_add, errp);
    } else if (!strcmp(key, "dma")) {
        return parse_dma(v, &c->drv.dma, errp);
    } else if (!strcmp(key, "page-size")) {
        if (!parse_uint_range(key, v, 4096, 65536, &n, errp)) {
            return false;
        }
        if (n & (n - 1)) {
            g_set_error(errp, ILLAN_ERROR, 0, "page-size=%s: must be a power "
                        "of two (4096 or 65536)", v);
            return false;
        }
        c->page_size = n;
    } else if (!strcmp(key, "ipfrag-high-thresh")) {
        return qemu_parse_size(key, v, 'B', &c->ipfrag_high_thresh, errp);
    } else if (!strcmp(key, "ipfrag-time")) {
        if (!parse_uint_range(key, v, 1, 3600, &n, errp)) {
            return false;
        }
        c->ipfrag_time_ns = n * 1000000000ULL;
    }
    return true;
}

static bool parse_conf(const QemuOpts *opts, IbmvethGuestConf *c,
                       GError **errp)
{
    conf_defaults(c);
    for (guint i = 0; i < qemu_opts_count(opts); i++) {
        if (!parse_key(c, qemu_opts_key(opts, i), qemu_opts_value(opts, i),
                       errp)) {
            return false;
        }
    }
    c->drv.page_size = c->page_size;
    c->ifname = qemu_opt_get(opts, "ifname");
    if ((c->fwd == GUEST_FWD_TAP) != (c->ifname != NULL)) {
        g_set_error(errp, ILLAN_ERROR, 0, c->ifname ?
                    "ifname= is only for fwd=tap" :
                    "fwd=tap needs ifname=NAME (the host TAP device)");
        return false;
    }
    return true;
}

static bool check_type(const QemuOpts *opts, GError **errp)
{
    const char *type = qemu_opt_get(opts, "type");

    if (g_strcmp0(type, "ibmveth")) {
        g_set_error(errp, ILLAN_ERROR, 0, "'%s' is not a guest model "
                    "(-guest help lists them)", type ? type : "");
        return false;
    }
    if (!qemu_opts_check_keys(opts, ibmveth_keys, errp)) {
        return false;
    }
    if (!qemu_opt_get(opts, "dev")) {
        g_set_error(errp, ILLAN_ERROR, 0, "dev= is missing: name the "
                    "spapr-vlan's id (-device spapr-vlan,id=net0,...)");
        return false;
    }
    return true;
}

static void init_mem(SpaprMachineState *spapr)
{
    if (!guests) {
        guests = g_ptr_array_new();
        guest_mem_init(guest_ram_size(spapr_ram(spapr)));
    }
}

bool guest_add(SpaprMachineState *spapr, const char *arg, bool incoming,
               GError **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "type", errp);
    g_autofree char *id = NULL;
    IbmvethGuestConf conf;
    IbmvethGuest *g;

    if (!opts || !check_type(opts, errp) || !parse_conf(opts, &conf, errp)) {
        return false;
    }
    init_mem(spapr);
    id = qemu_opt_get(opts, "id") ? g_strdup(qemu_opt_get(opts, "id")) :
         g_strdup_printf("guest%u", guests->len);
    conf.id = id;
    g = ibmveth_guest_new(spapr, qemu_opt_get(opts, "dev"), &conf, incoming,
                          errp);
    if (!g) {
        return false;
    }
    /* The instance is the guest's place on the command line, as QEMU
     * numbers its CPUs. */
    ibmveth_guest_vmstate_register(g, guests->len);
    g_ptr_array_add(guests, g);
    return true;
}

bool guest_start_all(GError **errp)
{
    for (guint i = 0; guests && i < guests->len; i++) {
        if (!ibmveth_guest_start(g_ptr_array_index(guests, i), errp)) {
            return false;
        }
    }
    return true;
}

void guest_stop_all(void)
{
    for (guint i = 0; guests && i < guests->len; i++) {
        ibmveth_guest_stop(g_ptr_array_index(guests, i));
    }
}

void guest_cleanup(void)
{
    for (guint i = 0; guests && i < guests->len; i++) {
        ibmveth_guest_vmstate_unregister(g_ptr_array_index(guests, i));
        ibmveth_guest_free(g_ptr_array_index(guests, i));
    }
    g_clear_pointer(&guests, g_ptr_array_unref);
}

/* The machine was reset, with every vCPU parked: as rebooted Linux
 * guests would, each opens its device again, in memory allocated anew
 * (all of it: after a migration some was never any driver's). */
void guest_machine_reset(void)
{
    for (guint i = 0; guests && i < guests->len; i++) {
        ibmveth_guest_reset_close(g_ptr_array_index(guests, i));
    }
    if (guests) {
        guest_mem_reset();
    }
    for (guint i = 0; guests && i < guests->len; i++) {
        ibmveth_guest_reset_open(g_ptr_array_index(guests, i));
    }
}

void guest_foreach(void (*fn)(IbmvethGuest *g, void *opaque), void *opaque)
{
    for (guint i = 0; guests && i < guests->len; i++) {
        fn(g_ptr_array_index(guests, i), opaque);
    }
}
