/*
 * rtnetlink link notifications (RTMGRP_LINK) read on the GLib main loop.
 */
#include "net/link-watch.h"

#include <errno.h>
#include <glib-unix.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "qemu/option.h"

struct LinkWatch {
    int fd;
    guint watch;
    LinkEventFn fn;
    void *opaque;
};

/* Up and running (operationally up: for veth, the peer is up too). */
static bool flags_up(unsigned flags)
{
    return (flags & IFF_UP) && (flags & IFF_RUNNING);
}

static const char *link_name(struct nlmsghdr *nlh)
{
    struct ifinfomsg *ifi = NLMSG_DATA(nlh);
    struct rtattr *rta = IFLA_RTA(ifi);
    int len = IFLA_PAYLOAD(nlh);

    for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
        if (rta->rta_type == IFLA_IFNAME &&
            memchr(RTA_DATA(rta), 0, RTA_PAYLOAD(rta))) {
            return RTA_DATA(rta);
        }
    }
    return NULL;
}

static void dispatch(LinkWatch *w, struct nlmsghdr *nlh)
{
    struct ifinfomsg *ifi = NLMSG_DATA(nlh);
    LinkEvent ev;

    if ((nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK) ||
        nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi))) {
        return;
    }
    ev = (LinkEvent){
        .removed = nlh->nlmsg_type == RTM_DELLINK,
        .ifindex = ifi->ifi_index,
        .ifname = link_name(nlh),
        .up = flags_up(ifi->ifi_flags),
    };
    w->fn(w->opaque, &ev);
}

/*
 * The kernel reports an overflow before the messages still queued, and
 * those are older than the ones it dropped: dispatched after the
 * receiver has re-read the link, a queued "up" would undo the "down"
 * that re-read found.  So they are read and thrown away first; the
 * re-read covers them.
 */
static void discard_queued(int fd)
{
    char buf[4096];
    ssize_t len;

    do {
        len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
    } while (len > 0 || (len < 0 && (errno == ENOBUFS || errno == EINTR)));
}

static gboolean link_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    static char buf[65536];
    LinkWatch *w = opaque;
    ssize_t len;

    (void)cond;
    for (;;) {
        struct nlmsghdr *nlh = (struct nlmsghdr *)buf;

        len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (len < 0 && errno == ENOBUFS) {
            discard_queued(fd);
            w->fn(w->opaque, &(LinkEvent){ .overrun = true });
            continue;
        }
        if (len <= 0) {
            break;
        }
        for (; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
            dispatch(w, nlh);
        }
    }
    return G_SOURCE_CONTINUE;
}

LinkWatch *link_watch_new(LinkEventFn fn, void *opaque, GError **errp)
{
    struct sockaddr_nl addr = { .nl_family = AF_NETLINK,
                                .nl_groups = RTMGRP_LINK };
    LinkWatch *w = g_new0(LinkWatch, 1);

    w->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (w->fd < 0 ||
        bind(w->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "cannot watch interfaces through rtnetlink: %s",
                    g_strerror(errno));
        if (w->fd >= 0) {
            close(w->fd);
        }
        g_free(w);
        return NULL;
    }
    w->fn = fn;
    w->opaque = opaque;
    w->watch = g_unix_fd_add(w->fd, G_IO_IN, link_readable, w);
    return w;
}

void link_watch_free(LinkWatch *w)
{
    if (!w) {
        return;
    }
    g_source_remove(w->watch);
    close(w->fd);
    g_free(w);
}

bool link_is_up(const char *ifname)
{
    struct ifreq ifr = { 0 };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool up = false;

    g_strlcpy(ifr.ifr_name, ifname, sizeof(ifr.ifr_name));
    if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
        up = flags_up((unsigned short)ifr.ifr_flags);
    }
    if (fd >= 0) {
        close(fd);
    }
    return up;
}
