#!/usr/bin/python3
"""Instructions per received frame on illan's I/O and vCPU threads,
counted by valgrind's callgrind.

Time per frame on a shared 2-CPU machine moves by more than a trace
check costs; the instructions a thread runs per frame do not.  illan
runs under callgrind on the bench's veth pair (af-xdp, native, the
built-in guest in rxonly, pools on) twice, with a few frames and with
many more; the difference of the two runs' counts over the difference
of their frames leaves out start-up and shutdown.  The frames come from
an AF_PACKET socket in the generator's namespace, paced by the guest's
count so that none is dropped (callgrind runs illan some 50 times
slower).

As a program (what measure() runs in the generator's namespace):
    instr.py drive QMP_PATH IFNAME FRAMES SIZE DST_MAC
"""
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

FRAMES = (300, 3300)
START_TIMEOUT_S = 120
# Frames on their way at once: below the rings' and pools' 256.
IN_FLIGHT = 32
# A function only each thread runs, to tell the threads' files apart.
THREAD_MARKS = {'io': 'receive_batch_locked', 'vcpu': 'napi_poll'}


class Failed(Exception):
    pass


def measure(build, ns, size, mac):
    """{'io': n, 'vcpu': n}: instructions per frame of @size bytes on
    each thread, illan from @build in @ns.dut."""
    totals = [run_counted(build, ns, size, mac, n) for n in FRAMES]
    frames = FRAMES[1] - FRAMES[0]
    return {t: round((totals[1][t] - totals[0][t]) / frames, 1)
            for t in THREAD_MARKS}


def run_counted(build, ns, size, mac, frames):
    with tempfile.TemporaryDirectory(prefix='illan-instr-') as tmp:
        out = os.path.join(tmp, 'callgrind.out')
        qmp = os.path.join(tmp, 'qmp.sock')
        err = open(os.path.join(tmp, 'illan.err'), 'w+')
        illan = subprocess.Popen(
            ['ip', 'netns', 'exec', ns.dut, 'valgrind', '--tool=callgrind',
             '--separate-threads=yes', f'--callgrind-out-file={out}',
             os.path.join(build, 'illan'), '-M', 'pseries', '-nodefaults',
             '-device', f'spapr-vlan,id=net0,netdev=n0,mac={mac},'
             'use-rx-buffer-pools=on',
             '-netdev', 'af-xdp,id=n0,ifname=dut0,mode=native,queues=1',
             '-guest', 'ibmveth,id=g0,dev=net0,fwd=rxonly',
             '-qmp', f'unix:{qmp},server=on,wait=off'],
            stdout=subprocess.DEVNULL, stderr=err)
        drive = subprocess.run(
            ['ip', 'netns', 'exec', ns.gen, sys.executable,
             os.path.abspath(__file__), 'drive', qmp, 'gen0', str(frames),
             str(size), mac], capture_output=True, text=True)
        try:
            illan.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            illan.kill()
            illan.wait()
        if drive.returncode or illan.returncode:
            err.seek(0)
            raise Failed(f'{drive.stderr.strip()} {err.read().strip()[-300:]}')
        return thread_totals(glob.glob(out + '-*'))


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
    if set(totals) != set(THREAD_MARKS):
        raise Failed(f'no callgrind file for {set(THREAD_MARKS) - set(totals)}')
    return totals


def summary(text):
    for line in text.splitlines():
        if line.startswith('summary:'):
            return int(line.split()[1])
    raise Failed('callgrind file without a summary line')


# --- the driver, in the generator's namespace ----------------------------

class Qmp:
    def __init__(self, path):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Failed(f'no QMP at {path}')
                time.sleep(0.2)
        self.f = self.sock.makefile('rw')
        self.f.readline()
        self.cmd('qmp_capabilities')

    def cmd(self, name, **args):
        self.f.write(json.dumps({'execute': name, 'arguments': args}) + '\n')
        self.f.flush()
        while True:
            reply = json.loads(self.f.readline())
            if 'error' in reply:
                raise Failed(f'{name}: {reply["error"]["desc"]}')
            if 'return' in reply:
                return reply['return']


def guest_rx(qmp):
    for guest in qmp.cmd('x-query-guest-stats')['guests']:
        if guest.get('id') == 'g0':
            return guest['rx-frames']
    raise Failed('no guest g0 in x-query-guest-stats')


def drive(qmp_path, ifname, frames, size, dst):
    qmp = Qmp(qmp_path)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((ifname, 0))
    frame = bytes.fromhex(dst.replace(':', '') + '020000000001' + '0800')
    frame += bytes(size - len(frame))
    wait_guest_up(qmp, tx, frame)
    base = guest_rx(qmp)
    deadline = time.monotonic() + 10 * START_TIMEOUT_S
    sent = 0
    while True:
        got = guest_rx(qmp) - base
        if got >= frames:
            break
        if time.monotonic() > deadline:
            raise Failed(f'{got} of {frames} frames reached the guest')
        while sent < frames and sent - got < IN_FLIGHT:
            tx.send(frame)
            sent += 1
        time.sleep(0.001)
    qmp.cmd('quit')


def wait_guest_up(qmp, tx, frame):
    """Frames before the guest opens the device are dropped, not
    received: one at a time until one is."""
    deadline = time.monotonic() + START_TIMEOUT_S
    base = guest_rx(qmp)
    while guest_rx(qmp) == base:
        if time.monotonic() > deadline:
            raise Failed('the guest received nothing')
        tx.send(frame)
        time.sleep(0.05)


if __name__ == '__main__':
    if len(sys.argv) != 7 or sys.argv[1] != 'drive':
        sys.exit(__doc__)
    try:
        drive(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
              sys.argv[6])
    except (Failed, OSError) as e:
        sys.exit(f'instr.py: {e}')
