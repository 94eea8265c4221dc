#!/usr/bin/env python3
"""Capture UDP and TCP frames over IPv4 and IPv6 whose checksums a Linux
kernel computed and another verified, for tests/unit/test-guest-csum.c.

Two network namespaces joined by a veth pair: the sender's checksum and
segmentation offloads off, so its kernel computes every checksum in
software; the receiver's checksum offload off, so its kernel verifies
them.  Each payload must reach its socket and nstat must count no checksum
error.  Prints each frame the receiver's AF_PACKET socket saw, in hex.
TCP's initial sequence numbers and timestamps differ from run to run, so
the frames do too.  Needs root.  Usage: capture-csum-frames.py
"""
import os
import socket
import subprocess
import sys
import time

SEND = r'''
import socket
def udp(fam, src, dst, data):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind(src)
    s.sendto(data, dst)
udp(socket.AF_INET, ("10.9.0.1", 4001), ("10.9.0.2", 4000),
    b"illan csum 4 odd")
udp(socket.AF_INET6, ("fd00::1", 4001), ("fd00::2", 4000),
    b"illan csum six, odd:")
udp(socket.AF_INET, ("10.9.0.1", 4002), ("10.9.0.2", 4000), b"pad")
for fam, src, dst, data in (
        (socket.AF_INET, "10.9.0.1", "10.9.0.2", b"illan tcp odd payload"),
        (socket.AF_INET6, "fd00::1", "fd00::2", b"illan tcp6, odd")):
    t = socket.socket(fam, socket.SOCK_STREAM)
    t.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t.bind((src, 5001))
    t.connect((dst, 5000))
    t.sendall(data)
    t.close()
'''


def run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def receive(sender_ns):
    """In the receiver's namespace: sockets, the sender, the capture."""
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    cap.bind(('vB', 0))
    cap.settimeout(2)
    udp = []
    for fam, addr in ((socket.AF_INET, '10.9.0.2'),
                      (socket.AF_INET6, 'fd00::2')):
        u = socket.socket(fam, socket.SOCK_DGRAM)
        u.bind((addr, 4000))
        t = socket.socket(fam, socket.SOCK_STREAM)
        t.bind((addr, 5000))
        t.listen()
        udp.append((u, t))
    run('ip', 'netns', 'exec', sender_ns, sys.executable, '-c', SEND)
    got = [udp[0][0].recv(100), udp[1][0].recv(100), udp[0][0].recv(100)]
    for _, t in udp:
        c, _ = t.accept()
        got.append(c.recv(100))
        c.close()
    print('delivered:', got, file=sys.stderr)
    time.sleep(0.3)
    try:
        while True:
            f, addr = cap.recvfrom(70000)
            if addr[2] != socket.PACKET_OUTGOING and f[12:14] in (
                    b'\x08\x00', b'\x86\xdd') and f[23 if f[13] == 0
                                                    else 20] in (6, 17):
                print(len(f), f.hex())
    except socket.timeout:
        pass


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--receive':
        receive(sys.argv[2])
        return
    a, b = 'csa%d' % os.getpid(), 'csb%d' % os.getpid()
    run('ip', 'netns', 'add', a)
    try:
        run('ip', 'netns', 'add', b)
        run('ip', 'link', 'add', 'vA', 'netns', a, 'address',
            '02:00:00:00:00:0a', 'type', 'veth', 'peer', 'name', 'vB',
            'netns', b, 'address', '02:00:00:00:00:0b')
        for ns, dev, v4, v6, peer4, peer6, mac in (
                (a, 'vA', '10.9.0.1', 'fd00::1', '10.9.0.2', 'fd00::2',
                 '02:00:00:00:00:0b'),
                (b, 'vB', '10.9.0.2', 'fd00::2', '10.9.0.1', 'fd00::1',
                 '02:00:00:00:00:0a')):
            ns_run = ('ip', 'netns', 'exec', ns)
            run(*ns_run, 'ip', 'addr', 'add', v4 + '/24', 'dev', dev)
            run(*ns_run, 'ip', 'addr', 'add', v6 + '/64', 'dev', dev,
                'nodad')
            run(*ns_run, 'ip', 'link', 'set', dev, 'up')
            run(*ns_run, 'ip', 'neigh', 'add', peer4, 'lladdr', mac, 'dev',
                dev)
            run(*ns_run, 'ip', 'neigh', 'add', peer6, 'lladdr', mac, 'dev',
                dev)
        run('ip', 'netns', 'exec', a, 'ethtool', '-K', 'vA', 'tx', 'off',
            'tso', 'off', 'gso', 'off')
        run('ip', 'netns', 'exec', b, 'ethtool', '-K', 'vB', 'rx', 'off',
            'gro', 'off')
        subprocess.run(['ip', 'netns', 'exec', b, sys.executable,
                        os.path.abspath(__file__), '--receive', a],
                       check=True)
        subprocess.run(['ip', 'netns', 'exec', b, 'nstat', '-az',
                        'UdpInCsumErrors', 'Udp6InCsumErrors',
                        'TcpInCsumErrors'], check=True, stdout=sys.stderr)
    finally:
        subprocess.run(['ip', 'netns', 'del', b], stderr=subprocess.DEVNULL)
        run('ip', 'netns', 'del', a)


if __name__ == '__main__':
    main()
