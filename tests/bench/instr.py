#!/usr/bin/python3
"""Instructions per received frame on illan's I/O and vCPU threads,
counted by valgrind's callgrind.

Time per frame on a shared 2-CPU machine moves by more than a trace
check costs; the instructions a thread runs per frame do not.  illan
runs under callgrind on the bench's veth pair (af-xdp, native, the
copy, the built-in guest in rxonly, pools on) twice, with a few frames
and with many more; the difference of the two runs' counts over the difference
of their frames leaves out start-up and shutdown.  The frames come from
an AF_PACKET socket in the generator's namespace, paced by the guest's
count so that none is dropped (callgrind runs illan some 50 times
slower).

As a program, the sender measure() runs in the generator's namespace:
    instr.py send IFNAME SIZE DST_MAC
sends as many frames as each line of its input says, then says "sent".
"""
import glob
import os
import socket
import sys
import tempfile
import time

FRAMES = (300, 3300)
# Callgrind's start-up and each window of frames take this long at most.
TIMEOUT_S = 120
# Frames on their way at once: below the rings' and pools' 256.
IN_FLIGHT = 32
# A function only each thread runs, to tell the threads' files apart.
THREAD_MARKS = {'io': 'receive_batch_locked', 'vcpu': 'napi_poll'}


def measure(build, ns, size, mac):
    """{'io': n, 'vcpu': n}: instructions per frame of @size bytes on
    each thread, illan from @build in @ns.dut.  Called by bench.py, whose
    processes and QMP client it uses; raises bench.Failed."""
    totals = [run_counted(build, ns, size, mac, n) for n in FRAMES]
    frames = FRAMES[1] - FRAMES[0]
    return {t: round((totals[1][t] - totals[0][t]) / frames, 1)
            for t in THREAD_MARKS}


def run_counted(build, ns, size, mac, frames):
    from bench import Failed, Proc, Qmp

    with tempfile.TemporaryDirectory(prefix='illan-instr-') as tmp:
        out = os.path.join(tmp, 'callgrind.out')
        qmp_path = os.path.join(tmp, 'qmp.sock')
        illan = Proc('illan under callgrind', [
            'ip', 'netns', 'exec', ns.dut, 'valgrind', '--tool=callgrind',
            '--separate-threads=yes', f'--callgrind-out-file={out}',
            os.path.join(build, 'illan'), '-M', 'pseries', '-nodefaults',
            '-device', f'spapr-vlan,id=net0,netdev=n0,mac={mac},'
            'use-rx-buffer-pools=on',
            '-netdev', 'af-xdp,id=n0,ifname=dut0,mode=native,queues=1,'
            'guest-umem=off',
            '-guest', 'ibmveth,id=g0,dev=net0,fwd=rxonly',
            '-qmp', f'unix:{qmp_path},server=on,wait=off'],
            stderr_path=os.path.join(tmp, 'illan.err'))
        sender = Proc('sender', [
            'ip', 'netns', 'exec', ns.gen, sys.executable,
            os.path.abspath(__file__), 'send', 'gen0', str(size), mac],
            stdin=True)
        try:
            qmp = Qmp(qmp_path, illan, timeout=TIMEOUT_S)
            feed(qmp, sender, frames)
            qmp.cmd('quit')
            if illan.p.wait(timeout=TIMEOUT_S):
                raise Failed(f'illan under callgrind: {illan.stderr()}')
        finally:
            sender.stop()
            illan.stop()
        return thread_totals(glob.glob(out + '-*'))


def feed(qmp, sender, frames):
    """@frames frames into the guest, never more than IN_FLIGHT of them
    unreceived; first one at a time until the guest has opened the
    device (frames before that are dropped, not received)."""
    from bench import Failed, guest_stats

    def received():
        return guest_stats(qmp)['rx-frames']

    def send(n):
        sender.write(str(n))
        sender.expect('sent', TIMEOUT_S)

    deadline = time.monotonic() + TIMEOUT_S
    start = received()
    while received() == start:
        if time.monotonic() > deadline:
            raise Failed('the guest under callgrind received nothing')
        send(1)
        time.sleep(0.05)
    start, sent = received(), 0
    deadline = time.monotonic() + TIMEOUT_S
    while (got := received() - start) < frames:
        if time.monotonic() > deadline:
            raise Failed(f'{got} of {frames} frames reached the guest '
                         'under callgrind')
        if sent - got < IN_FLIGHT and sent < frames:
            n = min(IN_FLIGHT - (sent - got), frames - sent)
            send(n)
            sent += n
        else:
            time.sleep(0.001)


def thread_totals(files):
    """Each thread's instructions, from callgrind's file per thread.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> for n, (fn, total) in enumerate([('receive_batch_locked', 7),
    ...                                  ('napi_poll', 9)]):
    ...     with open(f'{d}/out-0{n}', 'w') as f:
    ...         _ = f.write(f'fn=(1) {fn}\\nsummary: {total}\\n')
    >>> thread_totals(sorted(glob.glob(f'{d}/out-*')))
    {'io': 7, 'vcpu': 9}
    """
    totals = {}
    for path in files:
        with open(path) as f:
            text = f.read()
        for thread, mark in THREAD_MARKS.items():
            if mark in text:
                totals[thread] = summary(text)
    missing = set(THREAD_MARKS) - set(totals)
    if missing:
        raise ValueError(f'no callgrind file for {", ".join(missing)}')
    return totals


def summary(text):
    for line in text.splitlines():
        if line.startswith('summary:'):
            return int(line.split()[1])
    raise ValueError('callgrind file without a summary line')


def checksum(data):
    if len(data) % 2:
        data += b'\0'
    total = sum(int.from_bytes(data[i:i + 2], 'big')
                for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def udp_frame(size, dst):
    """xdp-gen's frame: IPv4 198.18.0.1 -> 198.18.0.2, UDP to the discard
    port, checksums right, so that the device's receive checksum runs as
    in the bench.

    >>> f = udp_frame(64, '52:54:00:12:34:56')
    >>> len(f), f[:6].hex(), checksum(f[14:34]), f[23]
    (64, '525400123456', 0, 17)
    >>> checksum(f[26:34] + bytes([0, 17]) + f[38:40] + f[34:])
    0
    """
    src, dst_ip = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])
    udp_len = size - 14 - 20
    payload = bytes(i & 0xff for i in range(42, size))
    ip = bytearray([0x45, 0]) + (20 + udp_len).to_bytes(2, 'big') + \
        bytes([0, 0, 0x40, 0, 64, 17, 0, 0]) + src + dst_ip
    ip[10:12] = checksum(bytes(ip)).to_bytes(2, 'big')
    udp = bytearray((1024).to_bytes(2, 'big') + (9).to_bytes(2, 'big') +
                    udp_len.to_bytes(2, 'big') + bytes(2) + payload)
    pseudo = src + dst_ip + bytes([0, 17]) + udp_len.to_bytes(2, 'big')
    udp[6:8] = (checksum(pseudo + bytes(udp)) or 0xffff).to_bytes(2, 'big')
    return bytes.fromhex(dst.replace(':', '') + '020000000001' + '0800') + \
        bytes(ip) + bytes(udp)


def send(ifname, size, dst):
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((ifname, 0))
    frame = udp_frame(size, dst)
    for line in sys.stdin:
        for _ in range(int(line)):
            tx.send(frame)
        print('sent', flush=True)


if __name__ == '__main__':
    if len(sys.argv) != 5 or sys.argv[1] != 'send':
        sys.exit(__doc__)
    send(sys.argv[2], int(sys.argv[3]), sys.argv[4])
