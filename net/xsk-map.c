/*
 * A pinned XSK map of someone else's: opened by path (BPF_OBJ_GET),
 * checked, and filled with our sockets.  Each refusal names map-path and
 * what to fix, since the map is the user's set-up, not ours.
 */
#include "net/xsk-map.h"

#include <errno.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "qemu/option.h"

/* The kernel answers EACCES both for a file it may not open and for one
 * that is no BPF object at all; the file system tells them apart. */
static void explain_get_error(const char *path, int err, GError **errp)
{
    struct statfs fs;

    if (err == ENOENT) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s: nothing is pinned there; pin the XSK map "
                    "of the program that is to redirect to illan there "
                    "first", path);
    } else if (statfs(path, &fs) == 0 && fs.f_type != BPF_FS_MAGIC) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s is not on a BPF file system: give the path "
                    "of a map pinned under a bpf mount (e.g. /sys/fs/bpf)",
                    path);
    } else if (err == EACCES || err == EPERM) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s: no permission to open the pinned map (%s); "
                    "illan needs read and write access to it (chown or "
                    "chmod the pinned file)", path, g_strerror(err));
    } else {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s: cannot open the pinned map: %s", path,
                    g_strerror(err));
    }
}

static const char *map_type_name(uint32_t type)
{
    const char *name = libbpf_bpf_map_type_str(type);

    return name ? name : "unknown";
}

static bool check_map(int fd, const char *path, uint32_t first,
                      uint32_t count, GError **errp)
{
    struct bpf_map_info info;
    uint32_t len = sizeof(info);
    uint64_t end = (uint64_t)first + count;

    memset(&info, 0, sizeof(info));
    if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s: cannot read what the pinned object is: %s",
                    path, g_strerror(errno));
        return false;
    }
    if (info.type != BPF_MAP_TYPE_XSKMAP) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s is a BPF %s map, not an XSK map (xskmap): "
                    "give the XSKMAP the program redirects to",
                    path, map_type_name(info.type));
        return false;
    }
    if (end > info.max_entries) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path=%s has %u slot(s), but map-start-index=%u with "
                    "%u queue(s) needs slot %" G_GUINT64_FORMAT "; lower "
                    "map-start-index or pin a larger map", path,
                    info.max_entries, first, count, end - 1);
        return false;
    }
    return true;
}

int xsk_map_open_pinned(const char *path, uint32_t first, uint32_t count,
                        GError **errp)
{
    int fd = bpf_obj_get(path);

    if (fd < 0) {
        explain_get_error(path, errno, errp);
        return -1;
    }
    if (!check_map(fd, path, first, count, errp)) {
        close(fd);
        return -1;
    }
    return fd;
}

bool xsk_map_insert(int map_fd, const char *path, uint32_t index,
                    int sock_fd, GError **errp)
{
    if (bpf_map_update_elem(map_fd, &index, &sock_fd, BPF_ANY) == 0) {
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "map-path=%s: cannot put an AF_XDP socket in slot %u: %s",
                path, index, g_strerror(errno));
    return false;
}
