#!/usr/bin/python3
"""make bench: what a frame over af-xdp costs illan's threads in CPU, and
how fast it carries frames, against a bare AF_XDP socket and DPDK's testpmd
on the same machine in the same run.

Two network namespaces joined by one veth pair: the generator's end
(xdp-gen, XDP live frames, on CPU0) and the device under test's end
(xsk-rxdrop, dpdk-testpmd or illan, on CPU1).  First the raw loops
(receive, macswap, send), then testpmd, then illan's points; each point is
the median of --runs runs of --secs seconds, and every thread's CPU time
over a run's window comes from /proc/PID/task/TID/stat.  See
docs/devel/benchmarks.md for the columns.
"""

import argparse
import datetime
import fnmatch
import json
import os
import platform
import queue
import re
import signal
import socket
import statistics
import subprocess
import sys
import shutil
import tempfile
import threading
import time

import charts
import instr

GEN_CPU = 0
DUT_CPU = 1
NIC_MAC = '52:54:00:12:34:56'
SIZES = ('64', '1500', 'mix')
MODES = ('native', 'skb')
WAITS = ('poll', 'spin')
FWDS = ('rxonly', 'txonly', 'macswap')
WARMUP_S = 1
START_TIMEOUT_S = 10
# The kernel releases a closed AF_XDP socket's queue from deferred work,
# so a bind right after the last run can fail with EBUSY: start again.
START_ATTEMPTS = 3
SETTLE_S = 0.5
# Seconds a run costs beyond its window, for the estimate printed first.
RUN_OVERHEAD_S = 3.5
# Before each run, wait up to QUIET_MAX_S for other processes to use less
# than QUIET_SHARE of a CPU, and the hypervisor to steal less than that
# from each CPU, over QUIET_SAMPLE_S: on a shared machine in a VM either
# changes a figure several-fold.
QUIET_SHARE = 0.05
QUIET_SAMPLE_S = 0.5
QUIET_MAX_S = 20
# A run during which the hypervisor stole more than this share (%) of
# either CPU says more about the host than about illan: it is run again,
# up to NOISY_RETRIES times, and kept (marked) only if no quieter one came.
STEAL_MAX_PCT = 10
NOISY_RETRIES = 2


class Failed(Exception):
    """A run that did not produce a figure; the point goes on."""


# --- processes -----------------------------------------------------------

class Proc:
    """A child whose stdout is read line by line in the background."""

    live = []

    def __init__(self, name, argv, stderr_path=None, stdin=False):
        self.name = name
        self.stderr_path = stderr_path
        err = open(stderr_path, 'w') if stderr_path else subprocess.PIPE
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err,
                                  stdin=subprocess.PIPE if stdin else None,
                                  text=True)
        if stderr_path:
            err.close()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        Proc.live.append(self)

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    @property
    def pid(self):
        return self.p.pid

    def _next_line(self, wanted, what, timeout):
        """wanted() of the first of the next lines where it is not None."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0, deadline -
                                                  time.monotonic()))
            except queue.Empty:
                raise Failed(f'{self.name}: no "{what}" in {timeout} s')
            if line is None:
                raise Failed(f'{self.name} exited: {self.stderr()}')
            found = wanted(line)
            if found is not None:
                return found

    def expect(self, word, timeout):
        """The key=value fields of the next line starting with word."""
        return self._next_line(
            lambda line: (parse_kv(line) if line.split(' ', 1)[0] == word
                          else None),
            word, timeout)

    def expect_re(self, pattern, timeout):
        """The match of the next line that matches pattern."""
        return self._next_line(lambda line: re.search(pattern, line),
                               pattern, timeout)

    def write(self, line):
        """A line to its standard input; nothing once it has exited."""
        try:
            self.p.stdin.write(line + '\n')
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def stderr(self):
        if self.p.poll() is None:
            return ''
        if self.stderr_path:
            with open(self.stderr_path) as f:
                text = f.read()
        else:
            text = self.p.stderr.read()
        return ' '.join(text.split())[-600:] or \
            f'status {self.p.returncode}'

    def send(self, sig):
        if self.p.poll() is None:
            self.p.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=5):
        self.send(sig)
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        if self in Proc.live:
            Proc.live.remove(self)

    @classmethod
    def stop_all(cls):
        for proc in list(cls.live):
            proc.stop(timeout=2)


def parse_kv(line):
    fields = {}
    for word in line.split()[1:]:
        key, _, value = word.partition('=')
        try:
            fields[key] = int(value)
        except ValueError:
            try:
                fields[key] = float(value)
            except ValueError:
                fields[key] = value
    return fields


def run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'{" ".join(argv)}: {done.stderr.strip()}')
    return done.stdout


# --- the two namespaces --------------------------------------------------

class Netns:
    """ibgen<pid> holds gen0, ibdut<pid> holds dut0: one veth pair, one
    queue each, IPv6 off so that nothing but our frames crosses it."""

    def __init__(self):
        self.gen = f'ibgen{os.getpid()}'
        self.dut = f'ibdut{os.getpid()}'
        self.made = []

    def __enter__(self):
        for ns in (self.gen, self.dut):
            run('ip', 'netns', 'add', ns)
            self.made.append(ns)
        run('ip', 'link', 'add', 'gen0', 'netns', self.gen, 'type', 'veth',
            'peer', 'name', 'dut0', 'netns', self.dut)
        for ns, dev in ((self.gen, 'gen0'), (self.dut, 'dut0')):
            self.run(ns, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1')
            self.run(ns, 'ip', 'link', 'set', 'lo', 'up')
            self.run(ns, 'ip', 'link', 'set', dev, 'up')
        self.gen_mac = self.mac(self.gen, 'gen0')
        self.dut_mac = self.mac(self.dut, 'dut0')
        return self

    def __exit__(self, *exc):
        Proc.stop_all()
        for ns in self.made:
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)

    @staticmethod
    def run(ns, *argv):
        return run('ip', 'netns', 'exec', ns, *argv)

    def mac(self, ns, dev):
        return json.loads(self.run(ns, 'ip', '-j', 'link', 'show',
                                   dev))[0]['address']

    def set_mode(self, mode):
        """In skb mode the veth drops XDP-redirected frames silently
        unless its NAPI is on, which GRO turns on; a native program does
        that by itself."""
        self.run(self.dut, 'ethtool', '-K', 'dut0', 'gro',
                 'on' if mode == 'skb' else 'off')


# --- CPU accounting ------------------------------------------------------

CPU_FIELDS = ('user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq',
              'steal')


def cpu_times():
    times = {}
    with open('/proc/stat') as f:
        for line in f:
            name, *values = line.split()
            if name.startswith('cpu') and name != 'cpu':
                times[name] = dict(zip(CPU_FIELDS, map(int, values)))
    return times


def process_ticks(pid):
    """utime + stime of a process, all threads, in clock ticks."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def parse_task_stat(text):
    """A thread's name and utime + stime, in clock ticks, from its
    /proc/PID/task/TID/stat line (the name may hold spaces and ')').

    >>> parse_task_stat('42 (vcpu-g0) R 1 2 3 4 5 6 7 8 9 10 250 40 0 0')
    ('vcpu-g0', 290)
    >>> parse_task_stat('7 (a) b) S 1 2 3 4 5 6 7 8 9 10 3 4 0 0')
    ('a) b', 7)
    """
    name = text[text.index('(') + 1:text.rindex(')')]
    fields = text.rsplit(')', 1)[1].split()
    return name, int(fields[11]) + int(fields[12])


def thread_ticks(pid):
    """{tid: (name, ticks)} for every thread of pid; {} once it is gone."""
    threads = {}
    try:
        tids = os.listdir(f'/proc/{pid}/task')
    except OSError:
        return threads
    for tid in tids:
        try:
            with open(f'/proc/{pid}/task/{tid}/stat') as f:
                threads[tid] = parse_task_stat(f.read())
        except OSError:
            continue
    return threads


class ThreadWindow:
    """Each thread's CPU time over a window, for the processes named:
    read at its start and its end, so that warm-up is not in it."""

    def __init__(self, procs):
        self.procs = procs
        self.t0 = time.monotonic()
        self.start = {role: thread_ticks(pid) for role, pid in procs.items()}

    def close(self):
        """{role: {thread name: CPU seconds}}, threads of one name summed
        (xdp-gen's senders), and the window's length."""
        secs = time.monotonic() - self.t0
        hz = os.sysconf('SC_CLK_TCK')
        used = {}
        for role, pid in self.procs.items():
            before, threads = self.start[role], {}
            for tid, (name, ticks) in thread_ticks(pid).items():
                ticks -= before.get(tid, (name, 0))[1]
                threads[name] = threads.get(name, 0) + ticks / hz
            used[role] = threads
        return {'secs': secs, 'threads': used}


def cost(threads, secs, frames, prefix='', exclude=()):
    """The CPU a frame costs the threads whose name starts with prefix
    ('' for all), but for those excluded: ns a frame over the window's
    frames, and their share of one CPU."""
    cpu = sum(t for name, t in threads.items()
              if name.startswith(prefix) and not name.startswith(exclude))
    return {'ns': round(cpu * 1e9 / frames, 1) if frames > 0 else None,
            'pct': round(100 * cpu / secs, 1)}


def gen_cost(use, m0, m1):
    """The generator's CPU a frame it offered (veth tx_packets); only
    listening (txonly), it offers none."""
    return cost(use['threads']['gen'], use['secs'],
                m1['tx_packets'] - m0['tx_packets'])


def foreign_ticks(ours):
    """CPU ticks by pid of the user-space processes that are not this
    benchmark's: the other work on a shared machine."""
    ticks = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) in ours:
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                if not f.read(1):
                    continue            # a kernel thread
        except OSError:
            continue
        ticks[entry] = process_ticks(entry)
    return ticks


def foreign_delta(before, after):
    """What a process that ended in between used is lost; an undercount."""
    return sum(max(0, t - before.get(pid, 0)) for pid, t in after.items())


def wait_quiet():
    """Seconds waited for the other processes and VMs to calm down."""
    start = time.monotonic()
    hz = os.sysconf('SC_CLK_TCK')
    limit = QUIET_SHARE * QUIET_SAMPLE_S * hz
    while time.monotonic() - start < QUIET_MAX_S:
        procs, cpus = foreign_ticks({os.getpid()}), cpu_times()
        time.sleep(QUIET_SAMPLE_S)
        used = foreign_delta(procs, foreign_ticks({os.getpid()}))
        stolen = max(t['steal'] - cpus[name]['steal']
                     for name, t in cpu_times().items())
        if used < limit and stolen < limit:
            break
    return round(time.monotonic() - start - QUIET_SAMPLE_S, 1)


def ksoftirqd_pids():
    """{cpu name: pid} of the kernel threads that run softirq work a CPU
    could not finish on the way out of an interrupt."""
    pids = {}
    for entry in os.listdir('/proc'):
        try:
            with open(f'/proc/{entry}/comm') as f:
                name = f.read().strip()
        except OSError:
            continue
        if name.startswith('ksoftirqd/'):
            pids['cpu' + name.split('/', 1)[1]] = int(entry)
    return pids


class CpuWindow:
    """/proc/stat and process times at the start and end of a window."""

    def __init__(self, ours, illan_pid=None):
        self.ours = set(ours) | {os.getpid(), illan_pid}
        self.illan_pid = illan_pid
        self.t0 = time.monotonic()
        self.cpu0 = cpu_times()
        self.foreign0 = foreign_ticks(self.ours)
        self.illan0 = process_ticks(illan_pid) if illan_pid else 0
        self.ksoftirqd = ksoftirqd_pids()
        self.ksoftirqd0 = {cpu: process_ticks(pid)
                           for cpu, pid in self.ksoftirqd.items()}

    def close(self):
        secs = time.monotonic() - self.t0
        hz = os.sysconf('SC_CLK_TCK')
        cpus = {}
        for name, end in cpu_times().items():
            d = {k: end[k] - self.cpu0[name][k] for k in CPU_FIELDS}
            total = sum(d.values()) or 1
            cpus[name] = {k: round(100 * v / total, 1) for k, v in d.items()}
            cpus[name]['busy'] = round(100 - cpus[name]['idle'] -
                                       cpus[name]['iowait'] -
                                       cpus[name]['steal'], 1)
        foreign = foreign_delta(self.foreign0, foreign_ticks(self.ours))
        out = {'cpus': cpus, 'foreign': round(100 * foreign / hz / secs, 1),
               'ksoftirqd': {cpu: round(100 * (process_ticks(pid) -
                                               self.ksoftirqd0[cpu]) /
                                        hz / secs, 1)
                             for cpu, pid in self.ksoftirqd.items()}}
        if self.illan_pid:
            out['illan'] = round(100 * (process_ticks(self.illan_pid) -
                                        self.illan0) / hz / secs, 1)
        return out


# --- QMP -----------------------------------------------------------------

class QmpError(Exception):
    pass


class Qmp:
    """Greeting, qmp_capabilities, then one command at a time; events
    that arrive in between are skipped."""

    def __init__(self, path, proc, timeout=START_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while True:
            if proc.p.poll() is not None:
                raise Failed(f'illan exited: {proc.stderr()}')
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Failed(f'no QMP socket in {timeout} s')
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.buf = ''
        self.decoder = json.JSONDecoder()
        self.message()
        self.cmd('qmp_capabilities')

    def message(self):
        while True:
            text = self.buf.lstrip()
            try:
                msg, end = self.decoder.raw_decode(text)
                self.buf = text[end:]
                return msg
            except json.JSONDecodeError:
                data = self.sock.recv(65536)
                if not data:
                    raise QmpError('connection closed')
                self.buf += data.decode()

    def cmd(self, name, **args):
        request = {'execute': name}
        if args:
            request['arguments'] = args
        self.sock.sendall((json.dumps(request) + '\n').encode())
        while True:
            msg = self.message()
            if 'event' in msg:
                continue
            if 'error' in msg:
                raise QmpError(msg['error'].get('desc', str(msg['error'])))
            return msg['return']

    def close(self):
        self.sock.close()


# --- counters ------------------------------------------------------------

def flatten(obj, prefix=''):
    """{'a': {'b': 1}} -> {'a.b': 1}; lists by index; numbers only."""
    flat = {}
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for key, value in items:
        name = f'{prefix}{key}'
        if isinstance(value, (dict, list)):
            flat.update(flatten(value, name + '.'))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[name] = value
    return flat


# The stats' ratios (per frame since the guest started) do not subtract:
# a window's are its subtracted counts' ratio.
RATIOS = {
    'guest.tce-hcalls-per-frame.rx': ('guest.tce-hcalls.rx',
                                      'guest.rx-frames'),
    'guest.tce-hcalls-per-frame.tx': ('guest.tce-hcalls.tx',
                                      'guest.tx-frames'),
}


def delta(before, after):
    """The counts' differences; a ratio is the differences' ratio.

    >>> d = delta({'guest': {'rx-frames': 1000, 'tce-hcalls': {'rx': 2000},
    ...                      'tce-hcalls-per-frame': {'rx': 2.0}}},
    ...           {'guest': {'rx-frames': 3000, 'tce-hcalls': {'rx': 5000},
    ...                      'tce-hcalls-per-frame': {'rx': 5 / 3}}})
    >>> d['guest.tce-hcalls.rx'], d['guest.tce-hcalls-per-frame.rx']
    (3000, 1.5)
    """
    a, b = flatten(before), flatten(after)
    d = {k: b[k] - a.get(k, 0) for k in b if k not in RATIOS}
    for key, (count, frames) in RATIOS.items():
        if key in b:
            d[key] = d[count] / d[frames] if d.get(frames) else 0
    return d


def xdp_drops(stats):
    """The kernel's XDP_STATISTICS drops by reason.  On 6.18 rx_dropped
    also counts the fill-ring-empty and rx-ring-full events, elsewhere
    not; what it holds beyond them is "dropped"."""
    fill, full = stats['rx_fill_ring_empty_descs'], stats['rx_ring_full']
    return {'fill-empty': fill, 'ring-full': full,
            'invalid': stats['rx_invalid_descs'],
            'dropped': max(0, stats['rx_dropped'] - fill - full)}


# The rest of the drops and errors, and the short name each gets.
DROP_COUNTERS = (
    ('net.nics.0.rx.dropped.', 'nic:'),
    ('net.nics.0.tx.errors', 'nic:tx-errors'),
    ('net.nics.0.tx.dropped', 'nic:tx-dropped'),
    ('net.netdevs.0.backend.queues.0.tx-ring-full', 'xdp:tx-ring-full'),
    ('net.netdevs.0.backend.queues.0.tx-oversize', 'xdp:tx-oversize'),
    ('guest.drops.', 'guest:'),
    ('guest.tx-failed', 'guest:tx-failed'),
    ('guest.rx-invalid', 'guest:rx-invalid'),
    ('guest.rx-no-buffer', 'guest:rx-no-buffer'),
    ('guest.replenish-add-failures', 'guest:replenish-failed'),
)
QUEUE0 = 'net.netdevs.0.backend.queues.0.'


def counted_drops(counters):
    drops = {'xdp:' + k: v for k, v in xdp_drops(
        {k[len(QUEUE0):]: v for k, v in counters.items()
         if k.startswith(QUEUE0)}).items()}
    for key, value in counters.items():
        for prefix, short in DROP_COUNTERS:
            if key == prefix or (prefix.endswith('.') and
                                 key.startswith(prefix)):
                drops[short + key[len(prefix):] if short.endswith(':')
                      else short] = value
    return drops


def per_s(drops, secs):
    """Per second, the reasons that happened at least once a second."""
    return {k: round(v / secs) for k, v in drops.items() if v >= secs}


def guest_stats(qmp):
    for guest in qmp.cmd('x-query-guest-stats')['guests']:
        if guest.get('id') == 'g0':
            return guest
    raise QmpError('no guest g0 in x-query-guest-stats')


# --- the raw limit -------------------------------------------------------

def tool(args, name):
    return os.path.join(args.build, 'tests', 'bench', name)


def start_gen(args, ns, size, secs, dst, *flags):
    gen = Proc('xdp-gen', ['ip', 'netns', 'exec', ns.gen,
                           tool(args, 'xdp-gen'), '-i', 'gen0', '-s', size,
                           '-d', dst, '-t', str(secs), '-c', str(GEN_CPU),
                           *flags])
    gen.expect('ready', START_TIMEOUT_S)
    return gen


def gen_mark(gen):
    gen.send(signal.SIGUSR1)
    return gen.expect('mark', START_TIMEOUT_S)


def start_retrying(start, ready, retryable=lambda proc: True):
    """start() a process; returns it and what ready(proc) returns.  The
    kernel may still hold the last run's socket on the queue for a moment,
    so a start that fails (ready raises Failed) is tried again, up to
    START_ATTEMPTS in all, as long as retryable(proc) says so."""
    for attempt in range(START_ATTEMPTS):
        proc = start()
        try:
            return proc, ready(proc)
        except Failed:
            proc.stop()
            if attempt == START_ATTEMPTS - 1 or not retryable(proc):
                raise
            time.sleep(SETTLE_S)


# Raw loops that are another one's with options: the sender that kicks
# the kernel for each frame, as a sender in place must (illan's
# tx-in-place), the bound of txonly's zero-copy twin.  The tables hold
# the twin, as its copy, against the raw sender, which the target names.
RAW_VARIANTS = {'txonly1': ('txonly', ['-b', '1'])}


def start_rxdrop(args, ns, mode, wait, fwd, size):
    fwd, more = RAW_VARIANTS.get(fwd, (fwd, []))
    extra = ['-s', size, '-d', ns.gen_mac, *more] if fwd == 'txonly' else []
    rx, _ = start_retrying(
        lambda: Proc('xsk-rxdrop', ['ip', 'netns', 'exec', ns.dut,
                                    tool(args, 'xsk-rxdrop'), '-i', 'dut0',
                                    '-m', mode, '-w', wait, '-f', fwd,
                                    '-t', str(args.secs),
                                    '-c', str(DUT_CPU), *extra]),
        lambda rx: rx.expect('ready', START_TIMEOUT_S))
    return rx


def raw_run(args, ns, point):
    """drop, copy and sum: what the socket received.  macswap and txonly:
    what arrived at the generator's end, as for illan's.  The receiver's
    (or sender's) CPU a frame is over the frames it counted itself in its
    window: received, forwarded or sent."""
    size, mode, wait = point['size'], point['mode'], point['wait']
    fwd = RAW_VARIANTS.get(point['fwd'], (point['fwd'],))[0]
    gen_args = (args, ns, size, args.secs + START_TIMEOUT_S + 5, ns.dut_mac,
                *{'macswap': ['--count'], 'txonly': ['--listen']}.get(fwd, []))
    gen = start_gen(*gen_args) if fwd == 'txonly' else None
    rx = start_rxdrop(args, ns, mode, wait, point['fwd'], size)
    try:
        gen = gen or start_gen(*gen_args)
        rx.expect('first', START_TIMEOUT_S)
        m0, cpu = gen_mark(gen), CpuWindow([rx.pid, gen.pid])
        threads = ThreadWindow({'rx': rx.pid, 'gen': gen.pid})
        done = rx.expect('done', args.secs + START_TIMEOUT_S)
        m1, use, thr = gen_mark(gen), cpu.close(), threads.close()
    finally:
        if gen:
            gen.stop()
        rx.stop()
    secs = done['secs']
    if fwd in ('drop', 'copy', 'sum'):
        mpps, gbps = done['frames'] / secs / 1e6, done['bytes'] * 8 / secs / 1e9
    else:
        mpps = gen_rate(m0, m1, 'rx_frames') / 1e6
        gbps = gen_rate(m0, m1, 'rx_bytes') * 8 / 1e9
    # Its own count is over its own window; the threads' is a few ms off.
    frames = (done['tx_frames'] if fwd == 'macswap' else done['frames']) * \
        thr['secs'] / secs
    return {'mpps': mpps, 'gbps': gbps,
            'offered_mpps': None if fwd == 'txonly' else
            gen_rate(m0, m1, 'tx_packets') / 1e6,
            'drops': per_s(xdp_drops(done), secs),
            'cost': {'rx': cost(thr['threads']['rx'], thr['secs'], frames),
                     'gen': gen_cost(thr, m0, m1)},
            'threads': thr, 'cpu': use, 'secs': secs}


def gen_rate(m0, m1, key):
    """Per second, between two of xdp-gen's marks."""
    return (m1[key] - m0[key]) / ((m1['ns'] - m0['ns']) / 1e9)


# --- illan ---------------------------------------------------------------

# The throughput points' I/O thread shares its CPU with the vCPU
# (--illan-cpus), where SCHED_BATCH spares them a switch each way per
# poll; the latency points keep the default, whose tail it is not.
THROUGHPUT_NETDEV_OPTS = 'io-sched=batch'


def illan_argv(args, ns, point, qmp_path):
    size, mode, spin = point['size'], point['mode'], point['wait'] == 'spin'
    netdev = f'af-xdp,id=n0,ifname=dut0,mode={mode},queues=1'
    if not point.get('latency') and 'io-sched=' not in args.netdev_opts:
        netdev += ',' + THROUGHPUT_NETDEV_OPTS
    if args.netdev_opts:
        netdev += ',' + args.netdev_opts
    guest = f'ibmveth,id=g0,dev=net0,fwd={point["fwd"]}'
    if spin:
        netdev += ',spin=on'
        guest += ',poll=spin'
    if point['fwd'] == 'txonly':
        guest += f',size={size},dst={ns.gen_mac}'
    if point.get('netdev_opts'):
        netdev += ',' + point['netdev_opts']
    if 'umem' in point:
        umem = point['umem']
        netdev += f',guest-umem={UMEM_OPTION.get(umem, umem)}'
        if umem == 'guest' and point['fwd'] == 'txonly':
            netdev += ',tx-in-place=on'
    if args.guest_opts:
        guest += ',' + args.guest_opts
    return ['ip', 'netns', 'exec', ns.dut, 'taskset', '-c', args.illan_cpus,
            os.path.join(trace_build(args, point), 'illan'), '-M', 'pseries',
            '-nodefaults',
            '-device', f'spapr-vlan,id=net0,netdev=n0,mac={NIC_MAC},'
            f'use-rx-buffer-pools={point["pools"]}',
            '-netdev', netdev, '-guest', guest,
            '-qmp', f'unix:{qmp_path},server=on,wait=off'] + \
        trace_argv(point, os.path.dirname(qmp_path))


def wait_guest(qmp, proc):
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            return guest_stats(qmp)
        except QmpError as e:
            if proc.p.poll() is not None or time.monotonic() > deadline:
                raise Failed(f'guest not up: {e}; {proc.stderr()}')
            time.sleep(0.1)


def snapshot(qmp, gen):
    return {'t': time.monotonic(),
            'guest': guest_stats(qmp),
            'net': qmp.cmd('x-query-net-stats'),
            'gen': gen_mark(gen)}


def start_illan(args, ns, point, tmp):
    """Up once its guest is; only a queue still busy with the last run's
    socket is worth another start."""
    qmp_path = os.path.join(tmp, 'qmp.sock')

    def start():
        if os.path.exists(qmp_path):
            os.unlink(qmp_path)
        return Proc('illan', illan_argv(args, ns, point, qmp_path),
                    stderr_path=os.path.join(tmp, 'illan.err'))

    def ready(illan):
        try:
            qmp = Qmp(qmp_path, illan)
            wait_guest(qmp, illan)
            return qmp
        except (QmpError, OSError) as e:
            raise Failed(f'QMP: {e}; {illan.stderr()}') from e

    return start_retrying(start, ready,
                          lambda illan: 'busy' in illan.stderr().lower())


def stop_illan(illan, qmp):
    try:
        qmp.cmd('quit')
    except (QmpError, OSError):
        pass
    qmp.close()
    illan.stop(signal.SIGTERM)


def illan_run(args, ns, point):
    with tempfile.TemporaryDirectory(prefix='illan-bench-') as tmp:
        illan, qmp = start_illan(args, ns, point, tmp)
        try:
            result = illan_window(args, ns, point, illan, qmp)
        except (QmpError, OSError) as e:
            raise Failed(f'{e}; {illan.stderr()}')
        finally:
            stop_illan(illan, qmp)
        return dict(result, **trace_log_size(point, tmp))


def illan_window(args, ns, point, illan, qmp):
    fwd = point['fwd']
    extra = ['--count'] if fwd == 'macswap' else \
        ['--listen'] if fwd == 'txonly' else []
    gen = start_gen(args, ns, point['size'], WARMUP_S + args.secs + 5,
                    NIC_MAC, *extra)
    try:
        time.sleep(WARMUP_S)
        a, cpu = snapshot(qmp, gen), CpuWindow([gen.pid], illan.pid)
        threads = ThreadWindow({'illan': illan.pid, 'gen': gen.pid})
        time.sleep(args.secs)
        b, use, thr = snapshot(qmp, gen), cpu.close(), threads.close()
    finally:
        gen.stop()
    return dict(illan_figures(point, a, b, use),
                cost=illan_cost(point['fwd'], a, b, thr), threads=thr)


# --- trace events ----------------------------------------------------------

# "A trace event that is off costs one predictable branch": one point run
# from a tree with the events compiled out (-Dtrace_backends=nop), from
# BUILD with every event off, and from BUILD with every event a received
# frame can write on, logging to a file in the run's temporary directory:
# the device's, the af-xdp queue's and the TCE translation's under its DMA.
TRACE_HOW = ('nop', 'off', 'on')
TRACE_DATA_PATH = ('spapr_vlan_*', 'af_xdp_*', 'spapr_iommu_*')
TRACE_LOG = 'trace.log'


def trace_points():
    """The copy's data path, as the figures before guest-umem=auto."""
    return [{'trace': t, 'fwd': 'rxonly', 'size': s, 'pools': 'on',
             'mode': 'native', 'wait': 'poll', 'umem': 'copy'}
            for s in PEER_SIZES for t in TRACE_HOW]


def trace_build(args, point):
    return args.notrace_build if point.get('trace') == 'nop' else args.build


def trace_argv(point, tmp):
    if point.get('trace') != 'on':
        return []
    argv = []
    for pattern in TRACE_DATA_PATH:
        argv += ['-trace', pattern]
    return argv + ['-trace', f'file={os.path.join(tmp, TRACE_LOG)}']


def trace_log_size(point, tmp):
    if point.get('trace') != 'on':
        return {}
    return {'trace_log_bytes': os.path.getsize(os.path.join(tmp, TRACE_LOG))}


def measure_trace(args, ns, points):
    """Every point's first run, then every point's second...: the runs
    with events compiled out and off that share a column share the
    minute, and the host's swings between minutes (1.5 to 2.8 Mpps at
    1500 B in one run here) fall on both alike."""
    runs = [([], []) for _ in points]
    for i in range(args.runs):
        for point, (kept, errors) in zip(points, runs):
            ns.set_mode(point['mode'])
            run = one_quiet_run(args, ns, point, illan_run, errors)
            if run:
                kept.append(run)
        print(f'  trace: run {i + 1} of {args.runs} done', flush=True)
    return [trace_summary(point, kept, errors)
            for point, (kept, errors) in zip(points, runs)]


def trace_summary(point, runs, errors):
    """summarise(), with the I/O and vCPU ns a frame of each run kept (a
    noisy run retried is not): the spread the nop and off rows are to be
    read against.

    >>> def run(mpps, io):
    ...     return {'mpps': mpps, 'cost': {'io': {'ns': io},
    ...                                    'vcpu': {'ns': io * 2}}}
    >>> r = trace_summary({'trace': 'off'}, [run(1.0, 50), run(1.2, 40)], [])
    >>> r['runs_io_ns'], r['runs_vcpu_ns'], r['cost']['io']['ns']
    ([50, 40], [100, 80], 50)
    """
    result = summarise(point, runs, errors)
    if runs:
        for thread in ('io', 'vcpu'):
            result[f'runs_{thread}_ns'] = [r['cost'][thread]['ns']
                                           for r in runs]
    return result


def trace_vs_off(results):
    """Each row's I/O and vCPU ns a frame over the same size's row with
    the events off."""
    off = {r['size']: r['cost'] for r in results
           if r['trace'] == 'off' and 'failed' not in r}
    for r in results:
        base = off.get(r['size'])
        if 'failed' in r or not base:
            continue
        for thread in ('io', 'vcpu'):
            r[f'{thread}_vs_off'] = ratio(r['cost'][thread]['ns'],
                                          base[thread]['ns'])


def measure_trace_instr(args, ns, size):
    """Instructions per frame (tests/bench/instr.py) from the nop tree and
    from BUILD with every event off: what time per frame cannot show on a
    shared machine, the few instructions a check that is off adds."""
    r = {'size': size}
    try:
        for how in ('nop', 'off'):
            r[how] = instr.measure(trace_build(args, {'trace': how}), ns,
                                   int(size), NIC_MAC)
    except (Failed, QmpError, ValueError) as e:
        r['failed'] = str(e)
    return r


TRACE_OFF_HEADER = ['size', 'thread', 'off - nop, ns/frame, run by run',
                    'median', 'instructions/frame: nop', 'off', 'added']
THREAD_NAMES = {'io': 'I/O', 'vcpu': 'vCPU'}


def trace_off_results(trace, instr):
    """Events off against compiled out, per size and thread: the
    difference of each pair of runs made in the same minute, and the
    instructions per frame.

    >>> trace = [{'trace': 'nop', 'size': '64', 'runs_io_ns': [100, 120],
    ...           'runs_vcpu_ns': [80, 90]},
    ...          {'trace': 'off', 'size': '64', 'runs_io_ns': [104, 110],
    ...           'runs_vcpu_ns': [82, 88]}]
    >>> instr = [{'size': '64', 'nop': {'io': 849.2, 'vcpu': 886.3},
    ...           'off': {'io': 869.0, 'vcpu': 902.9}}]
    >>> [trace_off_row(r) for r in trace_off_results(trace, instr)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [['64', 'I/O', '+4 -10', '-3', '849', '869', '+20'],
     ['64', 'vCPU', '+2 -2', '+0', '886', '903', '+17']]
    """
    by = {(r['trace'], r['size']): r for r in trace if 'failed' not in r}
    counted = {r['size']: r for r in instr if 'failed' not in r}
    results = []
    for size in PEER_SIZES:
        nop, off = by.get(('nop', size)), by.get(('off', size))
        for thread in THREAD_NAMES:
            r = {'size': size, 'thread': thread}
            if nop and off:
                r['diffs'] = [b - a for a, b in zip(nop[f'runs_{thread}_ns'],
                                                    off[f'runs_{thread}_ns'])]
            if size in counted:
                r['instr'] = (counted[size]['nop'][thread],
                              counted[size]['off'][thread])
            if 'diffs' in r or 'instr' in r:
                results.append(r)
    return results


def trace_off_row(r, failed='FAILED'):
    diffs, instr = r.get('diffs'), r.get('instr')
    cells = [r['size'], THREAD_NAMES[r['thread']]]
    cells += [' '.join(f'{round(d):+d}' for d in diffs),
              f'{round(statistics.median(diffs)):+d}'] if diffs else ['-', '-']
    cells += [fmt(instr[0], 0), fmt(instr[1], 0),
              f'{round(instr[1] - instr[0]):+d}'] if instr else ['-'] * 3
    return cells


# The points the targets name: each of their runs comes right after runs
# of what its target holds it against, so that their ratios can also be
# taken in the same minute of the host: the raw receiver, and the floors
# of a device that copies each frame or only reads it (rxonly), the raw
# sender (txonly), testpmd (macswap).  The host moves our vCPUs: a
# receiver that reads frames cost 116 ns a frame at 1500 B at the start
# of one run and 305 half an hour later, and the raw and testpmd parts
# are measured that long before illan's.
ADJACENT_AT = {'pools': 'on', 'mode': 'native', 'wait': 'poll'}
ADJACENT_REFS = {'rxonly': ('drop', 'copy', 'sum'), 'txonly': ('txonly',),
                 'macswap': ('testpmd',)}


def is_adjacent(point):
    """
    >>> is_adjacent({'fwd': 'macswap', 'size': '64', 'pools': 'on',
    ...              'mode': 'native', 'wait': 'poll', 'umem': 'guest'})
    True
    >>> is_adjacent({'fwd': 'txonly', 'size': 'mix', 'pools': 'on',
    ...              'mode': 'native', 'wait': 'poll'})
    False
    """
    return point.get('size') in PEER_SIZES and \
        point.get('fwd') in ADJACENT_REFS and \
        all(point.get(k) == v for k, v in ADJACENT_AT.items())


def ref_run(args, ns, point, ref):
    """One run of @ref, the same size as @point: its rate and its
    thread's CPU a frame ("cost"); a failure is kept, not raised, so that
    illan's run still comes (testpmd is only there after make
    bench-deps): its first line, short, is the row's reason, the whole
    of it in the JSON."""
    try:
        if ref == 'testpmd':
            r = testpmd_run(args, ns, testpmd_point(point['fwd'],
                                                    point['size']))
            thread = r['cost']['lcore']
        else:
            r = raw_run(args, ns, dict(fwd=ref, size=point['size'],
                                       mode=point['mode'],
                                       wait=point['wait']))
            thread = r['cost']['rx']
    except Exception as e:      # Failed, or a counter missing
        return {'failed': failure_line(e), 'error': str(e)}
    finally:
        Proc.stop_all()
        time.sleep(SETTLE_S)
    return {'mpps': r['mpps'], 'thread': thread, 'gen': r['cost']['gen']}


def failure_line(e, width=60):
    """
    >>> failure_line(Failed('no dpdk-testpmd: make bench installs it\\nmore'))
    'no dpdk-testpmd: make bench installs it'
    >>> failure_line(KeyError('RX-missed'))
    "KeyError: 'RX-missed'"
    >>> len(failure_line(Failed('x' * 200)))
    60
    """
    text = str(e) if isinstance(e, Failed) else f'{type(e).__name__}: {e}'
    line = (text.splitlines() or [''])[0]
    return line if len(line) <= width else line[:width - 3] + '...'


def now_ratio(fwd, r, near):
    """The ratio a run's target names, against the run just before it:
    the I/O thread's ns a frame over the raw receiver's (rxonly), the
    rate over the raw sender's (txonly) or testpmd's (macswap).

    >>> now_ratio('macswap', {'mpps': 0.8}, {'testpmd': {'mpps': 1.0}})
    0.8
    >>> now_ratio('rxonly', {'cost': {'io': {'ns': 150}}},
    ...           {'drop': {'thread': {'ns': 50}}, 'copy': {}, 'sum': {}})
    3.0
    >>> now_ratio('txonly', {'mpps': 1.0}, {'txonly': {'failed': 'x'}})
    """
    ref = ADJACENT_REFS[fwd][0]
    if fwd == 'rxonly':
        return ratio(r['cost']['io']['ns'], ref_ns(near, ref))
    return ratio(r['mpps'], None if 'failed' in near[ref] else
                 near[ref]['mpps'])


def floor_ratios(fwd, r, near):
    """rxonly: the I/O thread's ns a frame over the copying and the
    summing receivers' just before it, the floors of a device that
    copies each frame or only reads it.

    >>> floor_ratios('rxonly', {'cost': {'io': {'ns': 300}}},
    ...              {'drop': {}, 'copy': {'thread': {'ns': 200}},
    ...               'sum': {'failed': 'x'}})
    {'now_copy': 1.5, 'now_sum': None}
    >>> floor_ratios('txonly', {'mpps': 1.0}, {'txonly': {}})
    {}
    """
    if fwd != 'rxonly':
        return {}
    io = r['cost']['io']['ns']
    return {'now_copy': ratio(io, ref_ns(near, 'copy')),
            'now_sum': ratio(io, ref_ns(near, 'sum'))}


def illan_run_adjacent(args, ns, point):
    near = {ref: ref_run(args, ns, point, ref)
            for ref in ADJACENT_REFS[point['fwd']]}
    r = illan_run(args, ns, point)
    return dict(r, adjacent=near, now=now_ratio(point['fwd'], r, near),
                **floor_ratios(point['fwd'], r, near))


# What each of illan's threads handles, by fwd: the I/O thread moves
# frames between the AF_XDP rings and the NIC (into it for rxonly, out of
# it for txonly and macswap), the vCPU is the guest receiving or sending.
ROLE_FRAMES = {
    'rxonly': ('net.nics.0.rx.frames', 'guest.rx-frames'),
    'txonly': ('net.nics.0.tx.frames', 'guest.tx-frames'),
    'macswap': ('net.nics.0.tx.frames', 'guest.tx-frames'),
}
IO_THREAD = 'xsk-'
VCPU_THREAD = 'vcpu-'


def illan_cost(fwd, a, b, thr):
    """CPU a frame of the I/O thread, the guest's vCPU, all of illan's
    threads and its other threads (over the guest's frames), and the
    generator."""
    d = delta({'guest': a['guest'], 'net': a['net']},
              {'guest': b['guest'], 'net': b['net']})
    io_frames, guest_frames = (d[k] for k in ROLE_FRAMES[fwd])
    threads, secs = thr['threads']['illan'], thr['secs']
    # The counters were read on both sides of the thread window.
    scale = secs / (b['t'] - a['t'])
    return {'io': cost(threads, secs, io_frames * scale, IO_THREAD),
            'vcpu': cost(threads, secs, guest_frames * scale, VCPU_THREAD),
            'all': cost(threads, secs, guest_frames * scale),
            'rest': cost(threads, secs, guest_frames * scale,
                         exclude=(IO_THREAD, VCPU_THREAD)),
            'gen': gen_cost(thr, a['gen'], b['gen'])}


def illan_figures(point, a, b, use):
    """rxonly: what the guest received.  txonly and macswap: what arrived
    back at the generator's end, since the guest counts a frame it sent
    even when the backend then had to drop it (tx-ring-full)."""
    secs = b['t'] - a['t']
    d = delta({'guest': a['guest'], 'net': a['net']},
              {'guest': b['guest'], 'net': b['net']})
    fwd = point['fwd']
    if fwd == 'rxonly':
        mpps = d['guest.rx-frames'] / secs / 1e6
        gbps = d['guest.rx-bytes'] * 8 / secs / 1e9
    else:
        mpps = gen_rate(a['gen'], b['gen'], 'rx_frames') / 1e6
        gbps = gen_rate(a['gen'], b['gen'], 'rx_bytes') * 8 / 1e9
    return {'mpps': mpps, 'gbps': gbps,
            'offered_mpps': None if fwd == 'txonly' else
            gen_rate(a['gen'], b['gen'], 'tx_packets') / 1e6,
            'guest_tx_mpps': None if fwd == 'rxonly' else
            d['guest.tx-frames'] / secs / 1e6,
            'drops': per_s(counted_drops(d), secs), 'cpu': use,
            'secs': secs,
            'counters': d}


# --- the peer: DPDK's testpmd over its AF_XDP driver -----------------------

TESTPMD = 'dpdk-testpmd'
# Enough buffers for its rings (2048 each) and bursts; its default
# (~155 k of 2 KiB) does not fit in memory without huge pages.
TESTPMD_MBUFS = 16384
TESTPMD_WORKER = 'rte-worker-'


def testpmd_argv(ns, point):
    """Its main lcore (which only reads our commands) and its forwarding
    lcore both on the device's CPU, as illan's threads are; no huge pages,
    no PCI, one AF_XDP queue on dut0 as illan's."""
    fwd, size = point['fwd'], point['size']
    # stdbuf: its answers come through stdio, block-buffered into a pipe.
    argv = ['ip', 'netns', 'exec', ns.dut, 'stdbuf', '-oL', TESTPMD,
            '--lcores', f'0@{DUT_CPU},1@{DUT_CPU}', '--no-pci',
            '--no-shconf', '--no-huge', '-m', '512',
            '--vdev', 'net_af_xdp0,iface=dut0,start_queue=0,queue_count=1',
            '--', '-i', f'--forward-mode={fwd}',
            f'--total-num-mbufs={TESTPMD_MBUFS}']
    if fwd == 'txonly':
        argv += [f'--txpkts={size}', f'--eth-peer=0,{ns.gen_mac}']
    return argv


def port_stats(pmd):
    """testpmd's counters of port 0 ("show port stats 0")."""
    pmd.write('show port stats 0')
    t = time.monotonic()
    stats = {'t': t}
    for row in ('RX-packets', 'RX-errors', 'TX-packets'):
        line = pmd.expect_re(rf'^\s*{row}:.*', START_TIMEOUT_S).group(0)
        stats.update((k, int(v)) for k, v in
                     re.findall(r'([A-Za-z-]+):\s+(\d+)', line))
    return stats


def start_testpmd(ns, point, tmp):
    """Up once its port answers; the kernel may still hold the last run's
    socket on the queue for a moment, so a failed start is tried again."""
    if not shutil.which(TESTPMD):
        raise Failed(f'no {TESTPMD}: make bench installs it '
                     '(scripts/install-deps.sh --bench)')
    pmd, _ = start_retrying(
        lambda: Proc('testpmd', testpmd_argv(ns, point),
                     stderr_path=os.path.join(tmp, 'testpmd.err'),
                     stdin=True),
        port_stats)
    return pmd


def testpmd_run(args, ns, point):
    """rxonly: what its port received; txonly and macswap: what arrived
    at the generator's end, as for illan and the raw loops (its own count
    of frames sent is beside it).  Its forwarding lcore's CPU a frame is
    over the frames its port counted in the window."""
    fwd, size = point['fwd'], point['size']
    flags = {'macswap': ['--count'], 'txonly': ['--listen']}.get(fwd, [])
    with tempfile.TemporaryDirectory(prefix='illan-bench-') as tmp:
        pmd = start_testpmd(ns, point, tmp)
        try:
            pmd.write('start')
            gen = start_gen(args, ns, size, WARMUP_S + args.secs + 5,
                            ns.dut_mac, *flags)
            try:
                time.sleep(WARMUP_S)
                a, m0 = port_stats(pmd), gen_mark(gen)
                cpu = CpuWindow([gen.pid, pmd.pid])
                threads = ThreadWindow({'pmd': pmd.pid, 'gen': gen.pid})
                time.sleep(args.secs)
                b, m1 = port_stats(pmd), gen_mark(gen)
                use, thr = cpu.close(), threads.close()
            finally:
                gen.stop()
        finally:
            pmd.write('quit')
            pmd.stop()
    return testpmd_figures(fwd, a, b, m0, m1, use, thr)


def testpmd_figures(fwd, a, b, m0, m1, use, thr):
    secs = b['t'] - a['t']
    d = {k: b[k] - a[k] for k in b}
    own = 'RX' if fwd == 'rxonly' else 'TX'
    own_frames = d[f'{own}-packets']
    arrived = None if fwd == 'rxonly' else gen_rate(m0, m1, 'rx_frames')
    frames = own_frames * thr['secs'] / secs
    threads = thr['threads']['pmd']
    return {'mpps': (arrived or own_frames / secs) / 1e6,
            'own_mpps': own_frames / secs / 1e6,
            'gbps': (gen_rate(m0, m1, 'rx_bytes') if arrived else
                     d['RX-bytes'] / secs) * 8 / 1e9,
            'offered_mpps': None if fwd == 'txonly' else
            gen_rate(m0, m1, 'tx_packets') / 1e6,
            'drops': per_s({'missed': d['RX-missed'],
                            'rx-errors': d['RX-errors'],
                            'tx-errors': d['TX-errors']}, secs),
            'cost': {'lcore': cost(threads, thr['secs'], frames,
                                   TESTPMD_WORKER),
                     'rest': cost(threads, thr['secs'], frames,
                                  exclude=(TESTPMD_WORKER,)),
                     'gen': gen_cost(thr, m0, m1)},
            'threads': thr, 'cpu': use, 'secs': secs, 'counters': d}


# --- points, runs, medians -----------------------------------------------

# The sizes testpmd's txonly, and so the peers' points, are measured at.
PEER_SIZES = ('64', '1500')


def raw_points():
    """The receive limit everywhere; the forwarding loop's and the
    sender's where illan's macswap and txonly are held against them, and
    the receivers that copy each frame out or only sum it, the floors for
    illan's I/O thread copying and in zero copy (a
    sender has no XDP program and never waits: its mode and wait only say
    which illan points it stands for)."""
    return [{'fwd': 'drop', 'size': s, 'mode': m, 'wait': w}
            for s in SIZES for m in MODES for w in WAITS] + \
        [{'fwd': f, 'size': s, 'mode': 'native', 'wait': 'poll'}
         for f in ('copy', 'sum') for s in PEER_SIZES] + \
        [{'fwd': 'macswap', 'size': '64', 'mode': 'native', 'wait': 'spin'}] + \
        [{'fwd': f, 'size': s, 'mode': 'native', 'wait': 'poll'}
         for f in ('macswap', 'txonly', 'txonly1') for s in PEER_SIZES]


def testpmd_points():
    """testpmd polls: its wait is spin, its XDP mode the kernel's choice
    (native on veth)."""
    return [testpmd_point(f, s) for f in FWDS for s in PEER_SIZES]


def testpmd_point(fwd, size):
    return {'fwd': fwd, 'size': size, 'mode': 'native', 'wait': 'spin',
            'peer': 'testpmd'}


# An illan point's UMEM: "copy" (guest-umem=off) or "guest", guest RAM
# lent to the kernel (guest-umem=on, receive zero copy).  The illan
# and trace points name theirs: illan's own default is auto.
UMEM_OPTION = {'copy': 'off', 'guest': 'on'}
# What a point's label ends with, by UMEM: copy points keep the labels
# (and --match globs) from before the twins.
UMEM_LABEL = {'copy': [], 'guest': ['zc']}
# The points that get a zero-copy twin by default; --full twins every
# such point with pools on.  txonly's twin sends in place too
# (tx-in-place=on); macswap's sends a copy, as the default does.
TWIN_FWDS = ('rxonly', 'txonly', 'macswap')
TWIN_AT = {'pools': 'on', 'mode': 'native', 'wait': 'poll'}


def user_umem(netdev_opts):
    """The UMEM --netdev-opts asks for: the copy points run with it (the
    last guest-umem= wins, as in illan); "copy" when it names none.

    >>> user_umem(''), user_umem('spin=on,guest-umem=on')
    ('copy', 'guest')
    >>> user_umem('guest-umem=on,guest-umem=auto')
    'auto'
    """
    umem = 'copy'
    for opt in netdev_opts.split(','):
        key, _, value = opt.partition('=')
        if key == 'guest-umem':
            umem = {v: k for k, v in UMEM_OPTION.items()}.get(value, value)
    return umem


def illan_points(full, umem='copy'):
    """Each point with umem, and right after it, in the same minute,
    its zero-copy twin where it has one (not when umem is already
    zero copy).

    >>> [label(p) for p in illan_points(False)][:4]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['rxonly/64/on/native/poll', 'rxonly/64/on/native/poll/zc',
     'rxonly/64/off/native/poll', 'rxonly/1500/on/native/poll']
    >>> len(illan_points(False)), len(illan_points(True))
    (33, 108)
    >>> len(illan_points(False, 'guest'))
    24
    """
    if full:
        points = [{'fwd': f, 'size': s, 'pools': p, 'mode': m, 'wait': w}
                  for f in FWDS for s in SIZES for p in ('on', 'off')
                  for m in MODES for w in WAITS]
    else:
        points = [{'fwd': f, 'size': s, 'pools': p, 'mode': 'native',
                   'wait': 'poll'}
                  for f in FWDS for s in SIZES for p in ('on', 'off')]
        points += [{'fwd': f, 'size': '64', 'pools': 'on', 'mode': m,
                    'wait': w}
                   for f in ('rxonly', 'macswap')
                   for m, w in (('native', 'spin'), ('skb', 'poll'),
                                ('skb', 'spin'))]
    twinned = []
    for point in points:
        twinned.append(dict(point, umem=umem))
        if has_twin(point, full) and umem != 'guest':
            twinned.append(dict(point, umem='guest'))
    return twinned


def has_twin(point, full):
    at = {'pools': 'on'} if full else TWIN_AT
    return point['fwd'] in TWIN_FWDS and \
        all(point[k] == v for k, v in at.items())


def steal(run):
    return max(c['steal'] for c in run['cpu']['cpus'].values())


def one_quiet_run(args, ns, point, one_run, errors):
    """One run, again while the host stole too much; None if it failed."""
    noisy = []
    for _ in range(1 + NOISY_RETRIES):
        quiet = wait_quiet()
        try:
            run = dict(one_run(args, ns, point), quiet_wait_s=quiet)
        except Failed as e:
            errors.append(str(e))
            run = None
        except Exception as e:      # a counter missing, say: next point
            errors.append(f'{type(e).__name__}: {e}')
            run = None
        Proc.stop_all()
        time.sleep(SETTLE_S)
        if run is None or steal(run) <= STEAL_MAX_PCT:
            return run
        noisy.append(run)
    return dict(min(noisy, key=steal), noisy=True)


def measure(args, ns, point, one_run):
    return summarise(point, *kept_runs(args, ns, point, one_run))


def kept_runs(args, ns, point, one_run):
    """The point's --runs runs (a noisy one's retries left out) and the
    errors of those that failed."""
    ns.set_mode(point['mode'])
    runs, errors = [], []
    for _ in range(args.runs):
        run = one_quiet_run(args, ns, point, one_run, errors)
        if run:
            runs.append(run)
    return runs, errors


def summarise(point, runs, errors):
    """The run with the median rate stands for the point, with every
    run's rate alongside, and its same-minute ratios.

    >>> r = summarise({'fwd': 'rxonly'}, [
    ...     {'mpps': 1.0, 'now': 3.0, 'now_copy': 1.5, 'now_sum': None},
    ...     {'mpps': 2.0, 'now': 2.0, 'now_copy': 1.2, 'now_sum': 1.1}], [])
    >>> r['runs'], r['runs_now'], r['runs_now_copy'], r['runs_now_sum']
    ([1.0, 2.0], [3.0, 2.0], [1.5, 1.2], [None, 1.1])
    >>> 'runs_now' in summarise({}, [{'mpps': 1.0}], [])
    False
    """
    result = dict(point)
    if not runs:
        result['failed'] = errors[0]
        return result
    median = statistics.median_low(r['mpps'] for r in runs)
    result.update(next(r for r in runs if r['mpps'] == median))
    result['runs'] = [round(r['mpps'], 3) for r in runs]
    result['noisy_runs'] = sum(1 for r in runs if r.get('noisy'))
    for key in RUN_RATIOS:
        if any(key in r for r in runs):
            result['runs_' + key] = [r.get(key) for r in runs]
    if errors:
        result['errors'] = errors
    return result


RAW_FWD = {'rxonly': 'drop', 'txonly': 'txonly', 'macswap': 'macswap'}
# Each run's ratios to the reference runs just before it, kept run by
# run (runs_now, ...): the target's, and rxonly's over its two floors.
RUN_RATIOS = ('now', 'now_copy', 'now_sum')


def raw_key(point, fwd=None):
    """The raw point a point is held against: the raw loop doing the same
    (receive for rxonly), same size, XDP mode and wait style (illan's irq
    or poll waiting is poll()).  testpmd polls but is held against the
    poll(2) receiver, the one the issue's targets name."""
    wait = 'poll' if point.get('peer') else point['wait']
    return (fwd or RAW_FWD[point['fwd']], point['size'], point['mode'], wait)


# --- latency -------------------------------------------------------------

# Frames a second, evenly spaced: low enough that no queue forms, so
# that a delay is the wake-up and the hand-over, not the backlog.
LATENCY_RATE = 20000
LATENCY_SIZE = '64'
# The I/O thread's wake-up modes: illan's af-xdp options for each, and
# whether the guest's vCPU spins too (elsewhere it waits for the device's
# interrupt, as Linux's NAPI does).  spin-io spins the I/O thread alone,
# so that on two CPUs it is not sharing its core with a spinning vCPU.
WAKES = {'spin': ('spin=on', True), 'spin-io': ('spin=on', False),
         'busy-poll': ('busy-poll=50', False), 'poll': ('', False)}
# Where the I/O thread runs: on the core of the kernel's receive path
# (the veth runs its peer's NAPI on the sending CPU: the generator's),
# or on the other one, where the vCPU stays.
CORES = {'same': GEN_CPU, 'other': DUT_CPU}
# The AF_XDP-interaction example's figures (igc NIC, 2021), us: spin on
# the same core; interrupt wake-ups with C-states / without.
REFERENCE = {('spin', 'same'): '1.5', ('spin-io', 'same'): '1.5',
             ('poll', 'same'): '22.9 / 3.2',
             ('poll', 'other'): '50.4 / 4.1'}
QUANTILES = ('p50-ns', 'p90-ns', 'p99-ns', 'p99.9-ns', 'max-ns')


def latency_points():
    """The stamps come from the XDP metadata, which a queue lending guest
    buffers (guest-umem) goes without unless rx-metadata=on is given."""
    return [{'latency': True, 'wake': w, 'core': c, 'fwd': 'rxonly',
             'size': LATENCY_SIZE, 'pools': 'on', 'mode': 'native',
             'wait': 'spin' if WAKES[w][1] else 'poll',
             'netdev_opts': ','.join(filter(None, (WAKES[w][0],
                                                   'rx-metadata=on')))}
            for w in WAKES for c in CORES]


def pin_threads(pid, prefix, cpu):
    """What taskset -p does, to every thread of pid whose name starts
    with prefix; their ids."""
    tids = [tid for tid, (name, _) in thread_ticks(pid).items()
            if name.startswith(prefix)]
    for tid in tids:
        os.sched_setaffinity(int(tid), {cpu})
    if not tids:
        raise Failed(f'no thread {prefix}* in illan to pin')
    return tids


def net_rx_softirqs():
    """NET_RX softirqs run so far, by CPU: where the receive path ran."""
    with open('/proc/softirqs') as f:
        cpus = f.readline().split()
        for line in f:
            name, *counts = line.split()
            if name == 'NET_RX:':
                return {c.lower(): int(n) for c, n in zip(cpus, counts)}
    return {}


def latency_run(args, ns, point):
    """One illan from start to end, the generator at LATENCY_RATE: every
    sample of both histograms is of this run (one a device batch)."""
    with tempfile.TemporaryDirectory(prefix='illan-bench-') as tmp:
        illan, qmp = start_illan(args, ns, point, tmp)
        try:
            pin_threads(illan.pid, IO_THREAD, CORES[point['core']])
            soft0, cpu = net_rx_softirqs(), CpuWindow([], illan.pid)
            gen = start_gen(args, ns, LATENCY_SIZE, args.secs + 5, NIC_MAC,
                            '--rate', str(LATENCY_RATE))
            try:
                m0 = gen_mark(gen)
                time.sleep(args.secs)
                m1, use = gen_mark(gen), cpu.close()
                net, guest = qmp.cmd('x-query-net-stats'), guest_stats(qmp)
            finally:
                gen.stop()
            soft1 = net_rx_softirqs()
        except (QmpError, OSError) as e:
            raise Failed(f'{e}; {illan.stderr()}')
        finally:
            stop_illan(illan, qmp)
    device = flatten(net)
    return {'mpps': gen_rate(m0, m1, 'tx_packets') / 1e6,
            'device': net['netdevs'][0]['backend']['queues'][0]['rx-latency'],
            'guest': guest['rx-latency'],
            'delivered': device['nics.0.rx.delivered'],
            'net_rx_softirqs': {c: soft1[c] - soft0.get(c, 0) for c in soft1},
            'cpu': use, 'secs': args.secs}


def measure_latency(args, ns, point):
    """--runs runs; the one with the median p50 to the guest stands for
    the point."""
    ns.set_mode(point['mode'])
    runs, errors = [], []
    for _ in range(args.runs):
        run = one_quiet_run(args, ns, point, latency_run, errors)
        if run and run['guest']['samples']:
            runs.append(run)
        elif run:
            errors.append('no sample: is rx-metadata on?')
    result = dict(point)
    if not runs:
        result['failed'] = errors[0]
        return result
    runs.sort(key=lambda r: r['guest']['p50-ns'])
    result.update(runs[(len(runs) - 1) // 2])
    result['runs'] = [r['guest']['p50-ns'] for r in runs]
    result['noisy_runs'] = sum(1 for r in runs if r.get('noisy'))
    if errors:
        result['errors'] = errors
    return result


# --- output --------------------------------------------------------------

def fmt(value, digits=2):
    return '-' if value is None else f'{value:.{digits}f}'


DROPS_SHOWN = 3


def fmt_drops(drops):
    if not drops:
        return '0'
    top = sorted(drops.items(), key=lambda kv: -kv[1])[:DROPS_SHOWN]
    return ', '.join(f'{k} {v / 1e3:.1f}k' if v >= 1000 else f'{k} {v}'
                     for k, v in top)


def print_table(title, header, results, row):
    """A failed point shows as FAILED[n] in its row and its reason, n,
    under the table."""
    failures = [r['failed'] for r in results if 'failed' in r]
    rows, n = [], 0
    for r in results:
        if 'failed' in r:
            n += 1
        rows.append(row(r, f'FAILED[{n}]'))
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: '| ' + ' | '.join(
        str(c).ljust(w) for c, w in zip(cells, widths)) + ' |'
    print(f'\n{title}\n')
    print(line(header))
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for cells in rows:
        print(line(cells))
    for i, why in enumerate(failures, 1):
        print(f'[{i}] {why}')
    sys.stdout.flush()


def cpu_cells(r):
    cpus, soft = r['cpu']['cpus'], r['cpu']['ksoftirqd']
    return [fmt(cpus['cpu0']['busy'], 0), fmt(cpus['cpu1']['busy'], 0),
            f"{soft.get('cpu0', 0):.0f}/{soft.get('cpu1', 0):.0f}",
            f"{cpus['cpu0']['steal']:.0f}/{cpus['cpu1']['steal']:.0f}",
            fmt(r['cpu']['foreign'], 0)]


def fmt_cost(c):
    """ns a frame (share of one CPU)."""
    if c is None:
        return '-'
    return f"{fmt(c['ns'], 0)} ({c['pct']:.0f}%)"


def ratio(a, b):
    return a / b if a is not None and b else None


def runs_cell(r):
    cell = ' '.join(fmt(m) for m in r['runs'])
    return cell + (f' ({r["noisy_runs"]} noisy)' if r['noisy_runs'] else '')


def failed_row(head, header, failed):
    return head + [failed] + [''] * (len(header) - len(head) - 1)


RAW_HEADER = ['fwd', 'size', 'mode', 'wait', 'ns/frame (cpu)',
              'gen ns/frame (cpu)', 'Mpps', 'Gbit/s', 'offered Mpps',
              'drops/s', 'cpu0 %', 'cpu1 %', 'ksoftirqd %', 'steal %', 'other %',
              'runs (Mpps)']


def raw_row(r, failed='FAILED'):
    head = [r['fwd'], r['size'], r['mode'], r['wait']]
    if 'failed' in r:
        return failed_row(head, RAW_HEADER, failed)
    return head + [fmt_cost(r['cost']['rx']), fmt_cost(r['cost']['gen']),
                   fmt(r['mpps']), fmt(r['gbps']), fmt(r['offered_mpps']),
                   fmt_drops(r['drops'])] + cpu_cells(r) + [runs_cell(r)]


TESTPMD_HEADER = ['fwd', 'size', 'lcore ns/frame (cpu)', 'lcore vs raw',
                  'gen ns/frame (cpu)', 'Mpps', 'vs raw', 'own Mpps',
                  'offered Mpps', 'drops/s', 'cpu0 %', 'cpu1 %', 'ksoftirqd %', 'steal %',
                  'other %', 'runs (Mpps)']


def testpmd_row(r, failed='FAILED'):
    head = [r['fwd'], r['size']]
    if 'failed' in r:
        return failed_row(head, TESTPMD_HEADER, failed)
    return head + [fmt_cost(r['cost']['lcore']), fmt(r['vs_raw_ns']),
                   fmt_cost(r['cost']['gen']), fmt(r['mpps']),
                   fmt(r['vs_raw']), fmt(r['own_mpps']),
                   fmt(r['offered_mpps']), fmt_drops(r['drops'])] + \
        cpu_cells(r) + [runs_cell(r)]


ILLAN_HEADER = ['fwd', 'size', 'pools', 'mode', 'wait', 'umem',
                'I/O ns/frame (cpu)',
                'I/O vs raw', 'I/O vs raw copy', 'vCPU ns/frame (cpu)', 'vCPU vs raw',
                'all ns/frame (cpu)', 'all vs raw', 'gen ns/frame (cpu)',
                'Mpps',
                'vs raw', 'vs testpmd', 'offered Mpps', 'guest tx Mpps',
                'drops/s', 'in place / copied down', 'illan %', 'cpu0 %',
                'cpu1 %', 'ksoftirqd %', 'steal %', 'other %', 'runs (Mpps)']
# The device's frames delivered into a lent guest buffer as they came,
# and those copied from one into a smaller buffer of the guest's.
ZERO_COPY_COUNTERS = ('net.nics.0.device.rx-zero-copy',
                      'net.nics.0.device.rx-copy-down')
# txonly: the frames the guest sent, and those sent from guest RAM.
TX_IN_PLACE_COUNTERS = ('net.nics.0.device.tx-frames',
                        'net.nics.0.device.tx-in-place')


def zero_copy_cell(r):
    """The window's frames in place / copied down (txonly: in place /
    copied), in millions; empty for a point that copies.

    >>> r = {'umem': 'guest', 'fwd': 'rxonly', 'counters': {
    ...     'net.nics.0.device.rx-zero-copy': 1300000,
    ...     'net.nics.0.device.rx-copy-down': 14560000}}
    >>> zero_copy_cell(r), zero_copy_cell(dict(r, umem='copy'))
    ('1.30 M / 14.56 M', '')
    >>> zero_copy_cell({'umem': 'guest', 'fwd': 'txonly', 'counters': {
    ...     'net.nics.0.device.tx-frames': 2500000,
    ...     'net.nics.0.device.tx-in-place': 2400000}})
    '2.40 M / 0.10 M'
    """
    if r.get('umem', 'copy') == 'copy':
        return ''
    c = r['counters']
    if r.get('fwd') == 'txonly':
        sent, in_place = (c.get(k, 0) for k in TX_IN_PLACE_COUNTERS)
        return f'{fmt(in_place / 1e6)} M / {fmt((sent - in_place) / 1e6)} M'
    return ' / '.join(f'{fmt(c.get(k, 0) / 1e6)} M'
                      for k in ZERO_COPY_COUNTERS)


def illan_row(r, failed='FAILED'):
    head = [r['fwd'], r['size'], r['pools'], r['mode'], r['wait'],
            r.get('umem', 'copy')]
    if 'failed' in r:
        return failed_row(head, ILLAN_HEADER, failed)
    c = r['cost']
    return head + [fmt_cost(c['io']), fmt(r['io_vs_raw']),
                   fmt(r.get('io_vs_copy')), fmt_cost(c['vcpu']), fmt(r['vcpu_vs_raw']),
                   fmt_cost(c['all']), fmt(r['all_vs_raw']),
                   fmt_cost(c['gen']),
                   fmt(r['mpps']), fmt(r['vs_raw']), fmt(r['vs_testpmd']),
                   fmt(r['offered_mpps']), fmt(r['guest_tx_mpps']),
                   fmt_drops(r['drops']), zero_copy_cell(r),
                   fmt(r['cpu'].get('illan'), 0)] + \
        cpu_cells(r) + [runs_cell(r)]


ADJACENT_HEADER = ['size', 'umem', 'raw ns/frame (cpu)',
                   'raw copy ns/frame (cpu)', 'raw sum ns/frame (cpu)',
                   'I/O ns/frame (cpu)', 'I/O vs raw', 'I/O vs raw copy',
                   'I/O vs raw sum', 'vCPU ns/frame (cpu)', 'vCPU vs raw',
                   'gen ns/frame: raw / raw copy / raw sum / illan',
                   'in place / copied down', 'runs: I/O vs raw',
                   'runs: I/O vs raw copy', 'runs: I/O vs raw sum']


TRACE_HEADER = ['point', 'illan', 'I/O ns/frame (cpu)', 'I/O vs off',
                'vCPU ns/frame (cpu)', 'vCPU vs off', 'all ns/frame (cpu)',
                'Mpps', 'drops/s', 'log MB', 'runs (Mpps)',
                'runs I/O ns/frame', 'runs vCPU ns/frame']
TRACE_BUILT = {'nop': 'events compiled out', 'off': 'all events off',
               'on': 'data-path events on'}


def trace_row(r, failed='FAILED'):
    head = [label(r), TRACE_BUILT[r['trace']]]
    if 'failed' in r:
        return failed_row(head, TRACE_HEADER, failed)
    c = r['cost']
    log = r.get('trace_log_bytes')
    return head + [fmt_cost(c['io']), fmt(r.get('io_vs_off')),
                   fmt_cost(c['vcpu']), fmt(r.get('vcpu_vs_off')),
                   fmt_cost(c['all']), fmt(r['mpps']), fmt_drops(r['drops']),
                   '-' if log is None else fmt(log / 1e6, 0), runs_cell(r),
                   ' '.join(fmt(n, 0) for n in r['runs_io_ns']),
                   ' '.join(fmt(n, 0) for n in r['runs_vcpu_ns'])]


def adjacent_row(r, failed='FAILED'):
    """
    >>> near = {'drop': {'thread': {'ns': 60, 'pct': 10}, 'gen': {'ns': 500}},
    ...         'copy': {'thread': {'ns': 400, 'pct': 70}, 'gen': {'ns': 550}},
    ...         'sum': {'thread': {'ns': 200, 'pct': 40}, 'gen': {'ns': 520}}}
    >>> r = {'fwd': 'rxonly', 'size': '1500', 'mode': 'native',
    ...      'wait': 'poll', 'mpps': 1.0, 'adjacent': near,
    ...      'cost': {'io': {'ns': 300, 'pct': 50},
    ...               'vcpu': {'ns': 120, 'pct': 40}, 'gen': {'ns': 250}}}
    >>> hold(r, {}, {}, [])
    >>> adjacent_row(r)[2:10]
    ['60 (10%)', '400 (70%)', '200 (40%)', '300 (50%)', '5.00', '0.75', \
'1.50', '120 (40%)']
    >>> near['sum'] = {'failed': 'xsk-rxdrop: no frame in 10 s'}
    >>> hold(r, {}, {}, [])
    >>> row = adjacent_row(r)
    >>> row[4], row[8], row[11]
    ('-', '-', '500 / 550 / - / 250')
    >>> r.update(runs_now=[5.0, 4.0], runs_now_copy=[0.75, 0.8],
    ...          runs_now_sum=[None, None])
    >>> adjacent_row(r)[-3:]
    ['5.00 4.00 (median 4.50)', '0.75 0.80 (median 0.78)', '- -']
    """
    head = [r['size'], r.get('umem', 'copy')]
    if 'failed' in r:
        return failed_row(head, ADJACENT_HEADER, failed)
    near, c = r['adjacent'], r['cost']
    refs = ADJACENT_REFS['rxonly']
    gens = [near[ref].get('gen') for ref in refs] + [c['gen']]
    return head + [fmt_cost(near[ref].get('thread')) for ref in refs] + \
        [fmt_cost(c['io']), fmt(r['io_vs_raw_now']),
         fmt(r['io_vs_copy_now']), fmt(r.get('io_vs_sum_now')),
         fmt_cost(c['vcpu']), fmt(r['vcpu_vs_raw_now']),
         ' / '.join(fmt(g['ns'], 0) if g else '-' for g in gens),
         zero_copy_cell(r)] + \
        [runs_now_cell(r, 'runs_' + key) for key in RUN_RATIOS]


SENT_NOW_HEADER = ['fwd', 'size', 'umem', 'against', 'its Mpps',
                   'its ns/frame (cpu)', 'Mpps', 'all ns/frame (cpu)',
                   'Mpps vs it', 'all vs it', 'runs: Mpps vs it']
REF_NAMES = {'txonly': 'raw sender', 'testpmd': 'testpmd'}


def sent_now_row(r, failed='FAILED'):
    """
    >>> r = {'fwd': 'macswap', 'size': '64', 'mpps': 0.9, 'now': 0.9,
    ...      'cost': {'all': {'ns': 1100, 'pct': 99}},
    ...      'all_vs_ref_now': 1.1, 'runs_now': [0.85, 0.9, None],
    ...      'adjacent': {'testpmd': {'mpps': 1.0,
    ...                               'thread': {'ns': 1000, 'pct': 100}}}}
    >>> sent_now_row(r)  # doctest: +NORMALIZE_WHITESPACE
    ['macswap', '64', 'copy', 'testpmd', '1.00', '1000 (100%)', '0.90',
     '1100 (99%)', '0.90', '1.10', '0.85 0.90 - (median 0.88)']
    >>> r['adjacent']['testpmd'] = {'failed': 'no dpdk-testpmd'}
    >>> sent_now_row(r)[3:6]
    ['testpmd', 'no dpdk-testpmd', '']
    """
    head = [r['fwd'], r['size'], r.get('umem', 'copy')]
    if 'failed' in r:
        return failed_row(head, SENT_NOW_HEADER, failed)
    ref = ADJACENT_REFS[r['fwd']][0]
    it = r['adjacent'][ref]
    head.append(REF_NAMES[ref])
    if 'failed' in it:
        return failed_row(head, SENT_NOW_HEADER, it['failed'])
    return head + [fmt(it['mpps']), fmt_cost(it['thread']), fmt(r['mpps']),
                   fmt_cost(r['cost']['all']), fmt(r['now']),
                   fmt(r['all_vs_ref_now']), runs_now_cell(r)]


def runs_now_cell(r, key='runs_now'):
    """Each run's ratio to the reference run just before it, and their
    median: on a host that moves within minutes, steadier than the
    median-rate run's.

    >>> runs_now_cell({'runs_now': [1.02, 0.98, 0.92]})
    '1.02 0.98 0.92 (median 0.98)'
    >>> runs_now_cell({'runs_now': [0.6, None]})
    '0.60 -'
    >>> runs_now_cell({'runs_now': [3.0]}, 'runs_now_sum')
    ''
    """
    runs = r.get(key, ())
    cell = ' '.join('-' if x is None else fmt(x) for x in runs)
    known = [x for x in runs if x is not None]
    if len(known) > 1:
        cell += f' (median {fmt(statistics.median(known))})'
    return cell


LATENCY_HEADER = ['I/O wake-up', 'I/O thread on', 'kpps',
                  'XDP to device queue, us: p50 / p90 / p99 / p99.9 / max',
                  'XDP to guest, us: p50 / p90 / p99 / p99.9 / max',
                  'example p50, us', 'NET_RX cpu0/cpu1', 'cpu0 %', 'cpu1 %',
                  'steal %', 'other %', 'runs (guest p50 us)']


def fmt_us(ns):
    """
    >>> [fmt_us(n) for n in (1536, 24576, 131072)]
    ['1.5', '25', '131']
    """
    return f'{ns / 1e3:.1f}' if ns < 10000 else f'{ns / 1e3:.0f}'


def fmt_quantiles(h):
    if not h['samples']:
        return 'no samples'
    return ' / '.join(fmt_us(h[q]) for q in QUANTILES)


def latency_row(r, failed='FAILED'):
    head = [{'spin': 'spin (+vCPU)', 'spin-io': 'spin (I/O only)'}.get(
                r['wake'], r['wake']),
            f"{r['core']} (cpu{CORES[r['core']]})"]
    if 'failed' in r:
        return failed_row(head, LATENCY_HEADER, failed)
    soft, cpus = r['net_rx_softirqs'], r['cpu']['cpus']
    return head + [fmt(r['mpps'] * 1e3, 1), fmt_quantiles(r['device']),
                   fmt_quantiles(r['guest']),
                   REFERENCE.get((r['wake'], r['core']), '-'),
                   f"{soft.get('cpu0', 0)}/{soft.get('cpu1', 0)}",
                   fmt(cpus['cpu0']['busy'], 0), fmt(cpus['cpu1']['busy'], 0),
                   f"{cpus['cpu0']['steal']:.0f}/{cpus['cpu1']['steal']:.0f}",
                   fmt(r['cpu']['foreign'], 0),
                   ' '.join(fmt_us(p) for p in r['runs']) +
                   (f' ({r["noisy_runs"]} noisy)' if r['noisy_runs'] else '')]


def hold(r, raw, peers, costs):
    """A point's ratios to what it is held against, measured before it in
    the run: its rate over the raw loop's and testpmd's (illan), and each
    named thread's ns a frame over the raw loop's thread."""
    if 'failed' in r:
        return
    limit = raw.get(raw_key(r))
    peer = peers.get((r['fwd'], r['size']))
    r['vs_raw'] = ratio(r['mpps'], limit and limit['mpps'])
    r['vs_testpmd'] = ratio(r['mpps'], peer and peer['mpps'])
    for name, key in costs:
        r[name] = ratio(r['cost'][key]['ns'],
                        limit and limit['cost']['rx']['ns'])
    if 'io' in r['cost'] and r['fwd'] == 'rxonly':
        floor = raw.get(raw_key(r, 'copy'))
        r['io_vs_copy'] = ratio(r['cost']['io']['ns'],
                                floor and floor['cost']['rx']['ns'])
    near = r.get('adjacent')
    if near and r['fwd'] == 'rxonly':
        floors = floor_ratios('rxonly', r, near)
        r['io_vs_raw_now'] = now_ratio('rxonly', r, near)
        r['io_vs_copy_now'] = floors['now_copy']
        r['io_vs_sum_now'] = floors['now_sum']
        r['vcpu_vs_raw_now'] = ratio(r['cost']['vcpu']['ns'],
                                     ref_ns(near, 'drop'))
    elif near:
        r['all_vs_ref_now'] = ratio(r['cost']['all']['ns'],
                                    ref_ns(near, ADJACENT_REFS[r['fwd']][0]))


def ref_ns(near, ref):
    """What a frame cost the thread of @ref's run, None if it failed."""
    return None if 'failed' in near[ref] else near[ref]['thread']['ns']


def machine():
    model, mem = '?', 0
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    with open('/proc/meminfo') as f:
        mem = int(f.readline().split()[1]) // (1024 * 1024)
    return f'{os.cpu_count()} CPUs, {model}, {mem} GiB'


# --- main ----------------------------------------------------------------

PARTS = ('raw', 'testpmd', 'illan', 'latency', 'trace')


def build_options(tree):
    out = subprocess.run(['meson', 'introspect', '--buildoptions', tree],
                         capture_output=True, text=True, check=True).stdout
    return {o['name']: o['value'] for o in json.loads(out)}


def trace_tree_mismatch(build, nop):
    """Why the nop tree cannot stand for BUILD with its events compiled
    out, from the trees' meson options; None when it can.

    >>> base = {'buildtype': 'debugoptimized', 'b_lto': True,
    ...         'trace_backends': 'log'}
    >>> trace_tree_mismatch(base, dict(base, trace_backends='nop'))
    >>> trace_tree_mismatch(base, base)
    "trace_backends is 'log', not 'nop'"
    >>> trace_tree_mismatch(base, dict(base, trace_backends='nop',
    ...                                b_lto=False, buildtype='debug'))
    "b_lto is False, buildtype is 'debug' (BUILD: True, 'debugoptimized')"
    """
    if nop.get('trace_backends') != 'nop':
        return f"trace_backends is {nop.get('trace_backends')!r}, not 'nop'"
    names = sorted(n for n in build.keys() | nop.keys()
                   if n != 'trace_backends' and build.get(n) != nop.get(n))
    if not names:
        return None
    return (', '.join(f'{n} is {nop.get(n)!r}' for n in names) +
            f" (BUILD: {', '.join(repr(build.get(n)) for n in names)})")


def tree_is_stale(tree):
    out = subprocess.run(['ninja', '-C', tree, '-n', 'illan'],
                         capture_output=True, text=True).stdout
    return 'no work to do' not in out


def check_trace_trees(p, args):
    """The trace part's nop row is read against BUILD's: the same build
    but for the events, and both up to date."""
    nop = args.notrace_build
    setup = (f'meson setup {nop} --buildtype=debugoptimized -Db_lto=true '
             f'-Dtrace_backends=nop && ninja -C {nop} illan')
    if not os.path.exists(os.path.join(nop, 'illan')):
        p.error(f'--notrace-build {nop}: no illan there; build one: {setup}')
    why = trace_tree_mismatch(build_options(args.build), build_options(nop))
    if why:
        p.error(f'--notrace-build {nop}: {why}; configure it with the '
                f'options of --build {args.build} and -Dtrace_backends=nop')
    for tree in (args.build, nop):
        if tree_is_stale(tree):
            p.error(f'{tree}: illan is not up to date; run ninja -C {tree} '
                    'illan')
    if not args.no_instr and not shutil.which('valgrind'):
        p.error('the trace part counts instructions with valgrind, which '
                'is not installed: make bench-deps installs it (or pass '
                '--no-instr)')


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--build', default='build', help='meson build directory')
    p.add_argument('--secs', type=int,
                   help='seconds per run: 5 (the least) or more; '
                   '2 with --quick')
    p.add_argument('--runs', type=int, default=3, help='runs per point')
    p.add_argument('--only', metavar='PART', action='append',
                   choices=PARTS, help='measure this part only: raw, '
                   'testpmd, illan, latency or trace (repeatable; default '
                   'all)')
    p.add_argument('--full', action='store_true',
                   help='every fwd, size, pools, mode and wait')
    p.add_argument('--quick', action='store_true',
                   help='smoke run: 1 run of 2 s per point')
    p.add_argument('--match', metavar='GLOB', action='append',
                   help='only the points whose label matches, e.g. '
                   '"rxonly/64/on/native/poll" or "*/64/*" (raw points: '
                   '"raw/64/native/poll", "raw-txonly/64/native/poll"; '
                   'testpmd: "testpmd/macswap/64"); may be given more '
                   'than once')
    p.add_argument('--no-instr', action='store_true',
                   help='trace part: leave out the instructions per frame '
                   'counted under valgrind (about a minute)')
    p.add_argument('--notrace-build', default='build-notrace',
                   help='meson build directory with -Dtrace_backends=nop, '
                   'for the trace part')
    p.add_argument('--illan-cpus', default=str(DUT_CPU),
                   help='CPU list illan is pinned to (taskset -c)')
    p.add_argument('--netdev-opts', default='',
                   help='more -netdev af-xdp options for illan, e.g. '
                        'rx-metadata=off')
    p.add_argument('--guest-opts', default='',
                   help='more -guest ibmveth options for illan, e.g. '
                        'dma=pool (the pools mapped whole: no TCE hcall '
                        'per frame)')
    p.add_argument('--json', help='where the figures go '
                   '(default BUILD/bench.json)')
    p.add_argument('--charts-dir', help='where the SVG charts go '
                   '(default: beside the JSON)')
    p.add_argument('--no-charts', action='store_true',
                   help='write the JSON only, no SVG charts')
    p.add_argument('--charts-only', metavar='JSON',
                   help="draw the SVG charts of an earlier run's JSON and "
                   'measure nothing')
    args = p.parse_args()
    if args.quick:
        args.runs = 1
    args.secs = args.secs or (2 if args.quick else 5)
    if args.secs < (1 if args.quick else 5):
        p.error('--secs is at least 5 (or 1 with --quick)')
    args.only = args.only or list(PARTS)
    if 'trace' in args.only and not args.charts_only:
        check_trace_trees(p, args)
    args.json = args.json or os.path.join(args.build, 'bench.json')
    return args


def header(args):
    info = {'date': datetime.datetime.now().astimezone().isoformat(
                timespec='seconds'),
            'kernel': f'{platform.system()} {platform.release()} '
                      f'{platform.version()}',
            'machine': machine()}
    illan = illan_points(args.full, user_umem(args.netdev_opts))
    points = sum(len(selected(args, pts)) for part, pts in (
        ('raw', raw_points()), ('testpmd', testpmd_points()),
        ('illan', illan),
        ('latency', latency_points()), ('trace', trace_points()))
        if part in args.only)
    if 'illan' in args.only:
        points += sum(len(ADJACENT_REFS[p['fwd']])
                      for p in selected(args, illan) if is_adjacent(p))
    minutes = points * args.runs * (args.secs + RUN_OVERHEAD_S) / 60
    print(f'date:    {info["date"]}\nkernel:  {info["kernel"]}\n'
          f'machine: {info["machine"]}\n'
          f'plan:    {points} points x {args.runs} runs of {args.secs} s, '
          f'about {minutes:.0f} min')
    return info


def label(point):
    """fwd/size/pools/mode/wait for illan, with /zc for a zero-copy point
    (/auto for --netdev-opts guest-umem=auto); raw/size/mode/wait for the
    receive limit, raw-copy/... and raw-sum/... for the receivers that copy
    or sum each frame, raw-macswap/... and raw-txonly/... for the
    forwarding loop's and the sender's; testpmd/fwd/size for the peer;
    latency/wake/core for the latency table's; trace/how/size for the
    trace part's (how: nop, off, on)."""
    if point.get('trace'):
        return f"trace/{point['trace']}/{point['size']}"
    if point.get('peer'):
        return f"{point['peer']}/{point['fwd']}/{point['size']}"
    if point.get('latency'):
        return f"latency/{point['wake']}/{point['core']}"
    if 'pools' in point:
        keys = ('fwd', 'size', 'pools', 'mode', 'wait')
        umem = point.get('umem', 'copy')
        return '/'.join([point[k] for k in keys] +
                        UMEM_LABEL.get(umem, [umem]))
    raw = 'raw' if point['fwd'] == 'drop' else 'raw-' + point['fwd']
    return '/'.join([raw] + [point[k] for k in ('size', 'mode', 'wait')])


def selected(args, points):
    if not args.match:
        return points
    return [p for p in points
            if any(fnmatch.fnmatchcase(label(p), g) for g in args.match)]


def bench(args, report):
    """The raw loops first, then testpmd, then illan: each is held against
    what came before it in the same run."""
    raw, peers = {}, {}
    with Netns() as ns:
        if 'raw' in args.only:
            for point in selected(args, raw_points()):
                r = measure(args, ns, point, raw_run)
                report['raw'].append(r)
                if 'failed' not in r:
                    raw[raw_key(r, r['fwd'])] = r
                progress(r)
            print_table('Raw AF_XDP (xsk-rxdrop: receive, a macswap loop, '
                        'a sender)', RAW_HEADER, report['raw'], raw_row)
        if 'testpmd' in args.only:
            for point in selected(args, testpmd_points()):
                r = measure(args, ns, point, testpmd_run)
                hold(r, raw, {}, (('vs_raw_ns', 'lcore'),))
                report['testpmd'].append(r)
                if 'failed' not in r:
                    peers[(r['fwd'], r['size'])] = r
                progress(r)
            print_table("DPDK testpmd, AF_XDP driver (net_af_xdp)",
                        TESTPMD_HEADER, report['testpmd'], testpmd_row)
        if 'illan' in args.only:
            for point in selected(args, illan_points(
                    args.full, user_umem(args.netdev_opts))):
                r = measure(args, ns, point, illan_run_adjacent
                            if is_adjacent(point) else illan_run)
                hold(r, raw, peers, (('io_vs_raw', 'io'),
                                     ('vcpu_vs_raw', 'vcpu'),
                                     ('all_vs_raw', 'all')))
                report['illan'].append(r)
                progress(r)
            print_table('illan (spapr-vlan + af-xdp, built-in ibmveth guest)',
                        ILLAN_HEADER, report['illan'], illan_row)
            near = [r for r in report['illan'] if is_adjacent(r)]
            received = [r for r in near if r['fwd'] == 'rxonly']
            sent = [r for r in near if r['fwd'] != 'rxonly']
            if received:
                print_table('illan against the raw receivers run just '
                            'before each of its runs (the same minute)',
                            ADJACENT_HEADER, received, adjacent_row)
            if sent:
                print_table('illan against the raw sender (txonly) and '
                            'testpmd (macswap) run just before each of '
                            'its runs (the same minute)',
                            SENT_NOW_HEADER, sent, sent_now_row)
        if 'latency' in args.only:
            for point in selected(args, latency_points()):
                r = measure_latency(args, ns, point)
                report['latency'].append(r)
                progress(r)
            print_table(f'Latency: illan rxonly, {LATENCY_SIZE} B at '
                        f'{LATENCY_RATE // 1000} kpps, native; from the XDP '
                        'program to the entry visible in the device queue '
                        'and to the guest reading it',
                        LATENCY_HEADER, report['latency'], latency_row)
        if 'trace' in args.only:
            for r in measure_trace(args, ns, selected(args, trace_points())):
                report['trace'].append(r)
                progress(r)
            trace_vs_off(report['trace'])
            print_table('Trace events: illan rxonly, pools on, native, poll; '
                        'events compiled out, all off, and the data path\'s '
                        'on (logging to a file)',
                        TRACE_HEADER, report['trace'], trace_row)
            for size in PEER_SIZES if not args.no_instr else ():
                r = measure_trace_instr(args, ns, size)
                report['trace_instr'].append(r)
                print(f'  trace instructions/{size}'
                      f'{": " + r["failed"] if "failed" in r else ""}',
                      flush=True)
            print_table('Trace events all off against compiled out: the '
                        'runs above in pairs from the same minute, and the '
                        'instructions per frame (callgrind, paced)',
                        TRACE_OFF_HEADER,
                        trace_off_results(report['trace'],
                                          report['trace_instr']),
                        trace_off_row)


def progress(r):
    done = f': {r["failed"]}' if 'failed' in r else \
        f' guest p50 {fmt_us(r["guest"]["p50-ns"])} us' if r.get('latency') \
        else f' {r["mpps"]:.2f} Mpps'
    print(f'  {label(r)}{done}', flush=True)


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main():
    args = parse_args()
    if args.charts_only:
        return charts.write_charts(args.charts_only, args.charts_dir, 'bench')
    if os.geteuid() != 0:
        print('bench: needs root: it creates network namespaces and veth '
              'pairs and attaches XDP programs', file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, interrupted)
    report = dict(header(args), secs=args.secs, runs=args.runs, raw=[],
                  testpmd=[], illan=[], latency=[], trace=[],
                  trace_instr=[])
    try:
        bench(args, report)
    except KeyboardInterrupt:
        print('bench: interrupted; namespaces removed', file=sys.stderr)
        return 130
    finally:
        with open(args.json, 'w') as f:
            json.dump(report, f, indent=1)
    print(f'\nJSON: {args.json}')
    if not args.no_charts:
        charts.write_charts(args.json, args.charts_dir, 'bench')
    return 0


if __name__ == '__main__':
    sys.exit(main())
