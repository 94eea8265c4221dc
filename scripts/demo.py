#!/usr/bin/env python3
"""The main job (`make run`): real traffic through spapr-vlan, pools off
against pools on.

As root it joins two network namespaces through illan:

  peer ns: veth ── af-xdp ── spapr-vlan ── ibmveth model ── TAP :guest ns

runs `ping -i 0.2 -s 65507` for 20 s and three 5 s iperf3 TCP streams from
the peer to the guest, once with use-rx-buffer-pools=off and once with on,
and prints the two side by side, then what a real ppc64le Linux 6.1 guest
showed.

Then TCP in both directions through illan for pools off and on, the
guest's offloads (checksum, large send) off and on, MTU 1500 and 9000,
beside its ceilings: a plain veth pair joining the same two namespaces,
offloads off and on, in the same run.  Each cell is the median of three
5 s streams, with their spread.  Each check of a ratio says PASS or MISS.

It prints each step (step N of M, the time left) on stderr, with the CPU
that processes other than its own took during the last step: TCP rates
drop on a loaded machine, and the end says so when a check missed.

Without root it sends the same pings itself through a dgram netdev to the
model (no TAP, no TCP) and says what it skipped.  Everything it creates is
removed at the end, also on Ctrl-C.
"""

import argparse
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time

PEER_IP, GUEST_IP = "10.77.0.1", "10.77.0.2"
# The ceiling: a plain veth pair between the same two namespaces.
PLAIN_PEER_IP, PLAIN_GUEST_IP = "10.78.0.1", "10.78.0.2"
MTUS = (1500, 9000)
OFFLOAD_FEATURES = ("tx", "rx", "sg", "tso", "gso", "gro")
GUEST_MAC = "52:54:00:12:34:56"
PEER_MAC = bytes.fromhex("020000000001")
PING_SIZE = 65507
WIDTH = 100
# Seconds a step takes beyond its streams and pings: illan's start and
# stop, an iperf3 server's start, namespace commands.
STEP_SETUP_SECS = 3
STREAM_SETUP_SECS = 1.5

REFERENCE = (
    "A real Linux 6.1 guest on QEMU 7.2 showed, pools off / on: ping loss "
    "100 % / 0 %; TCP about half as fast off as on; frames by buffer size "
    "all 65536 / 2048 and 512; buffers posted 511 of 1024 (off); fragments "
    "refused 2218 of 2250 (off).")


class Qmp:
    """A QMP client on a unix socket: greeting, capabilities, commands."""

    def __init__(self, path, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.file = self.sock.makefile("rw")
        self.file.readline()
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.file.write(json.dumps(msg) + "\n")
        self.file.flush()
        while True:
            reply = json.loads(self.file.readline())
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise RuntimeError(reply["error"]["desc"])

    def close(self):
        self.sock.close()


class Demo:
    def __init__(self, build, netdev_opts=""):
        self.illan = os.path.join(build, "illan")
        self.netdev_extra = "," + netdev_opts if netdev_opts else ""
        self.tag = str(os.getpid())
        self.ns = {k: f"il{k}{self.tag}" for k in ("peer", "dut", "guest")}
        self.veth_peer, self.veth_dut = f"ilp{self.tag}", f"ild{self.tag}"
        self.plain_peer, self.plain_guest = (f"ilcp{self.tag}",
                                             f"ilcg{self.tag}")
        self.tap = f"ilt{self.tag}"
        self.tmp = tempfile.mkdtemp(prefix="illan-demo-")
        self.procs = []
        self.made_ns = []
        self.progress = Progress([])

    # ---- plumbing ----

    def sh(self, *argv, ns=None, check=True, **kw):
        cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
        return subprocess.run(cmd, check=check, text=True,
                              capture_output=True, **kw)

    def spawn(self, *argv, ns=None, **kw):
        cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
        p = subprocess.Popen(cmd, text=True, **kw)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        self.procs = []
        for ns in self.made_ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.made_ns = []
        subprocess.run(["rm", "-rf", self.tmp])

    def make_namespaces(self):
        for ns in self.ns.values():
            self.sh("ip", "netns", "add", ns)
            self.made_ns.append(ns)
            self.sh("ip", "link", "set", "lo", "up", ns=ns)
        self.sh("ip", "link", "add", self.veth_peer, "netns", self.ns["peer"],
                "type", "veth", "peer", "name", self.veth_dut,
                "netns", self.ns["dut"])
        self.sh("ip", "addr", "add", PEER_IP + "/24", "dev", self.veth_peer,
                ns=self.ns["peer"])
        self.sh("ip", "link", "set", self.veth_peer, "up", ns=self.ns["peer"])
        self.sh("ip", "link", "set", self.veth_dut, "up", ns=self.ns["dut"])
        self.sh("ip", "link", "add", self.plain_peer, "netns",
                self.ns["peer"], "type", "veth", "peer", "name",
                self.plain_guest, "netns", self.ns["guest"])
        for dev, ns, ip in ((self.plain_peer, "peer", PLAIN_PEER_IP),
                            (self.plain_guest, "guest", PLAIN_GUEST_IP)):
            self.sh("ip", "addr", "add", ip + "/24", "dev", dev,
                    ns=self.ns[ns])
            self.sh("ip", "link", "set", dev, "up", ns=self.ns[ns])

    def set_offloads(self, dev, ns, on):
        self.sh("ethtool", "-K", dev,
                *[x for f in OFFLOAD_FEATURES for x in (f, "on" if on
                                                         else "off")],
                ns=ns, check=False)

    def set_mtu(self, dev, ns, mtu):
        self.sh("ip", "link", "set", dev, "mtu", str(mtu), ns=ns)

    # ---- one run ----

    def start_illan(self, pools, netdev, guest, ns=None):
        qmp_path = os.path.join(self.tmp, f"qmp-{pools}.sock")
        argv = [self.illan, "-M", "pseries", "-nodefaults",
                "-device", f"spapr-vlan,id=net0,netdev=n0,"
                           f"use-rx-buffer-pools={pools}",
                "-netdev", netdev, "-guest", f"ibmveth,dev=net0,{guest}",
                "-qmp", f"unix:{qmp_path},server=on,wait=off"]
        proc = self.spawn(*argv, ns=ns)
        return proc, Qmp(qmp_path)

    def stop_illan(self, proc, qmp):
        qmp.close()
        proc.terminate()
        proc.wait(timeout=10)
        self.procs.remove(proc)

    def start_guest(self, pools, offloads=True, mtu=1500):
        """illan between the peer's veth and a TAP in the guest's
        namespace: the guest's MTU set as an admin would, inside the
        guest (x-guest-set-mtu) and on the TAP its stack is."""
        dut, guest, peer = self.ns["dut"], self.ns["guest"], self.ns["peer"]
        # AF_XDP never computes a checksum a sender left to the NIC: only
        # a guest that takes partial checksums can have the peer skip it.
        self.sh("ethtool", "-K", self.veth_peer, "tx",
                "on" if offloads else "off", ns=peer)
        self.set_mtu(self.veth_peer, peer, mtu)
        self.set_mtu(self.veth_dut, dut, mtu)
        self.sh("ip", "tuntap", "add", "dev", self.tap, "mode", "tap", ns=dut)
        proc, qmp = self.start_illan(
            pools, f"af-xdp,id=n0,ifname={self.veth_dut},mode=native"
            f"{self.netdev_extra}",
            f"fwd=tap,ifname={self.tap},"
            f"offloads={'on' if offloads else 'off'}", ns=dut)
        # illan holds the TAP open; the guest's kernel gets it.
        self.sh("ip", "link", "set", self.tap, "netns", guest, ns=dut)
        if mtu != 1500:
            qmp.cmd("x-guest-set-mtu", id="guest0", mtu=mtu)
            self.set_mtu(self.tap, guest, mtu)
        self.sh("ip", "link", "set", self.tap, "address", GUEST_MAC, "up",
                ns=guest)
        self.sh("ip", "addr", "add", GUEST_IP + "/24", "dev", self.tap,
                ns=guest)
        self.sh("ping", "-c", "1", "-W", "2", GUEST_IP, ns=peer, check=False)
        return proc, qmp

    def stop_guest(self, proc, qmp):
        self.stop_illan(proc, qmp)
        self.sh("ip", "link", "del", self.tap, ns=self.ns["guest"],
                check=False)

    def run_root(self, pools, ping_secs, tcp_secs, runs):
        proc, qmp = self.start_guest(pools)
        row = {"ping": self.ping(ping_secs)}
        row["tcp"] = self.iperf_median(tcp_secs, GUEST_IP, False, runs)
        row.update(self.collect(qmp))
        self.stop_guest(proc, qmp)
        return row

    def iperf_median(self, secs, addr, reverse, runs):
        """The median of @runs streams, and all of them; failed runs
        count as 0, and how many failed."""
        got = [self.iperf(secs, addr, reverse) for _ in range(runs)]
        vals = sorted(g or 0.0 for g in got)
        return {"median": vals[len(vals) // 2], "runs": vals,
                "failed": got.count(None)}

    def tcp_matrix(self, tcp_secs, runs):
        """Mbit/s peer->guest and guest->peer for every configuration,
        keyed (what, offloads, mtu, direction); a cell that failed holds
        its reason."""
        cells = {}
        peer, guest = self.ns["peer"], self.ns["guest"]
        for mtu in MTUS:
            for offloads in (False, True):
                self.set_offloads(self.plain_peer, peer, offloads)
                self.set_offloads(self.plain_guest, guest, offloads)
                self.set_mtu(self.plain_peer, peer, mtu)
                self.set_mtu(self.plain_guest, guest, mtu)
                for rev in (False, True):
                    self.progress.step(
                        f"TCP ceiling: plain veth, offloads "
                        f"{onoff(offloads)}, MTU {mtu}, {direction(rev)}, "
                        f"{runs} x {tcp_secs} s")
                    cells[("veth", offloads, mtu, rev)] = self.iperf_median(
                        tcp_secs, PLAIN_GUEST_IP, rev, runs)
            for pools in ("off", "on"):
                for offloads in (False, True):
                    what = (f"TCP through illan: pools {pools}, offloads "
                            f"{onoff(offloads)}, MTU {mtu}")
                    self.progress.step(f"{what}, {direction(False)}, "
                                       f"{runs} x {tcp_secs} s")
                    try:
                        proc, qmp = self.start_guest(pools, offloads, mtu)
                    except (subprocess.CalledProcessError, RuntimeError,
                            OSError) as e:
                        detail = (getattr(e, "stderr", "") or
                                  "illan did not start (its error is above)")
                        for rev in (False, True):
                            cells[(pools, offloads, mtu, rev)] = (
                                detail.strip().splitlines() or ["?"])[-1]
                        self.cleanup_guest()
                        self.progress.step(f"{what}: illan did not start, "
                                           f"{direction(True)} skipped")
                        continue
                    for rev in (False, True):
                        if rev:
                            self.progress.step(f"{what}, {direction(rev)}, "
                                               f"{runs} x {tcp_secs} s")
                        cells[(pools, offloads, mtu, rev)] = \
                            self.iperf_median(tcp_secs, GUEST_IP, rev, runs)
                    cells[(pools, offloads, mtu, "stats")] = \
                        qmp.cmd("x-query-guest-stats")["guests"][0]
                    self.stop_guest(proc, qmp)
        return cells

    def cleanup_guest(self):
        for p in [p for p in self.procs if self.illan in p.args]:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
            self.procs.remove(p)
        for ns in ("dut", "guest"):
            self.sh("ip", "link", "del", self.tap, ns=self.ns[ns],
                    check=False)

    def ping(self, secs):
        out = self.sh("ping", "-i", "0.2", "-s", str(PING_SIZE), "-w",
                      str(secs), "-q", GUEST_IP, ns=self.ns["peer"],
                      check=False).stdout
        m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        sent, got = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        return {"sent": sent, "received": got}

    def iperf(self, secs, addr=GUEST_IP, reverse=False):
        server = self.spawn("iperf3", "-s", "-1", "-B", addr,
                            ns=self.ns["guest"], stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            out = self.sh("iperf3", "-c", addr, "-t", str(secs), "-J",
                          "--connect-timeout", "5000",
                          *(["-R"] if reverse else []), ns=self.ns["peer"],
                          check=False, timeout=secs + 30).stdout
        except subprocess.TimeoutExpired:
            out = ""
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
        self.procs.remove(server)
        try:
            end = json.loads(out)["end"]
            return end["sum_received"]["bits_per_second"] / 1e6
        except (ValueError, KeyError):
            return None

    def collect(self, qmp):
        g = qmp.cmd("x-query-guest-stats")["guests"][0]
        nic = qmp.cmd("x-query-net-stats")["nics"][0]
        drops = {f"guest {k}": v for k, v in g["drops"].items() if v}
        drops.update({f"device {k}": v for k, v in
                      nic["device"]["rx-dropped"].items() if v})
        return {"guest": g, "posted": nic["device"]["rx-bufs-posted"],
                "drops": drops}

    # ---- without root ----

    def run_dgram(self, pools, ping_secs):
        peer_path = os.path.join(self.tmp, f"peer-{pools}")
        illan_path = os.path.join(self.tmp, f"illan-{pools}")
        peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        peer.bind(peer_path)
        proc, qmp = self.start_illan(
            pools, f"dgram,id=n0,local.type=unix,local.path={illan_path},"
                   f"remote.type=unix,remote.path={peer_path}", "fwd=rxonly")
        sent = 0
        deadline = time.monotonic() + ping_secs
        while time.monotonic() < deadline:
            for frame in icmp_echo_fragments(sent):
                send_paced(peer, illan_path, frame)
            sent += 1
            time.sleep(0.2)
        time.sleep(0.3)
        row = {"ping": {"sent": sent, "received": None}, "tcp": None}
        row.update(self.collect(qmp))
        row["ping"]["received"] = row["guest"]["reasm"]["datagrams-ok"]
        self.stop_illan(proc, qmp)
        peer.close()
        return row


def send_paced(sock, path, frame):
    """A unix dgram queue holds 10 datagrams: wait for room, drop none."""
    while True:
        try:
            sock.sendto(frame, path)
            return
        except BlockingIOError:
            time.sleep(0.0005)
        except OSError as e:
            if e.errno != 11:
                raise
            time.sleep(0.0005)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def icmp_echo_fragments(seq):
    """`ping -s 65507` from the peer as a 1500-MTU host puts it on the wire."""
    payload = bytes(i & 0xFF for i in range(PING_SIZE))
    icmp = struct.pack("!BBHHH", 8, 0, 0, 0x4242, seq & 0xFFFF) + payload
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    eth = bytes.fromhex(GUEST_MAC.replace(":", "")) + PEER_MAC + b"\x08\x00"
    src, dst = socket.inet_aton(PEER_IP), socket.inet_aton(GUEST_IP)
    frames, step = [], 1480
    for off in range(0, len(icmp), step):
        chunk = icmp[off:off + step]
        more = 0x2000 if off + step < len(icmp) else 0
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(chunk),
                         (0x100 + seq) & 0xFFFF, more | off // 8, 64, 1, 0,
                         src, dst)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        frames.append(eth + ip + chunk)
    return frames


def onoff(flag):
    return "on" if flag else "off"


def direction(reverse):
    return "guest->peer" if reverse else "peer->guest"


def fmt_secs(secs):
    """
    >>> fmt_secs(42.4), fmt_secs(500)
    ('42 s', '8 min 20 s')
    """
    m, s = divmod(round(secs), 60)
    return f"{m} min {s} s" if m else f"{s} s"


def time_left(planned, done, elapsed):
    """Seconds left before the steps from @done on end: their plan,
    scaled by how long the steps so far took against theirs.

    >>> time_left([10, 10, 20], 0, 0.0), time_left([10, 10, 20], 2, 40.0)
    (40, 40.0)
    """
    rest, spent = sum(planned[done:]), sum(planned[:done])
    return rest * elapsed / spent if spent and elapsed else rest


def progress_line(n, total, left, what, other=None, ncpu=None):
    """
    >>> print(progress_line(3, 28, 500, "TCP ceiling: plain veth, offloads "
    ...       "off, MTU 1500, peer->guest, 3 x 5 s", 0.25, 2))
    demo: step 3 of 28, about 8 min 20 s left: TCP ceiling: plain veth, offloads off, MTU 1500,
      peer->guest, 3 x 5 s (other processes took 0.2 of 2 CPUs in the last step)
    """
    line = f"demo: step {n} of {total}, about {fmt_secs(left)} left: {what}"
    if other is not None:
        line += (f" (other processes took {other:.1f} of {ncpu} CPUs in the "
                 f"last step)")
    return textwrap.fill(line, WIDTH, subsequent_indent="  ")


def tree_ticks(mine):
    """CPU ticks used so far by @mine and every process under it, the
    children they waited for included: a reaped child's time moves into
    its parent's, so the sum only grows."""
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The fields after the command's closing parenthesis, from state.
        fields = stat[stat.rfind(")") + 2:].split()
        procs[int(name)] = (int(fields[1]),
                            sum(int(x) for x in fields[11:15]))
    children = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [mine]
    while todo:
        pid = todo.pop()
        total += procs.get(pid, (0, 0))[1]
        todo.extend(children.get(pid, []))
    return total


def busy_ticks():
    """User, nice and system ticks of all CPUs (/proc/stat): interrupt
    time is left out, since the demo's own traffic is most of it."""
    with open("/proc/stat") as f:
        return sum(int(x) for x in f.readline().split()[1:4])


class LoadMeter:
    """CPUs taken by processes other than the demo's tree between two
    samples: all CPU time in user and system mode, less the tree's."""

    def __init__(self):
        self.hz = os.sysconf("SC_CLK_TCK")
        self.last = None
        self.loads = []

    def sample(self):
        now = time.monotonic()
        busy, ours = busy_ticks(), tree_ticks(os.getpid())
        load = None
        if self.last:
            then, busy0, ours0 = self.last
            other = max((busy - busy0) - (ours - ours0), 0)
            load = other / self.hz / max(now - then, 1e-3)
            self.loads.append(load)
        self.last = (now, busy, ours)
        return load


class Progress:
    """Announces each step on stderr: step N of M, the time left, and the
    other load during the step before."""

    def __init__(self, planned, load=None):
        self.planned = planned
        self.load = load
        self.done = 0
        self.start = None

    def step(self, what):
        now = time.monotonic()
        if self.start is None:
            self.start = now
        left = time_left(self.planned, self.done, now - self.start)
        other = self.load.sample() if self.load else None
        print(progress_line(self.done + 1, len(self.planned), left, what,
                            other, os.cpu_count()), file=sys.stderr,
              flush=True)
        self.done += 1

    def finish(self):
        if self.load:
            self.load.sample()


def fit_table(header, rows, right=False, width=WIDTH):
    """The lines of a table: names, then value columns; the widest value
    column wraps (at spaces) until every line fits @width.  A header cell
    may hold several lines.

    >>> for line in fit_table(["", "pools off", "pools on"],
    ...                       [["frames", "65536: 90", "512: 10, 2048: 80"],
    ...                        ["drops", "none", "none"]], width=30):
    ...     print(line.rstrip())
            pools off  pools on
    ------------------------------
    frames  65536: 90  512: 10,
                       2048: 80
    drops   none       none
    """
    head = [h.split("\n") for h in header]
    ws = [max([len(x) for x in h] + [len(r[i]) for r in rows])
          for i, h in enumerate(head)]
    while sum(ws) + 2 * (len(ws) - 1) > width and max(ws[1:]) > 8:
        ws[ws.index(max(ws[1:]), 1)] -= 1

    def lines(cells):
        wrapped = [textwrap.wrap(c, w) or [""] for c, w in zip(cells, ws)]
        out = []
        for k in range(max(len(c) for c in wrapped)):
            parts = [c[k] if k < len(c) else "" for c in wrapped]
            first = f"{parts[0]:{ws[0]}}"
            rest = [f"{p:>{w}}" if right else f"{p:{w}}"
                    for p, w in zip(parts[1:], ws[1:])]
            out.append("  ".join([first] + rest).rstrip())
        return out

    nhead = max(len(h) for h in head)
    out = [x for k in range(nhead) for x in lines(
        [h[k] if k < len(h) else "" for h in head])]
    out.append("-" * min(width, sum(ws) + 2 * (len(ws) - 1)))
    for r in rows:
        out += lines(r)
    return out


def fmt_row(row):
    g = row["guest"]
    ping = row["ping"]
    loss = (100.0 * (ping["sent"] - ping["received"]) / ping["sent"]
            if ping["sent"] else float("nan"))
    by_size = ", ".join(f"{k}: {v}" for k, v in
                        g["frames-by-buffer-size"].items() if v) or "-"
    ratio = g["buffer-bytes"] / g["rx-bytes"] if g["rx-bytes"] else 0
    reasm = g["reasm"]
    return {
        "ping loss": f"{loss:.0f} % ({ping['sent'] - ping['received']}"
                     f" of {ping['sent']})",
        "TCP Mbit/s, median ±spread": "skipped" if row["tcp"] is None else
                                      mbit(row["tcp"]),
        "frames by buffer size": by_size,
        "guest-buffer bytes per byte": f"{ratio:.2f}",
        "buffers posted": f"{row['posted']}",
        "fragments refused": f"{reasm['fragments-refused']} of "
                             f"{reasm['fragments']}",
        "datagrams reassembled": f"{reasm['datagrams-ok']}",
        "guest memory peak": f"{g['memory']['peak-bytes'] // 1024} KiB",
        "drops": ", ".join(f"{k} {v}" for k, v in row["drops"].items())
                 or "none",
    }


def print_table(off, on, root):
    a, b = fmt_row(off), fmt_row(on)
    print()
    for line in fit_table(["", "pools off", "pools on"],
                          [[k, a[k], b[k]] for k in a]):
        print(line)
    if root:
        print(textwrap.fill(REFERENCE, WIDTH))


def mbit(cell):
    """A median, and half the runs' range as a share of it.

    >>> mbit({"median": 3520.0, "runs": [2507.0, 3520.0, 3770.0]})
    '3520 ±18%'
    >>> mbit({"median": 940.4, "runs": [940.4]}), mbit(None), mbit("EIO")
    ('940', 'failed', 'failed')
    >>> mbit({"median": 0.0, "runs": [0.0, 0.0, 0.0], "failed": 3})
    'failed'
    """
    if isinstance(cell, dict) and cell.get("failed") != len(cell["runs"]):
        med, lo, hi = cell["median"], cell["runs"][0], cell["runs"][-1]
        if len(cell["runs"]) == 1:
            return f"{med:.0f}"
        spread = 100 * (hi - lo) / 2 / med if med else 0
        return f"{med:.0f} ±{spread:.0f}%"
    return "failed"


def print_tcp_table(cells):
    """Prints the table and its checks; returns (checks missed, checks)."""
    rows = [("plain veth, offloads off (ceiling)", "veth", False),
            ("plain veth, offloads on", "veth", True)]
    rows += [(f"illan pools {p}, offloads {onoff(o)}", p, o)
             for p in ("off", "on") for o in (False, True)]
    cols = [(m, r) for m in MTUS for r in (False, True)]
    table = [[name] + [mbit(cells.get((what, o, m, r))) for m, r in cols]
             for name, what, o in rows]
    print()
    print(textwrap.fill(
        "TCP, Mbit/s (iperf3, one stream, the same two namespaces): the "
        "median of the runs ±half their range, as a share of the median", WIDTH))
    for line in fit_table([""] + [f"MTU {m}\n{direction(r)}" for m, r in cols],
                          table, right=True):
        print(line)
    reasons = sorted({c for c in cells.values() if isinstance(c, str)})
    if any(isinstance(c, dict) and c.get("failed") == len(c.get("runs", ()))
           for c in cells.values()):
        reasons.insert(0, "no iperf3 stream of the cell gave a result")
    for reason in reasons:
        print(textwrap.fill(f"failed: {reason}", WIDTH))
    return print_tcp_checks(cells)


def ratio(cells, a, b):
    x, y = cells.get(a), cells.get(b)
    if isinstance(x, dict) and isinstance(y, dict) and y["median"]:
        return x["median"] / y["median"]
    return None


def verdict(value, want):
    """
    >>> verdict(0.95, 0.8), verdict(0.79, 0.8), verdict(None, 1.0)
    ('PASS', 'MISS', 'MISS')
    """
    return "PASS" if value is not None and value >= want else "MISS"


def print_tcp_checks(cells):
    """Prints each check with PASS or MISS; returns (missed, checks).

    >>> veth = {"median": 1000.0, "runs": [1000.0]}
    >>> on = {"median": 900.0, "runs": [900.0]}
    >>> print_tcp_checks({("veth", False, 1500, False): veth,
    ...                   ("on", True, 1500, False): on})
    ... # doctest: +ELLIPSIS
    <BLANKLINE>
    PASS  pools on, offloads on, MTU 1500, peer->guest / veth offloads off: 0.90 (want >= 0.8)
    MISS  pools on, offloads on, MTU 1500, guest->peer / veth offloads off: - (want >= 1.0)
    ...
    MISS  pools on / off, offloads on, MTU 9000, guest->peer: - (want >= 1.0)
    (10, 11)
    """
    base = ("veth", False, 1500, False)
    checks = [
        ("pools on, offloads on, MTU 1500, peer->guest / veth offloads off",
         ratio(cells, ("on", True, 1500, False), base), 0.8),
        ("pools on, offloads on, MTU 1500, guest->peer / veth offloads off",
         ratio(cells, ("on", True, 1500, True), ("veth", False, 1500, True)),
         1.0),
        ("pools on, offloads on, MTU 9000, peer->guest / veth off, MTU 1500",
         ratio(cells, ("on", True, 9000, False), base), 1.0),
    ]
    for m in MTUS:
        for o in (False, True):
            for r in (False, True):
                checks.append((f"pools on / off, offloads {onoff(o)}, "
                               f"MTU {m}, {direction(r)}",
                               ratio(cells, ("on", o, m, r),
                                     ("off", o, m, r)), 1.0))
    print()
    missed = 0
    for name, value, want in checks:
        got = "-" if value is None else f"{value:.2f}"
        mark = verdict(value, want)
        missed += mark == "MISS"
        print(f"{mark}  {name}: {got} (want >= {want})")
    stats = cells.get(("on", True, 1500, "stats"))
    if stats:
        o = stats["offloads"]
        print(textwrap.fill(
            f"guest offloads (pools on, offloads on, MTU 1500): rx-csum "
            f"{o['rx-csum']}, large-send {o['large-send']}, rx-csum-good "
            f"{o['rx-csum-good']}, rx-large {o['rx-large']}, "
            f"tx-csum-offloaded {o['tx-csum-offloaded']}, tx-large-sends "
            f"{o['tx-large-sends']}, GRO {o['gro-merged']} segments merged "
            f"into {o['gro-packets']} packets", WIDTH))
    return missed, len(checks)


def summary(missed, total, loads, ncpu):
    """
    >>> print(summary(0, 11, [0.1, 0.3], 2))
    All 11 checks PASS; other processes took 0.2 of the 2 CPUs on average
    (at most 0.3 in a step).
    >>> print(summary(2, 11, [0.1, 1.5], 2))  # doctest: +ELLIPSIS
    2 of 11 checks MISS.  A MISS need not be illan's: illan, iperf3 and the
    kernel's veth share this machine's 2 CPUs, and other processes took 0.8 of
    them on average (at most 1.5 in a step); rates also vary from run to run
    (the spread in the table).  Rerun on an idle machine before reading a MISS
    as a regression.
    """
    load = (f"other processes took {sum(loads) / len(loads):.1f} of the "
            f"{ncpu} CPUs on average (at most {max(loads):.1f} in a step)"
            if loads else "the other load was not measured")
    if not missed:
        return textwrap.fill(f"All {total} checks PASS; {load}.", 72)
    load = load.replace(f"of the {ncpu} CPUs", "of them")
    return textwrap.fill(
        f"{missed} of {total} checks MISS.  A MISS need not be illan's: "
        f"illan, iperf3 and the kernel's veth share this machine's {ncpu} "
        f"CPUs, and {load}; rates also vary from run to run (the spread in "
        f"the table).  Rerun on an idle machine before reading a MISS as a "
        f"regression.", 75)


def plan(args, root):
    """Seconds each step should take, in the order they run."""
    ceiling = args.matrix_runs * (args.matrix_secs + STREAM_SETUP_SECS)
    first = args.ping_secs + STEP_SETUP_SECS
    if root:
        first += args.tcp_runs * (args.tcp_secs + STREAM_SETUP_SECS)
    steps = [first, first]
    if root and args.matrix_secs:
        for _ in MTUS:
            steps += [ceiling] * 4
            steps += [ceiling + STEP_SETUP_SECS, ceiling] * 4
    return steps


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build",
                    help="the build tree holding illan (default: build)")
    ap.add_argument("--ping-secs", type=int, default=20,
                    help="how long each ping runs (default: 20)")
    ap.add_argument("--tcp-secs", type=int, default=5,
                    help="each iperf3 stream of the first table (default: 5)")
    ap.add_argument("--tcp-runs", type=int, default=3,
                    help="iperf3 streams per column of the first table; it "
                         "shows their median (default: 3)")
    ap.add_argument("--matrix-secs", type=int, default=5,
                    help="each iperf3 stream of the TCP table; 0 leaves the "
                         "table out (default: 5)")
    ap.add_argument("--matrix-runs", type=int, default=3,
                    help="iperf3 streams per cell of the TCP table; it shows "
                         "their median (default: 3)")
    ap.add_argument("--netdev-opts", default="", metavar="OPTS",
                    help="more options for illan's -netdev af-xdp, e.g. "
                         "guest-umem=off for the copy (default: none)")
    args = ap.parse_args()
    demo = Demo(args.build, args.netdev_opts)
    root = os.geteuid() == 0
    load = LoadMeter()
    demo.progress = Progress(plan(args, root), load)

    def on_signal(signum, frame):
        print(f"demo: signal {signum}", file=sys.stderr)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print(f"demo: {len(demo.progress.planned)} steps, about "
              f"{fmt_secs(sum(demo.progress.planned))}; /proc/loadavg at "
              f"the start: {loadavg()}" +
              (f"; -netdev af-xdp,...,{args.netdev_opts}"
               if args.netdev_opts else ""), file=sys.stderr)
        if root:
            demo.make_namespaces()
        else:
            print("demo: not root, so no namespaces, veth, AF_XDP or TAP: "
                  "the pings go through a dgram netdev to the model "
                  "(fwd=rxonly) and the TCP stream is skipped; run as root "
                  "for the whole scenario", file=sys.stderr)
        rows = {}
        for pools in ("off", "on"):
            demo.progress.step(
                f"use-rx-buffer-pools={pools}: ping -i 0.2 -s {PING_SIZE} "
                f"for {args.ping_secs} s" +
                (f", then {args.tcp_runs} x {args.tcp_secs} s iperf3 "
                 f"peer->guest" if root else ""))
            rows[pools] = (demo.run_root(pools, args.ping_secs,
                                         args.tcp_secs, args.tcp_runs)
                           if root else demo.run_dgram(pools, args.ping_secs))
        print_table(rows["off"], rows["on"], root)
        checks = None
        if root and args.matrix_secs:
            sys.stdout.flush()
            checks = print_tcp_table(demo.tcp_matrix(args.matrix_secs,
                                                     args.matrix_runs))
        demo.progress.finish()
        print()
        print(f"/proc/loadavg at the end: {loadavg()}")
        if checks:
            print(summary(*checks, load.loads, os.cpu_count()))
    except KeyboardInterrupt:
        print("demo: interrupted; cleaning up", file=sys.stderr)
        return 130
    except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
        detail = getattr(e, "stderr", "") or ""
        print(f"demo: {e} {detail.strip()}", file=sys.stderr)
        return 1
    finally:
        demo.cleanup()
    return 0


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


if __name__ == "__main__":
    sys.exit(main())
