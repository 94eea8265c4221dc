/*
 * The net core's HMP commands: "info network", in QEMU's layout, which
 * tools and QEMU's netdev-socket test read.  Each client is one line,
 * "NAME: index=0,type=TYPE,INFO"; a netdev paired with a NIC follows its
 * NIC on the same line after " \ " instead of having a line of its own.
 */
#include "net/net.h"
#include "qemu/hmp-registry.h"
#include "qemu/module.h"

/* A NIC's text, as QEMU's NICs set it: its model and current MAC. */
static char *nic_info(NetClientState *nic)
{
    g_autoptr(GVariant) filter = net_nic_query_rx_filter(nic);
    const char *mac = NULL;

    if (filter) {
        g_variant_lookup(filter, "main-mac", "&s", &mac);
    }
    return g_strdup_printf("model=%s,macaddr=%s",
                           net_nic_model(nic) ? net_nic_model(nic) : "",
                           mac ? mac : "");
}

/* One queue each: index is always 0. */
static void print_client(GString *out, NetClientState *nc, bool is_nic)
{
    g_autofree char *info = is_nic ? nic_info(nc) : NULL;
    const char *type = is_nic ? "nic" : net_netdev_type(net_client_name(nc));

    g_string_append_printf(out, "%s: index=0,type=%s,%s\r\n",
                           net_client_name(nc), type ? type : "",
                           is_nic ? info : net_client_info_str(nc));
}

static void print_network_entry(NetClientState *nc, bool is_nic,
                                void *opaque)
{
    GString *out = opaque;
    NetClientState *peer = net_client_peer(nc);

    if (!is_nic && peer) {
        return;     /* printed with its NIC */
    }
    print_client(out, nc, is_nic);
    if (is_nic && peer) {
        g_string_append(out, " \\ ");
        print_client(out, peer, false);
    }
}

static void hmp_info_network(const char *args, GString *out)
{
    (void)args;
    net_foreach_client_created(print_network_entry, out);
}

static const HmpCommand net_hmp_commands[] = {
    { "info network", "", "show the network state", hmp_info_network },
};

static void net_hmp_commands_register(void)
{
    hmp_register_commands(net_hmp_commands, G_N_ELEMENTS(net_hmp_commands));
}
illan_init(net_hmp_commands_register)
