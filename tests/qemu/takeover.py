#!/usr/bin/env python3
"""make check-qemu: a Linux guest booted on QEMU hands its logical LAN to
illan and takes it back.

Per case: QEMU boots the ppc64el guest (scripts/install-qemu-guest.sh
makes it), its spapr-vlan on a dgram netdev whose far end is a UDP
socket of ours, so that we see every frame the guest sends.  The guest
migrates to illan, whose spapr-vlan sits on an af-xdp netdev on a veth
pair; the pair's other end, in a namespace of its own, is the guest's
permanent neighbour 10.99.0.1.  From there we send ICMP echo requests;
the guest is not running while illan holds it, so illan only puts them
into its buffers.  Then a fresh QEMU takes the guest back, and the
guest must answer every echo out of that QEMU's netdev.  illan records
the LAN's interrupt in the carried interrupt controller, but QEMU 7.2
under TCG does not carry a CPU's pending external interrupt across a
migration, so the guest may not look at its queue until its next
interrupt: if the replies do not come, a keystroke on its console (the
spapr-vty's interrupt) is the nudge, and the transcript says whether it
was needed.  A frame into QEMU's own netdev is only a diagnosis when
even the nudge does not bring them.  Last, QEMU hands the guest to illan
a second time, started without -M and -m (it takes them from the
stream), and the buffers the guest has posted must be those it had
posted at the first takeover: it took back as many as the echoes used.
"""

import argparse
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'bench'))
from bench import Failed, Proc, Qmp, QmpError, run  # noqa: E402

SKIP = 77
GUEST_MAC = '02:00:00:00:99:02'
GUEST_IP = '10.99.0.2'
PEER_MAC = '02:00:00:00:99:01'
PEER_IP = '10.99.0.1'
LAN_REG = 0x71000002         # QEMU's unit address for the first spapr-vlan
ECHO_ID = 0x1111
BOOT_TIMEOUT_S = 90
START_TIMEOUT_S = 20
MIGRATE_TIMEOUT_S = 60
DELIVER_TIMEOUT_S = 10
# How long the guest has to answer on its own after it is back, before
# the nudge, and then after it.
QUIET_REPLY_S = 5
NUDGED_REPLY_S = 10
POLL_S = 0.05
# The nudge: a key the guest's tty echoes (/init leaves it in echo mode).
KEY = b'~'
ECHO_TIMEOUT_S = 5
MAX_BANDWIDTH = 4 << 30      # bytes/s: QEMU's default of 32 MiB/s is slow

CASES = {
    'pseries-7.2-pools': {'machine': 'pseries-7.2', 'pools': 'on'},
    'pseries-7.2-page': {'machine': 'pseries-7.2', 'pools': 'off'},
    # QEMU's pseries-2.5 pins pools off; its TCG has no HTM for POWER9.
    'pseries-2.5': {'machine': 'pseries-2.5', 'pools': None,
                    'qemu_args': ['-machine', 'cap-htm=off',
                                  '-cpu', 'POWER9']},
    'pseries-7.2-hash': {'machine': 'pseries-7.2', 'pools': 'on',
                         'append': 'disable_radix'},
}


# --- frames ----------------------------------------------------------------

def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(':'))


def inet_checksum(data):
    if len(data) % 2:
        data += b'\0'
    total = sum(struct.unpack(f'!{len(data) // 2}H', data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def echo_request(seq):
    """An Ethernet frame: ICMP echo request ECHO_ID/seq, peer to guest."""
    icmp = struct.pack('!BBHHH', 8, 0, 0, ECHO_ID, seq) + bytes(range(56))
    icmp = icmp[:2] + struct.pack('!H', inet_checksum(icmp)) + icmp[4:]
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(icmp), seq, 0, 64,
                     1, 0, socket.inet_aton(PEER_IP),
                     socket.inet_aton(GUEST_IP))
    ip = ip[:10] + struct.pack('!H', inet_checksum(ip)) + ip[12:]
    return mac_bytes(GUEST_MAC) + mac_bytes(PEER_MAC) + b'\x08\x00' + ip + icmp


def echo_reply_seq(frame):
    """The sequence number if frame is the guest's reply to one of ours.

    >>> req = echo_request(3)
    >>> echo_reply_seq(req) is None
    True
    >>> rep = req[6:12] + req[:6] + req[12:26] + req[30:34] + req[26:30] \\
    ...     + b'\\0' + req[35:]
    >>> echo_reply_seq(rep)
    3
    """
    if len(frame) < 42 or frame[12:14] != b'\x08\x00' or frame[23] != 1:
        return None
    icmp = frame[14 + (frame[14] & 0xf) * 4:]
    if len(icmp) < 8 or icmp[0] != 0 or frame[30:34] != \
            socket.inet_aton(PEER_IP):
        return None
    _, _, _, ident, seq = struct.unpack('!BBHHH', icmp[:8])
    return seq if ident == ECHO_ID else None


def send_echoes_main(args):
    """In the peer's namespace: --count echo requests out of --send-echo."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((args.send_echo, 0))
    for seq in range(1, args.count + 1):
        sock.send(echo_request(seq))
    return 0


def free_udp_port():
    """A port for QEMU's end of the dgram netdev, so that we can send to
    it (the kernel does not hand it out again at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


# --- processes -------------------------------------------------------------

class Qemu:
    """qemu-system-ppc64 with the guest's console on a pipe: its output
    is searched as it comes, a byte on its input is a keystroke."""

    def __init__(self, args, case, tmp, name, udp_port, incoming=None):
        self.port = free_udp_port()
        self.name = name
        self.qmp_path = os.path.join(tmp, f'{name}.qmp')
        self.log_path = os.path.join(tmp, f'{name}.log')
        append = ' '.join(['console=hvc0', case.get('append', '')]).strip()
        lan = f'spapr-vlan,netdev=n0,mac={GUEST_MAC}'
        if case['pools']:
            lan += f',use-rx-buffer-pools={case["pools"]}'
        argv = [args.qemu, '-M', case['machine'], '-m', '1G', '-smp', '1',
                *case.get('qemu_args', []), '-display', 'none', '-vga', 'none',
                '-nodefaults', '-serial', 'stdio',
                '-kernel', os.path.join(args.guest, 'vmlinux'),
                '-initrd', os.path.join(args.guest, 'initrd.img'),
                '-append', append,
                '-netdev', 'dgram,id=n0,local.type=inet,local.host=127.0.0.1,'
                f'local.port={self.port},remote.type=inet,'
                'remote.host=127.0.0.1,'
                f'remote.port={udp_port}',
                '-device', lan,
                '-qmp', f'unix:{self.qmp_path},server=on,wait=off']
        if incoming:
            argv += ['-incoming', incoming]
        self.log = open(self.log_path, 'wb')
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        os.set_blocking(self.p.stdout.fileno(), False)
        self.console = b''
        self.qmp = None
        Proc.live.append(self)

    def read_console(self, timeout):
        ready, _, _ = select.select([self.p.stdout], [], [], timeout)
        if ready:
            data = self.p.stdout.read() or b''
            self.log.write(data)
            self.console += data
            return bool(data)
        return False

    def expect_console(self, text, timeout):
        deadline = time.monotonic() + timeout
        while text.encode() not in self.console:
            left = deadline - time.monotonic()
            if self.p.poll() is not None:
                raise Failed(f'{self.name} exited: {self.stderr()}')
            if left <= 0:
                raise Failed(f'{self.name}: no "{text}" on the console in '
                             f'{timeout} s (log {self.log_path})')
            self.read_console(min(left, 1))

    def keystroke(self):
        """A key on the guest's console; whether the guest echoed it,
        which shows it took the console's interrupt."""
        seen = len(self.console)
        self.p.stdin.write(KEY)
        self.p.stdin.flush()
        deadline = time.monotonic() + ECHO_TIMEOUT_S
        while KEY not in self.console[seen:]:
            left = deadline - time.monotonic()
            if left <= 0 or self.p.poll() is not None:
                return False
            self.read_console(left)
        return True

    def connect(self):
        self.qmp = Qmp(self.qmp_path, self, START_TIMEOUT_S)
        return self.qmp

    def stderr(self):
        if not self.log.closed:
            while self.read_console(0):
                pass
            self.log.flush()
        with open(self.log_path, 'rb') as f:
            text = f.read().decode(errors='replace')
        return ' '.join(text.split())[-600:]

    def stop(self, sig=signal.SIGTERM, timeout=5):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()
        if self.qmp:
            self.qmp.close()
            self.qmp = None
        if self in Proc.live:
            Proc.live.remove(self)


class Illan:
    """illan in the device's namespace, waiting for a migration on its LAN
    over af-xdp; native XDP, or generic if the veth refuses it."""

    def __init__(self, args, case, tmp, name, ns, incoming, mode,
                 derive=False):
        """derive: no -M or -m, as the stream says them; its QMP is up
        only once the stream's beginning came."""
        self.qmp_path = os.path.join(tmp, f'{name}.qmp')
        self.mode = mode
        lan = f'spapr-vlan,reg={LAN_REG:#x},netdev=n0,mac={GUEST_MAC}'
        if case['pools']:
            lan += f',use-rx-buffer-pools={case["pools"]}'
        machine = [] if derive else ['-M', case['machine'], '-m', '1G']
        self.proc = Proc(name, [
            'ip', 'netns', 'exec', ns.dut, os.path.join(args.build, 'illan'),
            *machine, '-device', lan,
            '-netdev', f'af-xdp,id=n0,ifname=dut0,mode={mode},queues=1',
            '-qmp', f'unix:{self.qmp_path},server=on,wait=off',
            '-incoming', incoming],
            stderr_path=os.path.join(tmp, f'{name}.err'))
        self.p = self.proc.p
        self.qmp = None

    def connect(self):
        self.qmp = Qmp(self.qmp_path, self.proc, START_TIMEOUT_S)
        return self.qmp

    def stderr(self):
        return self.proc.stderr()

    def stop(self):
        if self.qmp:
            try:
                self.qmp.cmd('quit')
            except (QmpError, OSError):
                pass
            self.qmp.close()
            self.qmp = None
        self.proc.stop()


def start_illan(args, case, tmp, name, ns, incoming):
    """Native XDP first; a veth without it, or a queue the last illan's
    socket still holds for a moment, gets another start in generic mode."""
    for mode in ('native', 'skb'):
        ns.set_gro(mode)
        illan = Illan(args, case, tmp, name, ns, incoming, mode)
        try:
            illan.connect()
            return illan
        except (Failed, QmpError, OSError) as e:
            why = f'{e}; {illan.stderr()}'
            illan.stop()
            if mode == 'skb':
                raise Failed(f'{name}: {why}')
    raise AssertionError('unreachable')


# --- the namespaces ----------------------------------------------------------

class Netns:
    """iltko<pid>p holds peer0, the guest's neighbour; iltko<pid>d holds
    dut0, illan's end.  IPv6 off, so that only our echoes cross."""

    def __init__(self):
        self.peer = f'iltko{os.getpid()}p'
        self.dut = f'iltko{os.getpid()}d'
        self.made = []

    def __enter__(self):
        for ns in (self.peer, self.dut):
            run('ip', 'netns', 'add', ns)
            self.made.append(ns)
            self.run(ns, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1')
            self.run(ns, 'sysctl', '-qw',
                     'net.ipv6.conf.default.disable_ipv6=1')
            self.run(ns, 'ip', 'link', 'set', 'lo', 'up')
        run('ip', 'link', 'add', 'peer0', 'netns', self.peer, 'address',
            PEER_MAC, 'type', 'veth', 'peer', 'name', 'dut0', 'netns',
            self.dut)
        self.run(self.peer, 'ip', 'addr', 'add', f'{PEER_IP}/24',
                 'dev', 'peer0')
        self.run(self.peer, 'ip', 'neigh', 'add', GUEST_IP, 'lladdr',
                 GUEST_MAC, 'nud', 'permanent', 'dev', 'peer0')
        for ns, dev in ((self.peer, 'peer0'), (self.dut, 'dut0')):
            self.run(ns, 'ip', 'link', 'set', dev, 'up')
        return self

    def __exit__(self, *exc):
        for ns in self.made:
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)

    @staticmethod
    def run(ns, *argv):
        return run('ip', 'netns', 'exec', ns, *argv)

    def set_gro(self, mode):
        """Generic XDP on a veth sees frames only with NAPI on, which GRO
        turns on (as in bench.py)."""
        self.run(self.dut, 'ethtool', '-K', 'dut0', 'gro',
                 'on' if mode == 'skb' else 'off')

    def send_echoes(self, count):
        run('ip', 'netns', 'exec', self.peer, sys.executable,
            os.path.abspath(__file__), '--send-echo', 'peer0',
            '--count', str(count))


# --- one case ----------------------------------------------------------------

def exit_reason(proc):
    """What a process that is failing said: a destination whose load
    failed exits with the reason, shortly after its QMP goes away."""
    try:
        proc.p.wait(START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 'still running'
    return proc.stderr()


def wait_for(what, timeout, probe, proc=None):
    """probe()'s first true value, polled until the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except (QmpError, OSError) as e:
            if proc is None:
                raise
            raise Failed(f'{what}: {e}: {exit_reason(proc)}') from e
        if value:
            return value
        if proc is not None and proc.p.poll() is not None:
            raise Failed(f'{what}: the process exited: {proc.stderr()}')
        if time.monotonic() > deadline:
            raise Failed(f'{what}: not within {timeout} s')
        time.sleep(POLL_S)


def migrate(src, dst, uri, what):
    """src's guest to dst, which listens on uri; both report the end."""
    src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': MAX_BANDWIDTH})
    src.qmp.cmd('migrate', uri=uri)

    def src_done():
        info = src.qmp.cmd('query-migrate')
        if info.get('status') == 'failed':
            raise Failed(f'{what}: the source failed: '
                         f'{info.get("error-desc")}; {dst.stderr()}')
        return info.get('status') == 'completed'

    wait_for(f'{what}: source completed', MIGRATE_TIMEOUT_S, src_done, src)
    if dst.qmp is None:
        dst.connect()
    status = wait_for(f'{what}: destination loaded', MIGRATE_TIMEOUT_S,
                      lambda: (lambda s: s if s != 'inmigrate' else None)(
                          dst.qmp.cmd('query-status')['status']), dst)
    if status == 'paused':
        dst.qmp.cmd('cont')
    elif status != 'running':
        raise Failed(f'{what}: the destination is {status}, not running: '
                     f'{exit_reason(dst)}')


def lan_stats(illan):
    return illan.qmp.cmd('x-query-net-stats')['nics'][0]['device']


def posted(device):
    """The buffers the guest has posted: the total, and per pool."""
    return (device['rx-bufs-posted'],
            tuple((p['bufsize'], p['posted']) for p in device['pools']))


def wait_delivered(illan, before, count):
    """The frames illan's LAN put into guest buffers since before, once
    count have landed; the drops by reason if they do not."""
    deadline = time.monotonic() + DELIVER_TIMEOUT_S
    while True:
        now = lan_stats(illan)
        delivered = now['rx-frames'] - before['rx-frames']
        if delivered >= count:
            return delivered
        if time.monotonic() > deadline:
            drops = {k: v - before['rx-dropped'][k]
                     for k, v in now['rx-dropped'].items()
                     if v != before['rx-dropped'][k]}
            raise Failed(f'illan delivered {delivered} of {count} echoes in '
                         f'{DELIVER_TIMEOUT_S} s; dropped: {drops or "none"}')
        time.sleep(POLL_S)


class Replies:
    """The guest's echo replies among the frames QEMU's netdev sends us."""

    def __init__(self, sock):
        self.sock = sock
        self.seqs = set()

    def drain(self):
        while True:
            try:
                frame = self.sock.recv(65536)
            except BlockingIOError:
                return
            seq = echo_reply_seq(frame)
            if seq is not None:
                self.seqs.add(seq)

    def wait(self, wanted, timeout):
        """How many of the sequence numbers wanted have been answered,
        once all have or at the deadline."""
        deadline = time.monotonic() + timeout
        while not wanted <= self.seqs:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            select.select([self.sock], [], [], left)
            self.drain()
        return len(wanted & self.seqs)


def probe_queue(udp, qemu, replies, count):
    """Were the echoes still in the guest's queue?  One more echo through
    QEMU's own netdev raises the LAN's interrupt in QEMU, and the guest's
    poll then takes every entry the queue holds.  A diagnosis only: an
    idle LAN gets no such frame."""
    probe = count + 1
    udp.sendto(echo_request(probe), ('127.0.0.1', qemu.port))
    replies.wait(set(range(1, probe + 1)), NUDGED_REPLY_S)
    return len(replies.seqs & set(range(1, count + 1)))


def run_case(args, name, case, ns, tmp):
    t0 = time.monotonic()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(('127.0.0.1', 0))
    udp.setblocking(False)
    port = udp.getsockname()[1]
    procs = []

    def start(proc):
        procs.append(proc)
        proc.connect()
        return proc

    try:
        qa = start(Qemu(args, case, tmp, f'{name}-qemu1', port))
        qa.expect_console('illan-guest: eth0 up', BOOT_TIMEOUT_S)
        boot_s = time.monotonic() - t0

        uri1 = f'unix:{tmp}/{name}-1.mig'
        i1 = start_illan(args, case, tmp, f'{name}-illan1', ns, uri1)
        procs.append(i1)
        migrate(qa, i1, uri1, 'QEMU -> illan')
        qa.stop()
        first = lan_stats(i1)

        ns.send_echoes(args.pings)
        delivered = wait_delivered(i1, first, args.pings)

        uri2 = f'unix:{tmp}/{name}-2.mig'
        qb = start(Qemu(args, case, tmp, f'{name}-qemu2', port, uri2))
        replies = Replies(udp)
        replies.drain()
        replies.seqs.clear()
        migrate(i1, qb, uri2, 'illan -> QEMU')
        t_back = time.monotonic()
        recorded = i1.qmp.cmd('query-migrate').get('x-carried-irqs', {})
        # Its XDP program leaves dut0 with it, for the next illan.
        i1.stop()
        echoes = set(range(1, args.pings + 1))
        unnudged = replies.wait(echoes, QUIET_REPLY_S)
        echoed = qb.keystroke() if unnudged < args.pings else None
        total = replies.wait(echoes, NUDGED_REPLY_S)
        reply_s = time.monotonic() - t_back
        probed = probe_queue(udp, qb, replies, args.pings) \
            if total < args.pings else None

        # The second takeover as a user may start it: without -M and -m,
        # which illan takes from the stream, in the XDP mode that worked.
        uri3 = f'unix:{tmp}/{name}-3.mig'
        ns.set_gro(i1.mode)
        i2 = Illan(args, case, tmp, f'{name}-illan2', ns, uri3, i1.mode,
                   derive=True)
        procs.append(i2)
        # No QMP yet to say it listens: its socket does.
        wait_for(f'{name}-illan2 listening', START_TIMEOUT_S,
                 lambda: os.path.exists(uri3[len('unix:'):]), i2)
        migrate(qb, i2, uri3, 'QEMU -> illan again (-M, -m derived)')
        second = lan_stats(i2)
    finally:
        for proc in reversed(procs):
            proc.stop()
        udp.close()

    errors = []
    if delivered != args.pings:
        errors.append(f'illan delivered {delivered} frames, expected '
                      f'{args.pings}')
    if total != args.pings:
        errors.append(f'{total} echo replies after the return, expected '
                      f'{args.pings} (seqs {sorted(replies.seqs)})')
    if posted(first) != posted(second):
        errors.append(f'posted buffers {posted(second)} at the second '
                      f'takeover, {posted(first)} at the first')
    nudge = 'none needed' if unnudged == args.pings else \
        f'{unnudged} before it, {total} after' + \
        ('' if echoed else ' (the guest did not echo the key)')
    if probed is not None:
        nudge += f'; after a frame from QEMU\'s netdev: {probed}'
    recorded = ','.join(f'{k}={v}' for k, v in sorted(recorded.items()))
    print(f'{name}: delivered={delivered} recorded={recorded or "none"} '
          f'replies={total}/{args.pings} '
          f'nudge: {nudge}; reply {reply_s:.1f} s; posted '
          f'{posted(first)[0]} then {posted(second)[0]}; boot {boot_s:.0f} s, '
          f'case {time.monotonic() - t0:.0f} s'
          + ('' if not errors else ' FAIL: ' + '; '.join(errors)),
          flush=True)
    return not errors


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--build', default='build', help="illan's build tree")
    ap.add_argument('--guest', default='build/qemu-guest',
                    help='vmlinux and initrd.img (install-qemu-guest.sh)')
    ap.add_argument('--qemu', default='qemu-system-ppc64')
    ap.add_argument('--pings', type=int, default=8)
    ap.add_argument('--cases', default=','.join(CASES),
                    help='comma-separated, of: ' + ', '.join(CASES))
    ap.add_argument('--send-echo', metavar='IFNAME', help=argparse.SUPPRESS)
    ap.add_argument('--count', type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.send_echo:
        return send_echoes_main(args)
    if os.geteuid() != 0:
        print('takeover: skipped: needs root (network namespaces, XDP)')
        return SKIP
    names = args.cases.split(',')
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f'--cases: unknown {", ".join(unknown)}; '
                 f'known: {", ".join(CASES)}')
    for path in (os.path.join(args.guest, 'vmlinux'),
                 os.path.join(args.guest, 'initrd.img'),
                 os.path.join(args.build, 'illan')):
        if not os.path.exists(path):
            print(f'takeover: {path} is missing; run make check-qemu, or '
                  'scripts/install-qemu-guest.sh and make all', file=sys.stderr)
            return 1
    # SIGTERM and SIGHUP end the run as Ctrl-C does: through the finally
    # blocks that stop every process and delete the namespaces.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    passed = 0
    try:
        with tempfile.TemporaryDirectory(prefix='illan-takeover-') as tmp, \
                Netns() as ns:
            for name in names:
                try:
                    ok = run_case(args, name, CASES[name], ns, tmp)
                except (Failed, QmpError, OSError, RuntimeError) as e:
                    print(f'{name}: FAIL: {e}', flush=True)
                    ok = False
                passed += ok
    except KeyboardInterrupt:
        print('takeover: interrupted; every process and namespace removed',
              file=sys.stderr)
        return 130
    print(f'{passed} passed, {len(names) - passed} failed')
    return 0 if passed == len(names) else 1


if __name__ == '__main__':
    sys.exit(main())
