#!/usr/bin/env python3
"""make check-qemu's last step: the hcalls a real Linux 6.1 guest's ibmveth
issues on QEMU 7.2's spapr-vlan, counted per scenario from QEMU's trace
events, beside what docs/devel/linux-hcalls.md reads from Linux's source.

QEMU boots the ppc64el guest (scripts/install-qemu-guest.sh makes it) with
its spapr-vlan on a dgram netdev whose far end is a UDP socket of ours:
we see every frame the guest sends and put frames into the guest's LAN
by sending datagrams to QEMU's end.  QEMU's log backend writes the
trace events of the LAN's hcalls and of its DMA window (liobn
0x71000002) to a file, which is read as it grows.  QEMU has no trace
event for H_REGISTER_LOGICAL_LAN, H_FREE_LOGICAL_LAN, H_VIO_SIGNAL,
H_MULTICAST_CTRL, H_ILLAN_ATTRIBUTES or H_CHANGE_LOGICAL_LAN_MAC, so
those are not counted here.

A scenario ends when its frames have all been received (or answered)
and the trace has then been quiet for QUIET_S: the guest's last poll
replenishes its pools after it has taken the last frame, and nothing
else says when that poll is over.
"""

import argparse
import json
import os
import re
import signal
import socket
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from takeover import (GUEST_MAC, LAN_REG, PEER_MAC, Failed,  # noqa: E402
                      Qemu, echo_reply_seq, echo_request, mac_bytes)

BOOT_TIMEOUT_S = 90
FRAMES_TIMEOUT_S = 60
QUIET_S = 1.0
QUIET_TIMEOUT_S = 30
POLL_S = 0.05
IDLE_S = 10
FRAMES = 1000
# Frames in flight at once: QEMU stops reading its socket while the
# guest has no buffer, and a UDP socket's default buffer holds about
# a hundred 1000-byte datagrams.
BATCH = 32
# IEEE 802's local experimental Ethertype: the guest takes such a frame
# off its queue and drops it in the stack, without an answer.
ETH_P_EXPERIMENTAL = 0x88b5
MTU_COMMAND = 'ip link set eth0 mtu 9000'
# What the guest's kernel prints just before it runs the initramfs.
INIT_LINE = 'Run /init as init process'

EVENTS = ('spapr_vlan_receive_wrote', 'spapr_vlan_h_add_logical_lan_buffer',
          'spapr_vlan_h_send_logical_lan', 'spapr_iommu_put',
          'spapr_iommu_indirect', 'spapr_iommu_stuff')
# The table's columns: hcalls, then the TCEs they wrote or cleared.
COLUMNS = ('receives', 'H_ADD_LOGICAL_LAN_BUFFER', 'H_SEND_LOGICAL_LAN',
           'H_PUT_TCE', 'H_PUT_TCE_INDIRECT', 'H_STUFF_TCE',
           'tces-put', 'tces-stuffed')

TRACE_LINE = re.compile(r'^(?:\d+@[\d.]+:)?(spapr_\w+) (.*)$')
FIELD = re.compile(r'(\w+)=(0x[0-9a-f]+|\d+)')


class Census:
    """Counts of the LAN's trace events, per column."""

    def __init__(self):
        self.counts = dict.fromkeys(COLUMNS, 0)

    def add_line(self, line):
        """Count one line of QEMU's trace log.

        >>> c = Census()
        >>> c.add_line('spapr_iommu_indirect liobn=0x71000002 ioba=0xc010000'
        ...            ' tcelist=0x2460000 iobaN=0xf tceN=0x34ef001 ret=0')
        >>> c.add_line('spapr_iommu_stuff liobn=0x71000002 ioba=0x200000'
        ...            ' tcevalue=0x0 npages=512 ret=0')
        >>> c.add_line('spapr_iommu_put liobn=0x71000000 ioba=0x1000'
        ...            ' tce=0x23b0003 ret=0')
        >>> c.add_line('spapr_vlan_h_add_logical_lan_buffer '
        ...            'H_ADD_LOGICAL_LAN_BUFFER(0x71000002, 0x8001)')
        >>> c.add_line('12@1.5:spapr_vlan_receive_wrote rxq entry '
        ...            '(ptr=0x10): 0x1 0x2')
        >>> {k: v for k, v in c.counts.items() if v}
        ... # doctest: +NORMALIZE_WHITESPACE
        {'receives': 1, 'H_ADD_LOGICAL_LAN_BUFFER': 1,
         'H_PUT_TCE_INDIRECT': 1, 'H_STUFF_TCE': 1, 'tces-put': 16,
         'tces-stuffed': 512}
        """
        m = TRACE_LINE.match(line)
        if not m:
            return
        event, rest = m.groups()
        fields = {k: int(v, 0) for k, v in FIELD.findall(rest)}
        if event.startswith('spapr_iommu_') and \
                fields.get('liobn') != LAN_REG:
            return
        if event == 'spapr_vlan_receive_wrote':
            self.counts['receives'] += 1
        elif event == 'spapr_vlan_h_add_logical_lan_buffer':
            self.counts['H_ADD_LOGICAL_LAN_BUFFER'] += 1
        elif event == 'spapr_vlan_h_send_logical_lan':
            self.counts['H_SEND_LOGICAL_LAN'] += 1
        elif event == 'spapr_iommu_put':
            # QEMU traces the last entry of an H_PUT_TCE_INDIRECT as its
            # index; H_PUT_TCE writes one.
            self.counts['H_PUT_TCE'] += 1
            self.counts['tces-put'] += 1
        elif event == 'spapr_iommu_indirect':
            self.counts['H_PUT_TCE_INDIRECT'] += 1
            self.counts['tces-put'] += fields['iobaN'] + 1
        elif event == 'spapr_iommu_stuff':
            self.counts['H_STUFF_TCE'] += 1
            self.counts['tces-stuffed'] += fields['npages']

    def since(self, before):
        return {k: self.counts[k] - before[k] for k in COLUMNS}


class TraceLog:
    """QEMU's trace log, read as it grows."""

    def __init__(self, path):
        self.path = path
        self.census = Census()
        self.pos = 0
        self.partial = ''

    def read(self):
        try:
            with open(self.path, encoding='utf-8', errors='replace') as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return False
        lines = (self.partial + data).split('\n')
        self.partial = lines.pop()
        for line in lines:
            self.census.add_line(line)
        return bool(lines)

    def snapshot(self):
        self.read()
        return dict(self.census.counts)

    def wait(self, what, done, timeout):
        deadline = time.monotonic() + timeout
        while not done(self.census.counts):
            if time.monotonic() > deadline:
                raise Failed(f'{what}: not within {timeout} s; counts '
                             f'{self.census.counts}')
            if not self.read():
                time.sleep(POLL_S)

    def wait_quiet(self, what):
        """Until no event has come for QUIET_S."""
        deadline = time.monotonic() + QUIET_TIMEOUT_S
        last = time.monotonic()
        while time.monotonic() - last < QUIET_S:
            if self.read():
                last = time.monotonic()
            if time.monotonic() > deadline:
                raise Failed(f'{what}: the trace was not quiet for '
                             f'{QUIET_S} s within {QUIET_TIMEOUT_S} s')
            time.sleep(POLL_S)


def plain_frame(size):
    """A frame to the guest that it takes and drops without answering.

    >>> f = plain_frame(64)
    >>> len(f), f[:6] == mac_bytes(GUEST_MAC), f[12:14].hex()
    (64, True, '88b5')
    """
    head = mac_bytes(GUEST_MAC) + mac_bytes(PEER_MAC) + \
        struct.pack('!H', ETH_P_EXPERIMENTAL)
    return head + bytes(size - len(head))


def frame_kind(frame):
    """What a frame the guest sent is, in a word.

    >>> frame_kind(echo_request(1))
    'ipv4-icmp-8'
    >>> frame_kind(bytes(12) + bytes.fromhex('86dd') + bytes(6) + b'\\x3a'
    ...            + bytes(33) + b'\\x85')
    'ipv6-icmp-133'
    >>> frame_kind(bytes(12) + bytes.fromhex('86dd') + bytes(6) + b'\\x00'
    ...            + bytes(33) + b'\\x3a' + bytes(7) + b'\\x8f')
    'ipv6-icmp-143'
    """
    ethertype = frame[12:14].hex()
    if ethertype == '0800':
        proto = frame[23]
        kind = f'ipv4-{ {1: "icmp", 2: "igmp"}.get(proto, proto)}'
        return f'{kind}-{frame[14 + (frame[14] & 0xf) * 4]}' \
            if proto == 1 else kind
    if ethertype == '86dd':
        # A hop-by-hop header (MLD's router alert) comes before ICMPv6.
        next_header, at = frame[20], 54
        if next_header == 0:
            next_header, at = frame[54], 54 + (frame[55] + 1) * 8
        return f'ipv6-icmp-{frame[at]}' if next_header == 58 else \
            f'ipv6-{next_header}'
    return f'ethertype-{ethertype}'


class Guest:
    """The booted guest, its trace log and the UDP socket at the far end
    of its netdev."""

    def __init__(self, args, tmp):
        self.trace = TraceLog(args.trace or os.path.join(tmp, 'trace.log'))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(('127.0.0.1', 0))
        self.udp.setblocking(False)
        trace = [a for e in EVENTS for a in ('-trace', f'enable={e}')]
        case = {'machine': 'pseries-7.2', 'pools': None,
                'qemu_args': [*trace, '-D', self.trace.path]}
        self.qemu = Qemu(args, case, tmp, 'census-qemu',
                         self.udp.getsockname()[1])
        self.sent = {}

    def to_lan(self, frame):
        self.udp.sendto(frame, ('127.0.0.1', self.qemu.port))

    def drain(self):
        """The sequence numbers of the echo replies among the frames the
        guest has sent since the last call; every frame's kind counted."""
        seqs = set()
        while True:
            try:
                frame = self.udp.recv(65536)
            except BlockingIOError:
                return seqs
            seq = echo_reply_seq(frame)
            if seq is not None:
                seqs.add(seq)
            kind = frame_kind(frame)
            self.sent[kind] = self.sent.get(kind, 0) + 1

    def stop(self):
        self.qemu.stop()
        self.udp.close()


def receive(guest, frames):
    """frames into the guest's LAN, BATCH at a time, each batch once QEMU
    has written the last into the guest's queue."""
    start = guest.trace.census.counts['receives']
    for i in range(0, len(frames), BATCH):
        for frame in frames[i:i + BATCH]:
            guest.to_lan(frame)
        sent = min(i + BATCH, len(frames))
        guest.trace.wait(f'{sent} frames received',
                         lambda c: c['receives'] - start >= sent,
                         FRAMES_TIMEOUT_S)


def echoes(guest, count):
    """count echo requests, BATCH at a time; every reply must come."""
    guest.drain()
    answered = set()
    for i in range(0, count, BATCH):
        seqs = set(range(i + 1, min(i + BATCH, count) + 1))
        for seq in seqs:
            guest.to_lan(echo_request(seq))
        deadline = time.monotonic() + FRAMES_TIMEOUT_S
        while not seqs <= answered:
            if time.monotonic() > deadline:
                raise Failed(f'echo replies: {len(answered)} of '
                             f'{max(seqs)} within {FRAMES_TIMEOUT_S} s')
            answered |= guest.drain()
            time.sleep(POLL_S)


def console_command(guest, command):
    guest.qemu.p.stdin.write(f'run: {command}\n'.encode())
    guest.qemu.p.stdin.flush()
    guest.qemu.expect_console(f'illan-guest: ran: {command}: exit 0',
                              FRAMES_TIMEOUT_S)


def scenario(results, guest, name, act, settle=True):
    """settle: wait for the trace to be quiet before the counts are
    taken; the boot's end is /init's start, which the open follows at once."""
    before = guest.trace.snapshot()
    guest.drain()
    guest.sent.clear()
    t0 = time.monotonic()
    act()
    if settle:
        guest.trace.wait_quiet(name)
    guest.trace.read()
    guest.drain()
    results[name] = guest.trace.census.since(before)
    results[name]['seconds'] = round(time.monotonic() - t0, 1)
    results[name]['sent'] = dict(sorted(guest.sent.items()))
    row = ' '.join(f'{results[name][k]:>{len(k)}}' for k in COLUMNS)
    sent = ','.join(f'{k}={v}' for k, v in sorted(guest.sent.items()))
    print(f'{name:<14} {row}  {sent}', flush=True)


def posted(counts):
    """Buffers the guest has posted and QEMU has not yet filled."""
    return counts['H_ADD_LOGICAL_LAN_BUFFER'] - counts['receives']


# Where Linux 6.1 puts a pool's buffers on a 64 KiB-page kernel, and so
# how many 4 KiB TCEs each mapping takes (docs/devel/linux-hcalls.md).
TCE_PAGE = 4096
PAGE_SIZE = 65536
NET_SKB_PAD = 128
# Page fragments, for the 2 KiB and 16 KiB pools: the buffer, the pad
# and the skb_shared_info, cache-line aligned.
FRAGMENT = {2048: 2560, 16384: 16896}
# kmalloc objects, aligned to their power-of-two size, for the others.
KMALLOC_TCES = {512: 1, 65536: 17}
# What ibmveth_open maps besides the pools: the buffer list and the
# filter list (4 KiB each), the receive queue and the send buffer (a
# 64 KiB page each).
OPEN_AREAS = (1, 1, 16, 16)
OPEN_POOLS = ((65536, 256), (2048, 512), (512, 256))
MTU_9000_POOLS = ((65536, 256), (16384, 256), (2048, 512), (512, 256))


def tce_pages(addr, length):
    return (addr % TCE_PAGE + length + TCE_PAGE - 1) // TCE_PAGE


class FragCache:
    """The page a CPU's NAPI allocations carve fragments from, top down,
    starting a fresh page when the next does not fit.  On this guest
    only ibmveth's pool refills use it.

    >>> c = FragCache()
    >>> [c.tces(2048) for _ in range(8)]
    [1, 2, 1, 2, 2, 1, 2, 1]
    """

    def __init__(self):
        self.offset = -1

    def tces(self, bufsize):
        size = FRAGMENT[bufsize]
        if self.offset < size:
            self.offset = PAGE_SIZE
        self.offset -= size
        return tce_pages(self.offset + NET_SKB_PAD, bufsize)


def predict_maps(cache, pools, areas=()):
    """H_PUT_TCE, H_PUT_TCE_INDIRECT and TCEs for mapping areas of so many
    TCEs, then pools' buffers in the order ibmveth_replenish_task fills
    them: one TCE is an H_PUT_TCE, more an H_PUT_TCE_INDIRECT."""
    tces = list(areas)
    for bufsize, count in pools:
        for _ in range(count):
            tces.append(KMALLOC_TCES.get(bufsize) or cache.tces(bufsize))
    return {'H_PUT_TCE': tces.count(1),
            'H_PUT_TCE_INDIRECT': len(tces) - tces.count(1),
            'tces-put': sum(tces)}


def check(results, posted_before_mtu):
    """What the source reading says, where it is deterministic."""
    errors = []

    def expect(name, column, value):
        got = results[name][column]
        if got != value:
            errors.append(f'{name}: {column} {got}, expected {value}')

    cache = FragCache()
    expect('boot', 'H_STUFF_TCE', 128)  # a 256 MiB window, 512 per call
    expect('open', 'H_ADD_LOGICAL_LAN_BUFFER', 1024)
    for column, value in predict_maps(cache, OPEN_POOLS,
                                      OPEN_AREAS).items():
        expect('open', column, value)
    for name in ('rx-1000x1000', 'rx-1000x64', 'echo-1000'):
        expect(name, 'receives', FRAMES)
    # At and above rx_copybreak each frame's buffer is unmapped; the pool
    # is refilled whole once fewer than 7/8 remain, so up to 64 of the
    # 512 may still be out when the frames stop.
    expect('rx-1000x1000', 'H_STUFF_TCE', FRAMES)
    readds = results['rx-1000x1000']['H_ADD_LOGICAL_LAN_BUFFER']
    if not FRAMES - 64 <= readds <= FRAMES:
        errors.append(f'rx-1000x1000: {readds} buffers added again, '
                      f'expected {FRAMES - 64} to {FRAMES}')
    for column, value in predict_maps(cache, ((2048, readds),)).items():
        expect('rx-1000x1000', column, value)
    # Below rx_copybreak the buffer is added again as it was mapped.
    for name in ('rx-1000x64', 'echo-1000'):
        expect(name, 'H_ADD_LOGICAL_LAN_BUFFER', FRAMES)
        for column in ('H_PUT_TCE', 'H_PUT_TCE_INDIRECT', 'H_STUFF_TCE'):
            expect(name, column, 0)
    # A send is a copy into the send buffer mapped at open: one hcall.
    if results['echo-1000']['sent'].get('ipv4-icmp-0') != FRAMES:
        errors.append('echo-1000: not one reply per echo')
    # The close unmaps each posted buffer and the four areas; the open
    # adds pools 0, 1, 2 (16 KiB, for MTU 9000) and 4.
    expect('mtu-9000', 'H_STUFF_TCE', posted_before_mtu + len(OPEN_AREAS))
    expect('mtu-9000', 'H_ADD_LOGICAL_LAN_BUFFER', 1280)
    for column, value in predict_maps(cache, MTU_9000_POOLS,
                                      OPEN_AREAS).items():
        expect('mtu-9000', column, value)
    # Idle, ibmveth makes no hcall; the IPv6 stack may still send a
    # router solicitation or a listener report.
    for column in COLUMNS:
        if column != 'H_SEND_LOGICAL_LAN':
            expect('idle-10s', column, 0)
    stray = set(results['idle-10s']['sent']) - {'ipv6-icmp-133',
                                                 'ipv6-icmp-143'}
    if stray:
        errors.append(f'idle-10s: sent {sorted(stray)}')
    return errors


def census(args, tmp):
    results = {}
    guest = Guest(args, tmp)
    try:
        scenario(results, guest, 'boot',
                 lambda: guest.qemu.expect_console(INIT_LINE,
                                                   BOOT_TIMEOUT_S),
                 settle=False)
        scenario(results, guest, 'open',
                 lambda: guest.qemu.expect_console('illan-guest: eth0 up',
                                                   BOOT_TIMEOUT_S))
        scenario(results, guest, 'rx-1000x1000',
                 lambda: receive(guest, [plain_frame(1000)] * FRAMES))
        scenario(results, guest, 'rx-1000x64',
                 lambda: receive(guest, [plain_frame(64)] * FRAMES))
        scenario(results, guest, 'echo-1000', lambda: echoes(guest, FRAMES))
        posted_before_mtu = posted(guest.trace.snapshot())
        scenario(results, guest, 'mtu-9000',
                 lambda: console_command(guest, MTU_COMMAND))
        scenario(results, guest, 'idle-10s', lambda: time.sleep(IDLE_S))
    finally:
        guest.stop()
    results['posted-before-mtu'] = posted_before_mtu
    return results, check(results, posted_before_mtu)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--guest', default='build/qemu-guest',
                    help='vmlinux and initrd.img (install-qemu-guest.sh)')
    ap.add_argument('--qemu', default='qemu-system-ppc64')
    ap.add_argument('--json', metavar='FILE',
                    help='write the counts per scenario to FILE')
    ap.add_argument('--trace', metavar='FILE',
                    help="keep QEMU's trace log as FILE")
    args = ap.parse_args()
    for name in ('vmlinux', 'initrd.img'):
        path = os.path.join(args.guest, name)
        if not os.path.exists(path):
            print(f'hcall-census: {path} is missing; run '
                  'scripts/install-qemu-guest.sh', file=sys.stderr)
            return 1
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    t0 = time.monotonic()
    print(f'{"scenario":<14} {" ".join(COLUMNS)}', flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix='illan-census-') as tmp:
            results, errors = census(args, tmp)
    except Failed as e:
        print(f'hcall-census: FAIL: {e}', flush=True)
        print('0 passed, 1 failed')
        return 1
    except KeyboardInterrupt:
        print('hcall-census: interrupted; QEMU stopped', file=sys.stderr)
        return 130
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)
            f.write('\n')
    for error in errors:
        print(f'hcall-census: FAIL: {error}')
    print(f'hcall-census: {len(results) - 1} scenarios, '
          f'{results["posted-before-mtu"]} buffers posted before the MTU '
          f'change, {time.monotonic() - t0:.0f} s')
    print(f'{0 if errors else 1} passed, {1 if errors else 0} failed')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
