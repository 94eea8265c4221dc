/* A host TAP device, the built-in guest's window to real tools. */
#ifndef GUEST_TAP_H
#define GUEST_TAP_H

#include <glib.h>

#include <stdbool.h>

/* Attaches to TAP device @ifname (creating it if it does not exist) in
 * non-blocking mode, frames without a packet-information header, each
 * behind a struct virtio_net_hdr both ways (IFF_VNET_HDR), so checksum
 * and segmentation offloads pass between the kernel and us.  The fd, or -1
 * with errp naming the interface and the fix. */
int tap_open(const char *ifname, GError **errp);
/* What the kernel may hand us unfinished: checksums (@csum), and TCP
 * segments up to 64 KiB (@tso, which needs @csum).  False with errp. */
bool tap_set_offload(int fd, bool csum, bool tso, GError **errp);

#endif
