/*
 * The -netdev front: backend types register themselves here, and each
 * -netdev creates a named netdev from one of them.
 */
#include "net/net.h"

#include <stdio.h>
#include <string.h>

static GPtrArray *netdev_types;
static GHashTable *netdevs;         /* id -> const NetdevType * */

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

void net_print_netdev_types(void)
{
    guint n = netdev_types ? netdev_types->len : 0;

    printf("Available netdev backend types:\n");
    for (guint i = 0; i < n; i++) {
        const NetdevType *t = g_ptr_array_index(netdev_types, i);
        printf("%-10s %s\n", t->name, t->desc);
    }
    if (n == 0) {
        printf("(none in this build yet)\n");
    }
}

bool net_netdev_add(const QemuOpts *opts, GError **errp)
{
    const char *type_name = qemu_opt_get(opts, "type");
    const char *id = qemu_opt_get(opts, "id");
    const NetdevType *type;

    if (!type_name || !*type_name) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'type' is missing (see -netdev help)");
        return false;
    }
    type = find_type(type_name);
    if (!type) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'type' does not accept value '%s' "
                    "(see -netdev help)", type_name);
        return false;
    }
    if (!id || !*id) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'id' is missing");
        return false;
    }
    if (net_netdev_exists(id)) {
        g_set_error(errp, ILLAN_ERROR, 0, "Duplicate ID '%s' for netdev", id);
        return false;
    }
    if (!type->create(id, opts, errp)) {
        return false;
    }
    if (!netdevs) {
        netdevs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    }
    g_hash_table_insert(netdevs, g_strdup(id), (gpointer)type);
    return true;
}

bool net_netdev_exists(const char *id)
{
    return netdevs && g_hash_table_contains(netdevs, id);
}

void net_cleanup(void)
{
    g_clear_pointer(&netdevs, g_hash_table_destroy);
}
