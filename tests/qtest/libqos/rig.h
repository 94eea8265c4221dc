/*
 * The test rig most suites share: an illan with one spapr-vlan on netdev
 * n0, the test's end of that netdev (by default a unix dgram socket in a
 * temporary directory of the rig's own), the ibmveth guest model, and the
 * statistics illan reports over QMP, read and waited on by name.
 */
#ifndef LIBQOS_RIG_H
#define LIBQOS_RIG_H

#include "libqtest.h"
#include "libqos/ibmveth.h"

#define QRIG_UNIT       0x71000000u     /* the spapr-vlan's unit address */
#define QRIG_MAC        0x525400123456ULL
#define QRIG_DMA_END    0x10000000u     /* the 256 MiB DMA window */

extern const uint8_t qrig_mac[6];       /* QRIG_MAC as bytes */

typedef struct QRig {
    QTestState *qts;
    char *dir;              /* temporary; removed with what is in it */
    char *dev_path;         /* <dir>/illan: illan's end of a dgram netdev */
    char *peer_path;        /* <dir>/peer: the test's end */
    int peer;               /* the test's socket, or -1 */
    QGuestAllocator alloc;
    QIbmveth *guest;        /* the guest model, once opened */
} QRig;

/* A rig with its directory and paths, nothing bound or started. */
void qrig_init(QRig *r);
/* Binds the test's dgram socket at peer_path (with the most receive room
 * the kernel allows) as r->peer. */
void qrig_bind_peer(QRig *r);
/* A file in the rig's directory (caller frees). */
char *qrig_path(const QRig *r, const char *name);

typedef struct QRigOpts {
    const char *wrapper;    /* runs illan (see qtest_init_wrapped()) */
    const char *machine;    /* -M; NULL for the default */
    const char *mem;        /* -m; NULL for the default */
    /* After "-netdev ", which must say id=n0; NULL for a unix dgram
     * netdev from @dev_path (default r->dev_path) to r->peer_path. */
    const char *netdev;
    const char *dev_path;
    /* Appended to "-device spapr-vlan,netdev=n0,mac=52:54:00:12:34:56". */
    const char *nic;
    const char *extra;      /* the rest of the command line */
} QRigOpts;

/* Starts an illan as @o says; qrig_start() makes it r->qts. */
QTestState *qrig_spawn(const QRig *r, const QRigOpts *o);
QTestState *qrig_start(QRig *r, const QRigOpts *o);

/* Opens the guest model on @qts with memory from 1 MiB to @ram_end;
 * @conf NULL is Linux's defaults on QRIG_UNIT with QRIG_MAC.  Asserts it
 * opens. */
QIbmveth *qrig_guest_open(QTestState *qts, QGuestAllocator *alloc,
                          const IbmvethConf *conf, uint64_t ram_end);
/* The same on r->qts, below the DMA window, as r->guest. */
void qrig_open_guest(QRig *r, const IbmvethConf *conf);

/* H_SEND_LOGICAL_LAN of @frame from r->guest's transmit buffer, its
 * descriptor VALID with @flags, r12 @mss; the hcall's return code. */
int64_t qrig_send_flagged(QRig *r, const void *frame, size_t len,
                          uint64_t flags, uint64_t mss);

/* Sends a frame from r->peer to illan's end of the dgram netdev. */
void qrig_send(QRig *r, const void *frame, size_t len);
/* The next datagram on r->peer, or -1 after @timeout_ms. */
ssize_t qrig_recv(QRig *r, void *buf, size_t max, int timeout_ms);

/* Closes the guest (asserting H_FREE succeeds), quits illan (asserting a
 * clean exit), closes r->peer and removes the directory. */
void qrig_stop(QRig *r);

/*
 * Statistics.  A path names a counter: its first part the client, "nic"
 * (the one NIC of x-query-net-stats), "netdev" (netdev n0) or "guest"
 * (the one built-in guest of x-query-guest-stats), then members, e.g.
 * "nic.rx.dropped.no-buffer", "netdev.backend.reopens", "guest.rx-frames".
 */
/* The "return" of x-query-net-stats / x-query-guest-stats (unref it). */
JsonObject *qrig_net_stats(QTestState *qts);
JsonObject *qrig_guest_stats(QTestState *qts);
/* In such a return: the one NIC, netdev @name, the one guest. */
JsonObject *qrig_stats_nic(JsonObject *net_stats);
JsonObject *qrig_stats_netdev(JsonObject *net_stats, const char *name);
JsonObject *qrig_stats_guest(JsonObject *guest_stats);
/* The integer at dotted @path below @o; every member must exist. */
gint64 qjson_int(JsonObject *o, const char *path);
/* The sum of the members of the object at @path (a "dropped" table). */
gint64 qjson_sum(JsonObject *o, const char *path);
/* One counter by its path (see above). */
gint64 qrig_stat(QTestState *qts, const char *path);
/* Waits (QTEST_WAIT_S) until the counter at @path reaches @min; returns
 * what it is then. */
gint64 qrig_wait_stat_min(QTestState *qts, const char *path, gint64 min);
/* The same, and asserts it did not pass @want. */
void qrig_wait_stat(QTestState *qts, const char *path, gint64 want);

#endif
