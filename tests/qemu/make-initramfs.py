#!/usr/bin/env python3
"""Write the ppc64 guest's initramfs: busybox as /init's shell, ibmveth.ko,
and a script that brings eth0 up and then runs the console's "run:" lines.  The host has no cpio, so the
newc format is written here (it is a header of hex fields per file)."""
import argparse
import os
import stat
import sys

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
insmod /ibmveth.ko
ip link set eth0 up
ip addr add {addr}/24 dev eth0
arp -s {peer} {peer_mac}
echo "illan-guest: eth0 up $(cat /sys/class/net/eth0/address)"
# A console line "run: COMMAND" runs COMMAND (tests/qemu/hcall-census.py
# changes the MTU so); any other input is only echoed by the tty.
while read -r line; do
    case "$line" in
    "run: "*) eval "${{line#run: }}"; echo "illan-guest: ran: ${{line#run: }}: exit $?";;
    esac
done
while true; do sleep 3600; done
"""


class Newc:
    def __init__(self, out):
        self.out = out
        self.ino = 1

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0],
                  rdev[1], len(name_b), 0]
        self.ino += 1
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        self.out.write(hdr + name_b)
        self.out.write(b"\0" * (-(len(hdr) + len(name_b)) % 4))
        self.out.write(data)
        self.out.write(b"\0" * (-len(data) % 4))

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755)

    def chardev(self, name, major, minor):
        self._entry(name, stat.S_IFCHR | 0o600, rdev=(major, minor))

    def file(self, name, data, mode=0o644):
        self._entry(name, stat.S_IFREG | mode, data)

    def end(self):
        self._entry("TRAILER!!!", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--busybox", required=True, help="ppc64el busybox-static binary")
    ap.add_argument("--ibmveth", required=True, help="ibmveth.ko of the guest kernel")
    ap.add_argument("--addr", default="10.99.0.2", help="the guest's eth0 address")
    ap.add_argument("--peer", default="10.99.0.1", help="the peer's address")
    ap.add_argument("--peer-mac", default="02:00:00:00:99:01",
                    help="the peer's MAC, a permanent neighbour")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    init = INIT.format(addr=args.addr, peer=args.peer, peer_mac=args.peer_mac)
    with open(args.busybox, "rb") as f:
        busybox = f.read()
    with open(args.ibmveth, "rb") as f:
        ibmveth = f.read()
    tmp = args.output + ".tmp"
    with open(tmp, "wb") as out:
        c = Newc(out)
        for d in ("bin", "dev", "proc", "sys", "tmp"):
            c.dir(d)
        # The kernel opens the console before /init runs.
        c.chardev("dev/console", 5, 1)
        c.file("bin/busybox", busybox, 0o755)
        c.file("ibmveth.ko", ibmveth)
        c.file("init", init.encode(), 0o755)
        c.end()
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
