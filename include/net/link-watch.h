/*
 * Host interface events from rtnetlink, on the main loop: an interface
 * appeared or changed (with its up/running state), or went away, or
 * events were lost.
 */
#ifndef NET_LINK_WATCH_H
#define NET_LINK_WATCH_H

#include <glib.h>
#include <stdbool.h>

typedef struct LinkWatch LinkWatch;

typedef struct LinkEvent {
    /* The kernel dropped events (the socket's receive buffer was full,
     * as when the main loop stalls through a burst of changes): the
     * other members are unset, and the receiver re-reads the state of
     * what it watches.  The events still queued from before the loss
     * are not delivered: they are older than that state. */
    bool overrun;
    bool removed;           /* RTM_DELLINK */
    unsigned ifindex;
    const char *ifname;     /* may be NULL */
    bool up;                /* up and running */
} LinkEvent;

typedef void (*LinkEventFn)(void *opaque, const LinkEvent *ev);

LinkWatch *link_watch_new(LinkEventFn fn, void *opaque, GError **errp);
void link_watch_free(LinkWatch *w);
/* The state a LinkEvent would report for @ifname now; false if absent. */
bool link_is_up(const char *ifname);

#endif
