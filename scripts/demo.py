#!/usr/bin/env python3
"""The main job (`make run`): real traffic through spapr-vlan, pools off
against pools on.

As root it joins two network namespaces through illan:

  peer ns: veth ── af-xdp ── spapr-vlan ── ibmveth model ── TAP :guest ns

runs `ping -i 0.2 -s 65507` for 20 s and a 10 s iperf3 TCP stream from the
peer to the guest, once with use-rx-buffer-pools=off and once with on, and
prints the two side by side with the figures measured on a real ppc64le
Linux 6.1 guest.

Then TCP in both directions through illan for pools off and on, the
guest's offloads (checksum, large send) off and on, MTU 1500 and 9000,
beside its ceilings: a plain veth pair joining the same two namespaces,
offloads off and on, in the same run.

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
import time

PEER_IP, GUEST_IP = "10.77.0.1", "10.77.0.2"
# The ceiling: a plain veth pair between the same two namespaces.
PLAIN_PEER_IP, PLAIN_GUEST_IP = "10.78.0.1", "10.78.0.2"
MTUS = (1500, 9000)
OFFLOAD_FEATURES = ("tx", "rx", "sg", "tso", "gso", "gro")
GUEST_MAC = "52:54:00:12:34:56"
PEER_MAC = bytes.fromhex("020000000001")
PING_SIZE = 65507

REFERENCE = {
    "ping loss": "100 %",
    "TCP Mbit/s": "~half of on",
    "frames by buffer size": "all 65536",
    "buffers posted": "511 of 1024",
    "fragments refused": "2218 of 2250",
}
REFERENCE_ON = {
    "ping loss": "0 %",
    "frames by buffer size": "2048 and 512",
}


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
    def __init__(self, build):
        self.illan = os.path.join(build, "illan")
        self.tag = str(os.getpid())
        self.ns = {k: f"il{k}{self.tag}" for k in ("peer", "dut", "guest")}
        self.veth_peer, self.veth_dut = f"ilp{self.tag}", f"ild{self.tag}"
        self.plain_peer, self.plain_guest = (f"ilcp{self.tag}",
                                             f"ilcg{self.tag}")
        self.tap = f"ilt{self.tag}"
        self.tmp = tempfile.mkdtemp(prefix="illan-demo-")
        self.procs = []
        self.made_ns = []

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
            pools, f"af-xdp,id=n0,ifname={self.veth_dut},mode=native",
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

    def run_root(self, pools, ping_secs, tcp_secs):
        proc, qmp = self.start_guest(pools)
        row = {"ping": self.ping(ping_secs)}
        row["tcp"] = self.iperf(tcp_secs)
        row.update(self.collect(qmp))
        self.stop_guest(proc, qmp)
        return row

    def iperf_median(self, secs, addr, reverse, runs):
        """The median of @runs streams, and all of them; failed runs
        count as 0."""
        got = [self.iperf(secs, addr, reverse) for _ in range(runs)]
        vals = sorted(g or 0.0 for g in got)
        return {"median": vals[len(vals) // 2], "runs": vals}

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
                    cells[("veth", offloads, mtu, rev)] = self.iperf_median(
                        tcp_secs, PLAIN_GUEST_IP, rev, runs)
            for pools in ("off", "on"):
                for offloads in (False, True):
                    print(f"demo: TCP, pools {pools}, offloads "
                          f"{'on' if offloads else 'off'}, MTU {mtu}",
                          file=sys.stderr)
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
                        continue
                    for rev in (False, True):
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
        "TCP Mbit/s": "skipped" if row["tcp"] is None else
                      f"{row['tcp']:.0f}",
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
    keys = list(a)
    w0 = max(len(k) for k in keys)
    w1 = max(len(a[k]) for k in keys + []) if keys else 10
    w1 = max(w1, len("pools off"))
    w2 = max(max(len(b[k]) for k in keys), len("pools on"))
    head = f"{'':{w0}}  {'pools off':{w1}}  {'pools on':{w2}}"
    if root:
        head += "  real Linux 6.1 guest, QEMU 7.2 (off / on)"
    print(head)
    print("-" * len(head))
    for k in keys:
        line = f"{k:{w0}}  {a[k]:{w1}}  {b[k]:{w2}}"
        if root and k in REFERENCE:
            line += f"  {REFERENCE[k]} / {REFERENCE_ON.get(k, '-')}"
        print(line)


def mbit(cell):
    if isinstance(cell, dict):
        lo, hi = cell["runs"][0], cell["runs"][-1]
        return (f"{cell['median']:.0f}" if len(cell["runs"]) == 1 else
                f"{cell['median']:.0f} ({lo:.0f}-{hi:.0f})")
    return "failed" if cell is None else f"failed: {cell}"[:40]


def print_tcp_table(cells):
    rows = [("plain veth, offloads off (ceiling)", "veth", False),
            ("plain veth, offloads on", "veth", True)]
    rows += [(f"illan pools {p}, offloads {'on' if o else 'off'}", p, o)
             for p in ("off", "on") for o in (False, True)]
    cols = [(m, r) for m in MTUS for r in (False, True)]
    head = [f"MTU {m} {'guest->peer' if r else 'peer->guest'}"
            for m, r in cols]
    w0 = max(len(r[0]) for r in rows)
    table = [[mbit(cells.get((what, o, m, r))) for m, r in cols]
             for _, what, o in rows]
    ws = [max(len(h), *(len(t[i]) for t in table))
          for i, h in enumerate(head)]
    print()
    print("TCP, Mbit/s (iperf3, one stream; the same two namespaces; "
          "median (lowest-highest) of the runs)")
    line = f"{'':{w0}}  " + "  ".join(f"{h:>{w}}" for h, w in zip(head, ws))
    print(line)
    print("-" * len(line))
    for (name, _, _), t in zip(rows, table):
        print(f"{name:{w0}}  " +
              "  ".join(f"{c:>{w}}" for c, w in zip(t, ws)))
    print_tcp_checks(cells)


def ratio(cells, a, b):
    x, y = cells.get(a), cells.get(b)
    if isinstance(x, dict) and isinstance(y, dict) and y["median"]:
        return x["median"] / y["median"]
    return None


def print_tcp_checks(cells):
    base = ("veth", False, 1500, False)
    checks = [
        ("illan pools on, offloads on, MTU 1500, peer->guest / plain veth "
         "offloads off", ratio(cells, ("on", True, 1500, False), base), 0.8),
        ("illan pools on, offloads on, MTU 1500, guest->peer (large send) "
         "/ plain veth offloads off",
         ratio(cells, ("on", True, 1500, True), ("veth", False, 1500, True)),
         1.0),
        ("illan pools on, offloads on, MTU 9000, peer->guest / plain veth "
         "offloads off, MTU 1500",
         ratio(cells, ("on", True, 9000, False), base), 1.0),
    ]
    for m in MTUS:
        for o in (False, True):
            for r in (False, True):
                checks.append((f"pools on / pools off, offloads "
                               f"{'on' if o else 'off'}, MTU {m}, "
                               f"{'guest->peer' if r else 'peer->guest'}",
                               ratio(cells, ("on", o, m, r),
                                     ("off", o, m, r)), 1.0))
    print()
    for name, value, want in checks:
        got = "-" if value is None else f"{value:.2f}"
        print(f"{name}: {got} (want >= {want})")
    stats = cells.get(("on", True, 1500, "stats"))
    if stats:
        o = stats["offloads"]
        print(f"guest offloads (pools on, offloads on, MTU 1500): rx-csum "
              f"{o['rx-csum']}, large-send {o['large-send']}, "
              f"rx-csum-good {o['rx-csum-good']}, rx-large {o['rx-large']}, "
              f"tx-csum-offloaded {o['tx-csum-offloaded']}, "
              f"tx-large-sends {o['tx-large-sends']}, GRO {o['gro-merged']} "
              f"segments merged into {o['gro-packets']} packets")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--ping-secs", type=int, default=20)
    ap.add_argument("--tcp-secs", type=int, default=10)
    ap.add_argument("--matrix-secs", type=int, default=5,
                    help="each iperf3 of the TCP table (0: no table)")
    ap.add_argument("--matrix-runs", type=int, default=3,
                    help="iperf3 runs per cell of the TCP table; the "
                         "table shows their median")
    args = ap.parse_args()
    demo = Demo(args.build)
    root = os.geteuid() == 0

    def on_signal(signum, frame):
        print(f"demo: signal {signum}", file=sys.stderr)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        if root:
            demo.make_namespaces()
        else:
            print("demo: not root, so no namespaces, veth, AF_XDP or TAP: "
                  "the pings go through a dgram netdev to the model "
                  "(fwd=rxonly) and the TCP stream is skipped; run as root "
                  "for the whole scenario", file=sys.stderr)
        rows = {}
        for pools in ("off", "on"):
            print(f"demo: use-rx-buffer-pools={pools}: ping -i 0.2 -s "
                  f"{PING_SIZE} for {args.ping_secs} s"
                  + (f", then iperf3 for {args.tcp_secs} s" if root else ""),
                  file=sys.stderr)
            rows[pools] = (demo.run_root(pools, args.ping_secs, args.tcp_secs)
                           if root else demo.run_dgram(pools, args.ping_secs))
        print_table(rows["off"], rows["on"], root)
        if root and args.matrix_secs:
            print_tcp_table(demo.tcp_matrix(args.matrix_secs,
                                            args.matrix_runs))
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


if __name__ == "__main__":
    sys.exit(main())
