/* Opens a TAP device (see guest/tap.h). */
#include "guest/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "qemu/option.h"

int tap_open(const char *ifname, GError **errp)
{
    struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
    int hdr_len = sizeof(struct virtio_net_hdr);
    int fd;

    if (strlen(ifname) >= IFNAMSIZ) {
        g_set_error(errp, ILLAN_ERROR, 0, "ifname=%s: longer than %d "
                    "characters", ifname, IFNAMSIZ - 1);
        return -1;
    }
    fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "ifname=%s: /dev/net/tun: %s "
                    "(load the tun module)", ifname, g_strerror(errno));
        return -1;
    }
    strcpy(ifr.ifr_name, ifname);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        int err = errno;

        g_set_error(errp, ILLAN_ERROR, 0, "ifname=%s: cannot attach to the "
                    "TAP device: %s (%s)", ifname, g_strerror(err),
                    err == EPERM ? "run as root, or create it for your user: "
                    "ip tuntap add dev NAME mode tap user $USER" :
                    "is it a TAP device? ip -d link show lists it");
        close(fd);
        return -1;
    }
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "ifname=%s: TUNSETVNETHDRSZ: %s",
                    ifname, g_strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

bool tap_set_offload(int fd, bool csum, bool tso, GError **errp)
{
    unsigned flags = (csum ? TUN_F_CSUM : 0) |
                     (csum && tso ? TUN_F_TSO4 | TUN_F_TSO6 : 0);

    if (ioctl(fd, TUNSETOFFLOAD, flags) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "TUNSETOFFLOAD 0x%x: %s", flags,
                    g_strerror(errno));
        return false;
    }
    return true;
}
