/*
 * Netdev backends: the -netdev option, the registry of backend types and
 * of the netdevs created from them.  Backends register a type; a NIC finds
 * its backend by id through its netdev property.
 */
#ifndef NET_NET_H
#define NET_NET_H

#include <glib.h>
#include <stdbool.h>

#include "qemu/option.h"

typedef struct NetdevType {
    const char *name;
    const char *desc;
    /* Creates the netdev @id from its options (type and id already read). */
    bool (*create)(const char *id, const QemuOpts *opts, GError **errp);
} NetdevType;

void netdev_type_register(const NetdevType *type);
void net_print_netdev_types(void);

/* Handles one -netdev argument: parses and creates the backend. */
bool net_netdev_add(const QemuOpts *opts, GError **errp);
bool net_netdev_exists(const char *id);
void net_cleanup(void);

#endif
