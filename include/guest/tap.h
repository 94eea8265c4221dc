/* A host TAP device, the built-in guest's window to real tools. */
#ifndef GUEST_TAP_H
#define GUEST_TAP_H

#include <glib.h>

/* Attaches to TAP device @ifname (creating it if it does not exist) in
 * non-blocking mode, frames without a packet-information header.  The fd,
 * or -1 with errp naming the interface and the fix. */
int tap_open(const char *ifname, GError **errp);

#endif
