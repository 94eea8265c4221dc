/*
 * Network namespaces, veth pairs and raw packet sockets for the suites
 * that need a real host interface (af-xdp).  The test process moves into
 * a namespace of its own, so nothing it creates is seen outside it, and
 * the kernel removes all of it when the process ends, even on a crash.
 */
#ifndef TESTS_NETNS_H
#define TESTS_NETNS_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Enters a private network namespace with IPv6 off (so the kernel sends
 * no traffic of its own on new interfaces).  False, with the reason in
 * @why, when this process may not (not root, no namespaces). */
bool netns_enter_private(char **why);
/* The same, marking the running test skipped with the reason when it
 * cannot. */
bool netns_enter_private_or_skip(void);
/* The same for a whole program, before its tests are added: when it
 * cannot, adds one test @path that is skipped with the reason, and the
 * caller runs only that. */
bool netns_enter_private_or_skip_all(const char *path);

/* Runs a command line (split as a shell would) and asserts it succeeds. */
void netns_run(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

typedef struct VethPair {
    char dut[16];           /* the end illan opens */
    char peer[16];          /* the end the test sends from and reads */
    unsigned queues;
} VethPair;

/* A pair named uniquely within this test, both ends up. */
void veth_pair_create(VethPair *p, unsigned queues);
/* Deletes the pair (both ends) if it still exists. */
/* The pair, both ends up, again under its names (after an end was
 * deleted: an interface that comes back). */
void veth_pair_recreate(VethPair *p);
void veth_pair_destroy(VethPair *p);
unsigned veth_ifindex(const char *ifname);

/* A copy, in this process, of the first AF_XDP socket process @pid
 * holds that is none of @skip's @nskip (descriptors of this process),
 * with its number in @pid in *@fd_there; fails the test if there is
 * none.  Root. */
int process_xsk(pid_t pid, const int *skip, unsigned nskip, int *fd_there);

/* The id of the one thread of process @pid whose name (comm, at most
 * 15 characters) begins with @name cut to 15 characters; fails the test
 * if there is none, or more than one. */
pid_t process_thread(pid_t pid, const char *name);

/* AF_PACKET socket bound to @ifname, receiving every protocol. */
int packet_socket_open(const char *ifname);
/* The same receiving only EtherType @proto (host order), which leaves out
 * the frames the interface sends; 0 receives nothing (a sender's). */
int packet_socket_open_proto(const char *ifname, uint16_t proto);
/* Frames the kernel dropped on this packet socket since the last call
 * (its receive buffer full). */
unsigned packet_socket_drops(int fd);
/* Sends one frame; false when the kernel refuses it. */
bool packet_send(int fd, const void *frame, size_t len);
/* The next frame with EtherType @ethertype within @timeout_ms, or -1. */
ssize_t packet_recv(int fd, uint16_t ethertype, void *buf, size_t max,
                    int timeout_ms);

/*
 * A thread sending on packet socket @fd until stopped: frame @seq is what
 * @build writes into @frame (at most PACKET_FLOOD_MAX bytes; it returns
 * the length), one every @pace_us (the flood's pace on a loaded machine,
 * not synchronisation).  packet_flood_start() returns once the first frame
 * went; packet_flood_stop() returns how many went.
 */
#define PACKET_FLOOD_MAX 1514
typedef size_t (*PacketFloodFrame)(uint8_t *frame, guint64 seq);
typedef struct PacketFlood {
    int fd;
    PacketFloodFrame build;
    unsigned pace_us;
    GThread *thread;
    bool stop;              /* atomic */
    guint64 sent;           /* atomic */
} PacketFlood;

void packet_flood_start(PacketFlood *f, int fd, PacketFloodFrame build,
                        unsigned pace_us);
guint64 packet_flood_stop(PacketFlood *f);

/* A Linux bridge, up, without STP (ports forward at once) and without
 * multicast snooping, so that it sends nothing of its own. */
void netns_bridge_create(const char *name);
/* Makes @ifname a port of @bridge.  With @flood false the bridge sends it
 * no unknown unicast (only frames to addresses learnt on it); with
 * @bcast false, no broadcast and no multicast. */
void netns_bridge_add_port(const char *bridge, const char *ifname,
                           bool flood, bool bcast);
/* The frames @ifname's driver dropped: its rx_dropped and tx_dropped. */
typedef struct IfDrops {
    guint64 rx, tx;
} IfDrops;
IfDrops netns_if_drops(const char *ifname);

/* Pins the calling thread to @cpu; false if there is no such CPU. */
bool pin_to_cpu(int cpu);

#endif
