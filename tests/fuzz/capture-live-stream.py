#!/usr/bin/env python3
"""Captures fuzz-migration's live seed: tests/fuzz/corpus/fuzz-migration/
live-pseries.mig.

A source illan (16 MiB, spapr-vlan on a dgram socket, pools on) is driven
as a guest over qtest: the first 4 MiB mapped, the device registered with
24 buffers in two pools, interrupts on, five frames received; QMP migrate
then writes the stream to a file, and a second illan loads it with
-incoming and must run.  Usage: capture-live-stream.py ILLAN OUTPUT
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

UNIT = 0x71000000
BD_VALID = 1 << 63


def bd(length, addr):
    return BD_VALID | length << 32 | addr


class Qmp:
    def __init__(self, path):
        for _ in range(200):
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                time.sleep(0.05)
        self.f = self.sock.makefile('rw')
        self.f.readline()
        self.cmd('qmp_capabilities')

    def cmd(self, name, **args):
        self.f.write(json.dumps({'execute': name, 'arguments': args}) + '\n')
        self.f.flush()
        while True:
            reply = json.loads(self.f.readline())
            if 'event' not in reply:
                return reply['return']

    def wait_migration(self):
        for _ in range(200):
            status = self.cmd('query-migrate').get('status')
            if status in ('completed', 'failed'):
                return status
            time.sleep(0.05)
        return 'timed out'


def main(illan, output):
    d = tempfile.mkdtemp(prefix='illan-capture-')
    qtest, qmp, dev, peer = (os.path.join(d, n) for n in
                             ('qtest.sock', 'qmp.sock', 'dev.sock',
                              'peer.sock'))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(qtest)
    listener.listen(1)
    wire = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    wire.bind(peer)

    def start(*extra):
        return subprocess.Popen(
            [illan, '-M', 'pseries', '-m', '16M', '-netdev',
             'dgram,id=n0,local.type=unix,local.path=%s,remote.type=unix,'
             'remote.path=%s' % (dev, peer),
             '-device', 'spapr-vlan,netdev=n0,mac=52:54:00:12:34:56',
             '-qmp', 'unix:%s,server=on,wait=off' % qmp, *extra],
            stderr=subprocess.DEVNULL)

    src = start('-qtest', 'unix:' + qtest)
    conn, _ = listener.accept()
    f = conn.makefile('rw')

    def hcall(*args):
        f.write('hcall ' + ' '.join('%#x' % a for a in args) + '\n')
        f.flush()
        while True:
            line = f.readline().strip()
            if not line.startswith('IRQ'):
                assert line.startswith('OK 0'), line
                return

    for addr in range(0, 4 << 20, 4096):
        hcall(0x20, UNIT, addr, addr | 3)                   # H_PUT_TCE
    hcall(0x114, UNIT, 0x100000, bd(0x1000, 0x102000), 0x101000,
          0x525400123456)                                   # register
    for i in range(16):
        hcall(0x11c, UNIT, bd(2048, 0x200000 + i * 2048))
    for i in range(8):
        hcall(0x11c, UNIT, bd(512, 0x210000 + i * 512))
    hcall(0x104, UNIT, 1)                                   # interrupts on
    frame = bytes.fromhex('5254001234565254000000010800') + bytes(range(46))
    m = Qmp(qmp)
    for _ in range(5):
        wire.sendto(frame, dev)
    for _ in range(200):
        nic = m.cmd('x-query-net-stats')['nics'][0]
        if nic['device']['rx-frames'] == 5:
            break
        time.sleep(0.05)
    m.cmd('migrate', uri='file:' + output)
    assert m.wait_migration() == 'completed'
    src.kill()
    src.wait()
    os.unlink(qmp)

    dst = start('-incoming', 'file:' + output)
    m = Qmp(qmp)
    assert m.wait_migration() == 'completed'
    assert m.cmd('query-status')['status'] == 'running'
    dst.kill()
    dst.wait()
    print('%s: %d bytes, loaded by a second illan' %
          (output, os.path.getsize(output)))


main(sys.argv[1], sys.argv[2])
