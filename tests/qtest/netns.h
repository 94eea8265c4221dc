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
void veth_pair_destroy(VethPair *p);
unsigned veth_ifindex(const char *ifname);

/* AF_PACKET socket bound to @ifname, receiving every protocol. */
int packet_socket_open(const char *ifname);
/* Sends one frame; false when the kernel refuses it. */
bool packet_send(int fd, const void *frame, size_t len);
/* The next frame with EtherType @ethertype within @timeout_ms, or -1. */
ssize_t packet_recv(int fd, uint16_t ethertype, void *buf, size_t max,
                    int timeout_ms);

/* Pins the calling thread to @cpu; false if there is no such CPU. */
bool pin_to_cpu(int cpu);

#endif
