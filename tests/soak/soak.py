#!/usr/bin/env python3
"""make soak: illan under traffic and faults for minutes, then every
frame accounted for on every layer, memory and descriptors back to their
level, and no sanitizer report.

Two network namespaces, a generator's and the device's, joined by two
veth pairs, A and B (MTU 9000).  illan runs on one pair's device end:
spapr-vlan with buffer pools and offloads, af-xdp in native mode with
multi-buffer, the built-in guest in fwd=macswap.  On the generator's end
xdp-gen sends the 64/594/1518 mix as fast as it can and counts the echoes,
and a small sender of ours adds jumbo frames (some multicast).  Every
minute the machine live-migrates to a new illan on the other pair, and
back the next minute.  In between, on a schedule, the driver flaps the
link, deletes and re-creates the interface, resets the machine, toggles
the device's interrupt and multicast filters over qtest (H_VIO_SIGNAL,
H_MULTICAST_CTRL), changes the guest's MAC and MTU and the interface's
MTU.  See docs/devel/soak.md for the table it prints.
"""

import argparse
import collections
import os
import signal
import socket
import struct
import subprocess
import sys
import shutil
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'bench'))
from bench import (Failed, Netns, Proc, Qmp, QmpError,  # noqa: E402
                   flatten, print_table, run, tool, xdp_drops)

GEN_CPU = 0
NIC_MAC = '52:54:00:12:34:56'
OTHER_MAC = '52:54:00:12:34:57'
UNIT = 0x71000000                   # the first spapr-vlan's unit address
JUMBO_MTU = 9000
SMALL_MTU = 1500
# Linux's pools and the 16 KiB one, so that a jumbo frame finds a buffer.
POOLS = '512x256:2048x512:16384x256:65536x256'
MCAST_GROUP = '01:00:5e:00:00:fb'
ANNOUNCE_ROUNDS = 5                 # RARPs a destination sends (QEMU's)
START_TIMEOUT_S = 20
MIGRATE_TIMEOUT_S = 180
# Counters are stable when three reads 0.25 s apart agree: 0.5 s, longer
# than a sleeping guest leaves a frame it found without its interrupt
# (its 10 ms look and 250 ms wait, guest/ibmveth-guest.c).
STABLE_READS = 3
STABLE_GAP_S = 0.25
STABLE_TIMEOUT_S = 30
# A process's memory and descriptors are read this long after its machine
# started to run traffic (warm-up) and again just before it stops.
WARMUP_S = 15
# RSS may end this much above its warm-up level (see docs/devel/soak.md).
RSS_SLACK_KB = 16 * 1024
RSS_SLACK_SHARE = 0.10
ASAN_QUARANTINE_MB = 256            # ASan's default quarantine_size_mb
TSAN_RSS_FACTOR = 5                 # a byte and its shadow (gcc 12's TSan)
SANITIZER_MARKS = ('ERROR: AddressSanitizer', 'WARNING: ThreadSanitizer',
                   'ERROR: LeakSanitizer', 'runtime error:',
                   'SUMMARY: AddressSanitizer', 'SUMMARY: ThreadSanitizer',
                   'SUMMARY: UndefinedBehaviorSanitizer')


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(':'))


def mac_int(mac):
    return int.from_bytes(mac_bytes(mac), 'big')


# --- the jumbo sender (runs in the generator's namespace) ----------------

def ip_checksum(header):
    """The IPv4 header checksum (the header's own field zero).

    >>> hex(ip_checksum(bytes.fromhex(
    ...     '450000730000400040110000c0a80001c0a800c7')))
    '0xb861'
    """
    total = sum(struct.unpack(f'!{len(header) // 2}H', header))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def udp_frame(dst, src, length):
    """An IPv4/UDP frame of length bytes (no FCS), UDP checksum 0."""
    ip_len = length - 14
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, ip_len, 0, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    ip = ip[:10] + struct.pack('!H', ip_checksum(ip)) + ip[12:]
    udp = struct.pack('!HHHH', 9, 9, ip_len - 20, 0)
    return dst + src + b'\x08\x00' + ip + udp + bytes(length - 42)


def jumbo_main(args):
    """Jumbo and mid-size frames to the device's MAC, every eighth to a
    multicast group, at --rate frames a second; "done sent=N refused=M"
    on SIGTERM (refused: the kernel said no, the link being down)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((args.jumbo, 0))
    src = sock.getsockname()[4]
    dst = mac_bytes(args.dst)
    frames = [udp_frame(dst, src, 14 + JUMBO_MTU),
              udp_frame(dst, src, 4000),
              udp_frame(mac_bytes(MCAST_GROUP), src, 14 + JUMBO_MTU)]
    pattern = [0, 1, 0, 0, 1, 0, 0, 2]
    sent = refused = 0
    batch = max(1, args.rate // 100)
    print('ready', flush=True)
    while not stop:
        t0 = time.monotonic()
        for i in range(batch):
            try:
                sock.send(frames[pattern[(sent + refused) % len(pattern)]])
                sent += 1
            except OSError:
                refused += 1
        time.sleep(max(0, 0.01 - (time.monotonic() - t0)))
    print(f'done sent={sent} refused={refused}', flush=True)
    return 0


# --- the namespaces and the pairs -----------------------------------------

ns_run = Netns.run


class Rig(Netns):
    """ilsoak<pid>g holds genA and genB, ilsoak<pid>d dutA and dutB; IPv6
    off, so that nothing but our frames crosses them.  Leaving removes
    both, as bench.py's namespaces."""

    def __init__(self):
        super().__init__()
        self.gen = f'ilsoak{os.getpid()}g'
        self.dut = f'ilsoak{os.getpid()}d'

    def __enter__(self):
        for ns in (self.gen, self.dut):
            run('ip', 'netns', 'add', ns)
            self.made.append(ns)
            for conf in ('all', 'default'):
                ns_run(ns, 'sysctl', '-qw',
                       f'net.ipv6.conf.{conf}.disable_ipv6=1')
            ns_run(ns, 'ip', 'link', 'set', 'lo', 'up')
        for pair in 'AB':
            self.create(pair)
        return self

    def create(self, pair):
        run('ip', 'link', 'add', f'gen{pair}', 'netns', self.gen,
            'mtu', str(JUMBO_MTU), 'type', 'veth', 'peer', 'name',
            f'dut{pair}', 'netns', self.dut, 'mtu', str(JUMBO_MTU))
        ns_run(self.dut, 'ethtool', '-K', f'dut{pair}', 'gro', 'off')
        for ns, dev in ((self.gen, f'gen{pair}'), (self.dut, f'dut{pair}')):
            ns_run(ns, 'ip', 'link', 'set', dev, 'up')

    def delete(self, pair):
        ns_run(self.dut, 'ip', 'link', 'del', f'dut{pair}')

    def link(self, pair, up):
        ns_run(self.dut, 'ip', 'link', 'set', f'dut{pair}',
               'up' if up else 'down')

    def mtu(self, pair, mtu):
        ns_run(self.dut, 'ip', 'link', 'set', f'dut{pair}', 'mtu', str(mtu))

    def veth_stats(self, pair):
        """ethtool -S and the link's counters of both ends, flat."""
        stats = {}
        for side, ns in (('gen', self.gen), ('dut', self.dut)):
            dev = f'{side}{pair}'
            for line in ns_run(ns, 'ethtool', '-S', dev).splitlines()[1:]:
                key, _, value = line.strip().partition(': ')
                if key.startswith(('rx_queue_0_', 'tx_queue_0_')):
                    stats[f'v{side}.{key[11:] if key[0] == "r" else key}'] \
                        = int(value)
            for key in ('rx_packets', 'rx_dropped', 'tx_packets',
                        'tx_dropped'):
                stats[f'v{side}.{key}'] = int(ns_run(
                    ns, 'cat', f'/sys/class/net/{dev}/statistics/{key}'))
        return stats


# --- traffic on one pair --------------------------------------------------

class Traffic:
    """The counting listener (xdp-gen --listen) runs from before anything
    is sent on the pair until after the last echo came back; its tx
    counters are thus all the pair's generator end sent."""

    def __init__(self, args, rig, pair):
        self.args, self.rig, self.pair = args, rig, pair
        self.listener = self.sender = self.jumbo = None
        self.veth0 = rig.veth_stats(pair)
        self.listener = self._gen('--listen')

    def _gen(self, *flags):
        proc = Proc(f'xdp-gen gen{self.pair}',
                    ['ip', 'netns', 'exec', self.rig.gen,
                     tool(self.args, 'xdp-gen'), '-i', f'gen{self.pair}',
                     '-t', str(10 * self.args.secs + 3600), '-c',
                     str(GEN_CPU), *flags])
        proc.expect('ready', START_TIMEOUT_S)
        return proc

    def start(self):
        self.sender = self._gen('-s', 'mix', '-d', NIC_MAC)
        self.jumbo = Proc(f'jumbo gen{self.pair}',
                          ['ip', 'netns', 'exec', self.rig.gen,
                           sys.executable, os.path.abspath(__file__),
                           '--jumbo', f'gen{self.pair}', '--dst', NIC_MAC,
                           '--rate', str(self.args.jumbo_rate)])
        self.jumbo.expect('ready', START_TIMEOUT_S)

    @staticmethod
    def _done(proc):
        proc.send(signal.SIGTERM)
        done = proc.expect('done', START_TIMEOUT_S)
        proc.stop()
        return done

    def stop_senders(self, ledger):
        if self.sender:
            ledger['gen.xdp-offered'] += self._done(self.sender)['runs']
            jumbo = self._done(self.jumbo)
            ledger['gen.jumbo-offered'] += jumbo['sent']
            ledger['gen.jumbo-refused'] += jumbo['refused']
            self.sender = self.jumbo = None

    def close(self, ledger):
        """After stop_senders and the echoes: the listener's counts and
        the veth's over this traffic's life."""
        done = self._done(self.listener)
        ledger['gen.took'] += done['tx_packets']
        ledger['gen.refused'] += done['tx_dropped']
        ledger['gen.echoes'] += done['rx_frames']
        end = self.rig.veth_stats(self.pair)
        for key, value in end.items():
            ledger[key] += value - self.veth0.get(key, 0)


# --- illan ----------------------------------------------------------------

def proc_mem(pid):
    """(VmRSS in kB, open descriptors)."""
    rss = 0
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f'/proc/{pid}/fd'))


class Qtest:
    """illan connects to our socket; one line out, one line back."""

    def __init__(self, path):
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen(1)
        self.server.settimeout(START_TIMEOUT_S)
        self.sock = None
        self.buf = b''

    def accept(self):
        self.sock, _ = self.server.accept()
        self.sock.settimeout(START_TIMEOUT_S)
        self.server.close()

    def hcall(self, *args):
        self.sock.sendall(('hcall ' + ' '.join(hex(a) for a in args) +
                           '\n').encode())
        while b'\n' not in self.buf:
            data = self.sock.recv(4096)
            if not data:
                raise Failed('qtest: illan hung up')
            self.buf += data
        line, _, self.buf = self.buf.partition(b'\n')
        words = line.decode().split()
        if words[0] != 'OK':
            raise Failed(f'qtest: {line.decode()}')
        return int(words[1])

    def close(self):
        if self.sock:
            self.sock.close()


class Illan:
    """One illan process on one pair, its QMP and qtest connections, and
    what it counted."""

    serial = 0

    def __init__(self, args, rig, pair, tmp, incoming=None):
        Illan.serial += 1
        self.name = f'illan-{Illan.serial}'
        self.pair, self.incoming = pair, incoming
        self.err = os.path.join(args.logs, f'{self.name}.err')
        qmp_path = os.path.join(tmp, f'{self.name}.qmp')
        self.qtest = Qtest(os.path.join(tmp, f'{self.name}.qtest'))
        argv = ['ip', 'netns', 'exec', rig.dut,
                os.path.join(args.build, 'illan'), '-M', 'pseries',
                '-nodefaults', '-m', '256M',
                '-device', f'spapr-vlan,id=net0,netdev=n0,mac={NIC_MAC},'
                'use-rx-buffer-pools=on,offloads=on',
                '-netdev', f'af-xdp,id=n0,ifname=dut{pair},mode=native,'
                'queues=1,multi-buffer=on',
                '-guest', f'ibmveth,id=g0,dev=net0,fwd=macswap,pools={POOLS}',
                '-qmp', f'unix:{qmp_path},server=on,wait=off',
                '-qtest', f'unix:{self.qtest.server.getsockname()}',
                '-qtest-log', 'none']
        if incoming:
            argv += ['-incoming', incoming]
        self.proc = Proc(self.name, argv, stderr_path=self.err)
        self.qtest.accept()
        self.qmp = Qmp(qmp_path, self.proc, START_TIMEOUT_S)
        self.mem = {'start': proc_mem(self.proc.pid)}
        self.active_since = None

    def cmd(self, name, **args):
        if self.proc.p.poll() is not None:
            raise Failed(f'{self.name} exited: {self.proc.stderr()}')
        return self.qmp.cmd(name, **args)

    def counters(self):
        """The net core's, the device's and the guest's counters: they
        live as long as the process."""
        net = self.cmd('x-query-net-stats')
        guests = self.cmd('x-query-guest-stats')['guests']
        flat = {}
        flat.update(flatten(net['nics'][0], 'nic.'))
        nd = dict(net['netdevs'][0])
        backend = nd.pop('backend', {})
        flat.update(flatten(nd, 'netdev.'))
        flat.update({f'netdev.backend.{k}': v for k, v in backend.items()
                     if k in ('tx-over-mtu', 'reopens', 'link-changes')})
        if guests:
            flat.update(flatten(guests[0], 'guest.'))
        return flat

    def queue(self):
        """Queue 0's counters and the kernel's XDP_STATISTICS: they live
        as long as the socket, i.e. until the interface goes away."""
        backend = self.cmd('x-query-net-stats')['netdevs'][0]['backend']
        queues = backend.get('queues') or [{}]
        q = {k: v for k, v in queues[0].items()
             if isinstance(v, int) and k not in ('queue', 'rx-meta-hash',
                                                 'rx-meta-flags',
                                                 'rx-meta-timestamp')}
        return {'xsk.' + k: v for k, v in q.items()}, backend

    def wait_backend(self, what, check):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            backend = self.queue()[1]
            if check(backend):
                return backend
            if time.monotonic() > deadline:
                raise Failed(f'{self.name}: af-xdp not {what}: {backend}')
            time.sleep(0.05)

    def close_epoch(self, ledger):
        for key, value in self.queue()[0].items():
            ledger[key] += value

    def sample(self, when):
        self.mem[when] = proc_mem(self.proc.pid)

    def quit(self, ledger):
        """The process's counters into the ledger, then quit."""
        self.sample('end')
        for key, value in self.counters().items():
            ledger[key] += value
        try:
            self.qmp.cmd('quit')
        except (QmpError, OSError):
            pass
        self.qmp.close()
        try:
            self.proc.p.wait(START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
        self.proc.stop()
        self.qtest.close()

    def reports(self):
        """Sanitizer lines in its stderr, and a bad exit status."""
        with open(self.err) as f:
            lines = [line.rstrip() for line in f
                     if any(m in line for m in SANITIZER_MARKS)]
        if self.proc.p.returncode not in (0, None):
            lines.append(f'{self.name} exited with status '
                         f'{self.proc.p.returncode}')
        return lines


# The counters of frames; others (CPU time, wake-ups, polls) move on an
# idle machine.
FRAME_COUNTERS = ('frames', 'dropped', 'drops', 'errors', 'delivered',
                  'failed', 'full', 'oversize', 'over-mtu', 'invalid',
                  'too-long', 'truncated')


def frame_counts(counters):
    return {k: v for k, v in counters.items()
            if any(w in k for w in FRAME_COUNTERS)}


def stable(read, what):
    """Waits until read() returns the same STABLE_READS times in a row."""
    deadline = time.monotonic() + STABLE_TIMEOUT_S
    last, same = None, 0
    while same < STABLE_READS:
        if time.monotonic() > deadline:
            raise Failed(f'{what} still moving after {STABLE_TIMEOUT_S} s')
        value = read()
        same = same + 1 if value == last else 1
        last = value
        time.sleep(STABLE_GAP_S)


# --- the soak -------------------------------------------------------------

class Soak:
    def __init__(self, args, rig, tmp):
        self.args, self.rig, self.tmp = args, rig, tmp
        self.ledger = collections.Counter()
        self.events = collections.Counter()
        self.procs = []
        self.traffic = {}
        self.illan = None

    def log(self, what):
        with open(os.path.join(self.args.logs, 'soak.log'), 'a') as f:
            f.write(f'{time.time():.3f} {self.illan.name} {what}\n')

    # The machine and its traffic.

    def start(self):
        self.traffic['A'] = Traffic(self.args, self.rig, 'A')
        self.illan = self.spawn('A')
        self.wait_running(self.illan)
        self.traffic['A'].start()
        self.illan.active_since = time.monotonic()

    def spawn(self, pair, incoming=None):
        illan = Illan(self.args, self.rig, pair, self.tmp, incoming)
        self.procs.append(illan)
        return illan

    def wait_running(self, illan):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            guests = illan.cmd('x-query-guest-stats')['guests']
            if illan.cmd('query-status')['status'] == 'running' and \
                    guests and illan.cmd('x-query-net-stats')['nics'][0][
                        'device'].get('rx-bufs-posted', 0) > 0:
                return
            if time.monotonic() > deadline:
                raise Failed(f'{illan.name}: guest not up')
            time.sleep(0.1)

    def quiesce(self, illan, pair):
        """The pair's senders stopped, and every frame on its way has
        arrived: illan's counters and the veth's no longer move."""
        self.traffic[pair].stop_senders(self.ledger)
        stable(lambda: (frame_counts(illan.counters()),
                        frame_counts(illan.queue()[0]),
                        self.rig.veth_stats(pair)),
               f'{illan.name} and dut{pair}')

    def close_pair(self, illan, pair):
        illan.close_epoch(self.ledger)
        self.traffic.pop(pair).close(self.ledger)

    # The faults.

    def flap(self):
        pair = self.illan.pair
        self.rig.link(pair, False)
        self.illan.wait_backend('down', lambda b: b['link'] == 'down')
        time.sleep(0.2)
        self.rig.link(pair, True)
        self.illan.wait_backend('up', lambda b: b['link'] == 'up')
        self.events['link flaps'] += 1

    def recreate(self):
        """The interface goes away with illan's sockets bound and comes
        back: af-xdp closes them and reopens on the new one by itself
        (docs/system/netdevs/af-xdp.md).  The veth's and the socket's
        counters die with them, so the traffic stops first and they are
        read."""
        illan, pair = self.illan, self.illan.pair
        reopens = illan.queue()[1]['reopens']
        self.quiesce(illan, pair)
        self.close_pair(illan, pair)
        self.rig.delete(pair)
        illan.wait_backend('removed', lambda b: b['link'] != 'up' or
                           b['reopens'] > reopens)
        self.rig.create(pair)
        illan.wait_backend('reopened', lambda b: b['reopens'] > reopens and
                           b['link'] == 'up')
        self.traffic[pair] = Traffic(self.args, self.rig, pair)
        self.traffic[pair].start()
        self.events['interface re-creations'] += 1

    def reset(self):
        self.illan.cmd('system_reset')
        self.events['resets'] += 1

    def irq_toggle(self):
        """Off behind the guest's back, then on: a sleeping guest finds
        its frames by its look (every second, a read of memory), and
        takes them 250 ms later
        (woken-late) unless a batch after the toggle interrupts it."""
        self.illan.qtest.hcall(0x104, UNIT, 0)
        time.sleep(0.05)
        self.illan.qtest.hcall(0x104, UNIT, 1)
        self.events['interrupt toggles'] += 1

    def filters(self):
        """The group our jumbo sender uses in and out of the table, and
        filtering and receive-multicast off and on again."""
        q, group = self.illan.qtest, mac_int(MCAST_GROUP)
        n = self.events['filter changes']
        if n % 3 == 0:
            q.hcall(0x130, UNIT, 1, group)
            q.hcall(0x130, UNIT, 2, group)
        elif n % 3 == 1:
            q.hcall(0x130, UNIT, 0x40000, 0)
            q.hcall(0x130, UNIT, 0x50000, 0)
        else:
            q.hcall(0x130, UNIT, 0xa0000, 0)
            q.hcall(0x130, UNIT, 0x80000, 0)
        self.events['filter changes'] += 1

    def guest_mac(self):
        self.illan.cmd('x-guest-set-mac', id='g0', mac=OTHER_MAC)
        time.sleep(0.5)
        self.illan.cmd('x-guest-set-mac', id='g0', mac=NIC_MAC)
        self.events['MAC changes'] += 2

    def guest_mtu(self):
        self.illan.cmd('x-guest-set-mtu', id='g0', mtu=SMALL_MTU)
        time.sleep(0.5)
        self.illan.cmd('x-guest-set-mtu', id='g0', mtu=JUMBO_MTU)
        self.events['guest MTU changes'] += 2

    def host_mtu(self):
        pair = self.illan.pair
        self.rig.mtu(pair, SMALL_MTU)
        time.sleep(0.5)
        self.rig.mtu(pair, JUMBO_MTU)
        self.events['interface MTU changes'] += 2

    def migrate(self):
        """To a new illan on the other pair, with the traffic running;
        then the traffic moves there and the source's last frames are
        counted before it quits."""
        src, old = self.illan, self.illan.pair
        new = 'B' if old == 'A' else 'A'
        self.traffic[new] = Traffic(self.args, self.rig, new)
        path = os.path.join(self.tmp, f'mig-{Illan.serial + 1}.sock')
        dst = self.spawn(new, incoming=f'unix:{path}')
        t0 = time.monotonic()
        src.cmd('migrate', uri=f'unix:{path}')
        deadline = t0 + MIGRATE_TIMEOUT_S
        while True:
            info = src.cmd('query-migrate')
            if info.get('status') == 'completed':
                break
            if info.get('status') in ('failed', 'cancelled') or \
                    time.monotonic() > deadline:
                raise Failed(f'migration {src.name} -> {dst.name}: {info}')
            time.sleep(0.05)
        self.wait_running(dst)
        self.events['migrations'] += 1
        self.events['migration seconds'] += time.monotonic() - t0
        self.illan = dst
        self.traffic[new].start()
        dst.active_since = time.monotonic()
        self.retire(src)

    def retire(self, illan):
        self.quiesce(illan, illan.pair)
        self.close_pair(illan, illan.pair)
        illan.quit(self.ledger)

    def finish(self):
        self.retire(self.illan)
        self.illan = None

    # The schedule.

    def schedule(self):
        """(period s, first at s, action); a migration every
        --migrate-every seconds.  The periods are prime to one another, so
        that the faults meet in every combination over the run."""
        a = self.args
        return [(a.migrate_every, a.migrate_every, self.migrate),
                (1.0, 0.5, self.irq_toggle),
                (2.0, 1.3, self.filters),
                (7.0, 3.1, self.flap),
                (11.0, 5.3, self.guest_mac),
                (13.0, 9.7, self.reset),
                (17.0, 12.1, self.host_mtu),
                (19.0, 14.9, self.guest_mtu),
                (29.0, 21.7, self.recreate)]

    def run(self):
        self.doing = 'start'
        self.start()
        t0 = time.monotonic()
        tasks = [[first, period, action]
                 for period, first, action in self.schedule()]
        while time.monotonic() - t0 < self.args.secs:
            now = time.monotonic() - t0
            due = min(tasks, key=lambda t: t[0])
            if due[0] <= now:
                self.doing = due[2].__name__
                self.log(self.doing)
                due[2]()
                due[0] += due[1] * (1 + int((now - due[0]) // due[1]))
            illan = self.illan
            if 'warm-up' not in illan.mem and illan.active_since and \
                    time.monotonic() - illan.active_since >= WARMUP_S:
                illan.sample('warm-up')
            time.sleep(0.05)
        self.finish()


# --- the balance ----------------------------------------------------------

def layers(L, events):
    """(layer, frames in, [(reason, frames)], derived): on every layer the
    frames in equal the sum over the reasons.  derived names the one
    reason, if any, that is the kernel's own arithmetic rather than a
    counter (it must not be negative).  The counters are described in
    docs/devel/soak.md."""
    xsk = xdp_drops(collections.Counter(
        {k[4:]: L[k] for k in L if k.startswith('xsk.')}))
    xsk.pop('invalid')
    offered = L['gen.xdp-offered'] + L['gen.jumbo-offered'] + \
        L['gen.jumbo-refused']
    verdicts = [('XDP_REDIRECT', L['vdut.xdp_redirect']),
                ('redirect refused by the socket', L['vdut.drops']),
                ('XDP_DROP', L['vdut.xdp_drops']),
                ('XDP_TX', L['vdut.xdp_tx'])]
    announces = ANNOUNCE_ROUNDS * events['migrations']
    return [
        ('generator', offered,
         [('taken by the veth', L['gen.took']),
          ('dropped by the veth', L['gen.refused']),
          ('refused before the veth', offered - L['gen.took'] -
           L['gen.refused'])], 'refused before the veth'),
        ('dut veth rx', L['gen.took'],
         [('XDP program run', L['vdut.xdp_packets'])], None),
        ('XDP program', L['vdut.xdp_packets'],
         verdicts + [('XDP_PASS', L['vdut.xdp_packets'] -
                      sum(v for _, v in verdicts))], 'XDP_PASS'),
        ('AF_XDP socket rx', L['vdut.xdp_redirect'] + L['vdut.drops'],
         [('rx ring', L['xsk.rx-frames'])] +
         [('kernel ' + k, v) for k, v in xsk.items()], None),
        ('af-xdp backend rx', L['xsk.rx-frames'],
         [('to the net core', L['netdev.rx.frames']),
          ('rx-too-long', L['xsk.rx-too-long']),
          ('rx-truncated', L['xsk.rx-truncated'])], None),
        ('net core rx (netdev)', L['netdev.rx.frames'],
         [('to the NIC', L['nic.rx.frames'])], None),
        ('device rx', L['nic.rx.frames'],
         [('delivered', L['nic.rx.delivered'])] +
         reasons(L, 'nic.rx.dropped.'), None),
        ('guest rx', L['nic.rx.delivered'],
         [('taken', L['guest.rx-frames'])] +
         [(r, L['guest.drops.' + r]) for r in GUEST_RX_DROPS], None),
        ('guest echo', L['guest.rx-frames'],
         [('sent', L['guest.tx-frames']),
          ('tx-failed', L['guest.drops.tx-failed'])], None),
        ('device tx', L['guest.tx-frames'] + L['guest.drops.tx-failed'],
         [('sent', L['nic.device.tx-frames']),
          ('tx-errors', L['nic.device.tx-errors'])], None),
        (f'net core tx (+{announces} RARP)',
         L['nic.device.tx-frames'] + announces,
         [('to the backend', L['nic.tx.frames']),
          ('backend failed', L['nic.tx.errors']),
          ('link down', L['nic.tx.dropped'])], None),
        ('af-xdp backend tx', L['netdev.tx.frames'] + L['netdev.tx.errors'],
         [('tx ring', L['xsk.tx-frames']),
          ('tx-ring-full', L['xsk.tx-ring-full']),
          ('tx-oversize', L['xsk.tx-oversize']),
          ('tx-over-mtu', L['netdev.backend.tx-over-mtu'])], None),
        ('dut veth tx', L['xsk.tx-frames'],
         [('sent', L['vdut.tx_packets']),
          ('dropped', L['vdut.tx_dropped']),
          ('kernel tx_invalid_descs', L['xsk.tx_invalid_descs'])], None),
        ('gen veth rx', L['vdut.tx_packets'],
         [('counted by xdp-gen', L['gen.echoes']),
          ('dropped', L['vgen.drops'])], None),
    ]


# What the guest does with a frame the device delivered, besides taking it.
GUEST_RX_DROPS = ('rx-invalid', 'bad-handle', 'machine-reset', 'closed')


def reasons(ledger, prefix):
    return [(k[len(prefix):], v) for k, v in sorted(ledger.items())
            if k.startswith(prefix)]


def balance_rows(L, events):
    """Table rows, and the layers that do not balance.

    >>> balance_rows(collections.Counter(), collections.Counter())[1]
    []
    >>> ledger = collections.Counter({'nic.rx.frames': 1})
    >>> balance_rows(ledger, collections.Counter())[1]
    ['net core rx (netdev): OFF by -1', 'device rx: OFF by 1']
    """
    rows, bad = [], []
    for layer, frames_in, out, derived in layers(L, events):
        off = frames_in - sum(v for _, v in out)
        negative = derived and dict(out)[derived] < 0
        verdict = 'ok' if off == 0 and not negative else \
            f'OFF by {off}' if off else f'{derived} < 0'
        if verdict != 'ok':
            bad.append(f'{layer}: {verdict}')
        for i, (reason, frames) in enumerate(out):
            if frames or i == 0:
                rows.append([layer if i == 0 else '',
                             frames_in if i == 0 else '', reason, frames,
                             verdict if i == 0 else ''])
    return rows, bad


def rss_slack(build):
    """(extra kB, factor) for the RSS tolerance of a sanitizer build, and
    why.  ASan: freed blocks wait in its quarantine before reuse, so RSS
    grows by up to its size without a leak (LeakSanitizer looks for leaks
    at each exit instead).  TSan: RSS counts its shadow, several bytes for
    each byte of memory the process touches, so growth is multiplied."""
    with open(os.path.join(build, 'illan'), 'rb') as f:
        binary = f.read()
    if b'__tsan_init' in binary:
        return 0, TSAN_RSS_FACTOR, f'x{TSAN_RSS_FACTOR} for TSan\'s shadow'
    if b'__asan_init' not in binary:
        return 0, 1, ''
    quarantine = ASAN_QUARANTINE_MB
    for option in os.environ.get('ASAN_OPTIONS', '').split(':'):
        key, _, value = option.partition('=')
        if key == 'quarantine_size_mb':
            quarantine = int(value)
    return quarantine * 1024, 1, f'+ {quarantine} MiB of ASan quarantine'


def rss_ok(warm, end, slack=(0, 1, '')):
    """End's RSS (kB) within the slack of warm-up's.

    >>> rss_ok((100000, 18), (115000, 18)), rss_ok((100000, 18), (120000, 18))
    (True, False)
    >>> rss_ok((100000, 18), (140000, 18), (0, 5, 'TSan'))
    True
    """
    extra_kb, factor, _ = slack
    return end[0] <= warm[0] + extra_kb + factor * max(
        RSS_SLACK_KB, warm[0] * RSS_SLACK_SHARE)


def mem_rows(procs, slack):
    """Per process RSS and descriptors at start, warm-up and end; a
    process's end against its warm-up, and the last process's end against
    the warm-up of the first that started as it did (with -incoming or
    not: a destination has been written all over by the stream)."""
    rows, bad = [], []
    fmt = lambda m: f'{m[0] // 1024} MiB / {m[1]}' if m else '-'

    def check(what, warm, end):
        ok = rss_ok(warm, end, slack) and end[1] == warm[1]
        if not ok:
            bad.append(f'{what}: {fmt(warm)} after warm-up, {fmt(end)} at '
                       'the end')
        return 'ok' if ok else 'GREW'

    for p in procs:
        warm, end = p.mem.get('warm-up'), p.mem.get('end')
        rows.append([p.name, p.pair, fmt(p.mem.get('start')), fmt(warm),
                     fmt(end), check(p.name, warm, end) if warm and end
                     else '-'])
    if procs and 'end' in procs[-1].mem:
        last = procs[-1]
        like = [p for p in procs if 'warm-up' in p.mem and
                bool(p.incoming) == bool(last.incoming)]
        if like and like[0] is not last:
            what = f'{like[0].name} -> {last.name}'
            rows.append([what, '', '', fmt(like[0].mem['warm-up']),
                         fmt(last.mem['end']),
                         check(what, like[0].mem['warm-up'],
                               last.mem['end'])])
    return rows, bad


def report(soak, started, failure):
    """The tables, and whether all is well."""
    L, ev = soak.ledger, soak.events
    problems = [failure] if failure else []
    rows, bad = balance_rows(L, ev)
    problems += bad
    print_table(f'Frames, summed over {len(soak.procs)} illan processes '
                f'({time.monotonic() - started:.0f} s)',
                ['layer', 'frames in', 'went to', 'frames', 'balance'],
                rows, lambda r, _: r)
    ev_rows = [[k, round(v, 1) if isinstance(v, float) else v]
               for k, v in ev.items()]
    ev_rows += [['guest woken late (lost interrupts found)',
                 L['guest.woken-late']],
                ['guest resets seen', L['guest.resets']],
                ['af-xdp link changes', L['netdev.backend.link-changes']],
                ['af-xdp reopens', L['netdev.backend.reopens']]]
    print_table('Faults and events', ['event', 'count'], ev_rows,
                lambda r, _: r)
    slack = rss_slack(soak.args.build)
    rows, bad = mem_rows(soak.procs, slack)
    problems += bad
    tolerance = ' '.join(filter(None, (
        f'max({RSS_SLACK_KB // 1024} MiB, {RSS_SLACK_SHARE:.0%})', slack[2])))
    print_table(f'RSS / open descriptors (end within {tolerance} of warm-up, '
                'descriptors equal)',
                ['process', 'pair', 'start', f'warm-up ({WARMUP_S} s)',
                 'end', 'verdict'], rows, lambda r, _: r)
    reports = [line for p in soak.procs for line in p.reports()]
    problems += reports
    print_table('Sanitizer reports and exit status',
                ['process', 'stderr', 'reports'],
                [[p.name, p.err, len(p.reports())] for p in soak.procs],
                lambda r, _: r)
    for line in problems:
        print(f'soak: FAIL: {line}')
    if not problems:
        print('\nsoak: every layer balances, memory and descriptors held '
              'their level, no sanitizer report')
    return not problems


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--build', default='build', help='meson build directory')
    p.add_argument('--secs', type=int, default=600,
                   help='length of the soak (default 600)')
    p.add_argument('--migrate-every', type=float, default=60,
                   help='seconds between live migrations (default 60)')
    p.add_argument('--jumbo-rate', type=int, default=2000,
                   help='jumbo frames a second (default 2000)')
    p.add_argument('--logs', help="where each illan's stderr and the "
                   "driver's log of what it did go (default BUILD/soak-logs)")
    p.add_argument('--ledger', action='store_true',
                   help='print every counter summed, too')
    p.add_argument('--jumbo', metavar='IF', help=argparse.SUPPRESS)
    p.add_argument('--dst', help=argparse.SUPPRESS)
    p.add_argument('--rate', type=int, help=argparse.SUPPRESS)
    return p.parse_args()


def main():
    args = parse_args()
    if args.jumbo:
        return jumbo_main(args)
    if os.geteuid() != 0:
        print('soak: needs root: it creates network namespaces and veth '
              'pairs and attaches XDP programs', file=sys.stderr)
        return 1
    args.logs = args.logs or os.path.join(args.build, 'soak-logs')
    shutil.rmtree(args.logs, ignore_errors=True)
    os.makedirs(args.logs)
    with tempfile.TemporaryDirectory(prefix='illan-soak-') as tmp, \
            Rig() as rig:
        soak, started, failure = Soak(args, rig, tmp), time.monotonic(), None
        try:
            soak.run()
        except (Failed, QmpError, OSError, RuntimeError) as e:
            failure = f'{getattr(soak, "doing", "?")}: {type(e).__name__}: ' \
                f'{e} (the counters of a process that did not quit are ' \
                'missing from the balance)'
        finally:
            Proc.stop_all()
        if args.ledger:
            for key in sorted(soak.ledger):
                print(key, soak.ledger[key])
        return 0 if report(soak, started, failure) else 1


if __name__ == '__main__':
    sys.exit(main())
