/*
 * An XSK map pinned by someone else (af-xdp's map-path): a privileged
 * helper or a container runtime created it, pinned it on a BPF file
 * system and attached the XDP program that redirects to it; the netdev
 * only puts its own sockets in it.  That takes neither CAP_BPF nor
 * CAP_NET_ADMIN, only write access to the pinned file.
 */
#ifndef NET_XSK_MAP_H
#define NET_XSK_MAP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The map pinned at @path, checked to be an XSK map with slots @first to
 * @first + @count - 1; its fd, or -1 with @errp saying what to fix. */
int xsk_map_open_pinned(const char *path, uint32_t first, uint32_t count,
                        GError **errp);

/* Puts AF_XDP socket @sock_fd in slot @index of map @map_fd.  The kernel
 * takes it out again when the socket closes. */
bool xsk_map_insert(int map_fd, const char *path, uint32_t index,
                    int sock_fd, GError **errp);

#endif
