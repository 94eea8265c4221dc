/*
 * Self-announce, as QEMU's announce-self: every NIC (or those named)
 * sends gratuitous RARP frames with the MAC in force, so that switches
 * learn the port the guest is now behind.  Rounds follow QEMU's
 * AnnounceParameters on a real-time timer of the main loop: the first at
 * once, then each @initial + k * @step ms after the last (k counting up
 * from 0), never more than @max.  Main thread.
 */
#ifndef NET_ANNOUNCE_H
#define NET_ANNOUNCE_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An Ethernet frame's shortest length (no FCS): RARP is padded to it. */
#define ANNOUNCE_FRAME_LEN  60
#define ANNOUNCE_ETHERTYPE  0x8035      /* RARP */

typedef struct AnnounceParameters {
    int64_t initial, max, rounds, step;     /* ms, ms, count, ms */
    char **interfaces;      /* NIC names; NULL for every NIC */
    char *id;               /* a named run replaces the one of its name */
} AnnounceParameters;

/* QEMU's migration defaults: 50 ms, 550 ms, 5 rounds, 100 ms. */
#define ANNOUNCE_DEFAULTS \
    ((AnnounceParameters){ .initial = 50, .max = 550, .rounds = 5, \
                           .step = 100 })

/* Starts the rounds @p describes (copied), replacing a run of the same
 * id; false with *errp when a value is out of range. */
bool announce_self(const AnnounceParameters *p, GError **errp);
/* The announce after an incoming migration, with the defaults; it has a
 * timer of its own, apart from the named ones.  A MainLoopFn. */
void announce_after_migration(void *opaque);
/* Stops every run; at exit. */
void announce_cleanup(void);

#endif
