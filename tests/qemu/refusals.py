#!/usr/bin/env python3
"""make check-qemu, part two: streams from QEMU that illan must refuse,
each with one line naming the section or option, and one it must carry
back byte for byte.

QEMU runs with -S, so nothing boots: its pseries machine still writes
every section (CPU, interrupt controllers, NVRAM, TCE tables...).
  - carried: the stream loads into illan, which writes it back; every
    section but RAM is equal (tests/qemu/stream-sections.py);
  - suppress-vmdesc=on: no description to cut the carried sections by;
  - the same stream cut short, in its RAM and in its device sections;
  - a -m that differs from the stream's RAM;
  - a LAN whose MAC is not the one in the guest's device tree.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'bench'))
from bench import Failed, Proc, Qmp  # noqa: E402

TIMEOUT_S = 30
LAN = 'spapr-vlan,mac=02:00:00:00:99:02,use-rx-buffer-pools=on'


def wait_completed(qmp, what):
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        info = qmp.cmd('query-migrate')
        if info.get('status') == 'completed':
            return info
        if info.get('status') == 'failed':
            raise RuntimeError(f'{what}: {info.get("error-desc")}')
        time.sleep(0.05)
    raise RuntimeError(f'{what}: not completed in {TIMEOUT_S} s')


def qemu_stream(tmp, name, machine_opts):
    """A stream of QEMU's pseries-7.2 with 512 MiB, not booted; its
    console and NVRAM put the LAN at 0x71000002, as in takeover.py."""
    sock = os.path.join(tmp, name + '.qmp')
    path = os.path.join(tmp, name + '.mig')
    qemu = Proc('qemu-' + name, [
        'qemu-system-ppc64', '-M', 'pseries-7.2' + machine_opts, '-m', '512M',
        '-nographic', '-vga', 'none', '-nodefaults', '-serial', 'null', '-S',
        '-device', LAN, '-qmp', f'unix:{sock},server=on,wait=off'])
    try:
        qmp = Qmp(sock, qemu)
        qmp.cmd('migrate', uri=f'exec:cat > {path}')
        wait_completed(qmp, 'QEMU ' + name)
        qmp.close()
    finally:
        qemu.stop()
    return path


def illan_refusal(build, stream, extra=(), lan=LAN):
    """illan -incoming file:STREAM must exit 1 with one line."""
    r = subprocess.run([os.path.join(build, 'illan'), *extra,
                        '-incoming', f'file:{stream}', '-device',
                        lan + ',reg=0x71000002'],
                       capture_output=True, text=True, timeout=TIMEOUT_S)
    lines = r.stderr.splitlines()
    if r.returncode != 1 or len(lines) != 1:
        raise RuntimeError(f'illan took {stream} (status {r.returncode}): '
                           f'{r.stderr!r}')
    return lines[0]


def carried(build, tmp, stream):
    """Loaded by illan and written back: every carried section equal."""
    sock = os.path.join(tmp, 'illan.qmp')
    back = os.path.join(tmp, 'back.mig')
    illan = Proc('illan', [os.path.join(build, 'illan'),
                           '-incoming', f'file:{stream}', '-device',
                           LAN + ',reg=0x71000002',
                           '-qmp', f'unix:{sock},server=on,wait=off'])
    try:
        qmp = Qmp(sock, illan)
        info = wait_completed(qmp, 'illan')
        qmp.cmd('stop')
        qmp.cmd('migrate', uri=f'exec:cat > {back}')
        wait_completed(qmp, 'illan back')
        # A reset reboots the guest: what illan carried for it goes.
        qmp.cmd('system_reset')
        if 'x-carried-sections' in qmp.cmd('query-migrate'):
            raise RuntimeError('system_reset left the carried sections')
        qmp.close()
    finally:
        illan.stop()
    return carried_table(stream, back, info)


def carried_table(stream, back, info):
    table = subprocess.run([sys.executable,
                            os.path.join(HERE, 'stream-sections.py'),
                            stream, back], capture_output=True, text=True)
    print(table.stdout, end='')
    if table.returncode:
        raise RuntimeError('a carried section came back different')
    return (f'held {info["x-held-bytes"]} bytes, carried '
            f'{info["x-carried-sections"]} sections of '
            f'{info["x-carried-bytes"]} bytes')


def cut(stream, tmp, name, at):
    path = os.path.join(tmp, name + '.mig')
    with open(stream, 'rb') as src, open(path, 'wb') as dst:
        dst.write(src.read(at))
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix='illan-refusals-') as tmp:
        good = qemu_stream(tmp, 'good', '')
        nodesc = qemu_stream(tmp, 'nodesc', ',suppress-vmdesc=on')
        size = os.path.getsize(good)
        checks = [
            ('carried', lambda: carried(args.build, tmp, good), None),
            ('suppress-vmdesc', lambda: illan_refusal(args.build, nodesc),
             "section 'timer' instance 0: illan does not model it and the "
             "stream has no VM description"),
            ('truncated in RAM', lambda: illan_refusal(
                args.build, cut(good, tmp, 'ram-cut', 4096)),
             "section 'ram'"),
            ('truncated when held', lambda: illan_refusal(
                args.build, cut(good, tmp, 'held-cut', size - 4000)),
             'truncated'),
            ('-m 256M', lambda: illan_refusal(args.build, good,
                                              ('-m', '256M')),
             'start the destination with -m 512M'),
            ('another MAC', lambda: illan_refusal(
                args.build, good, lan=LAN.replace('02:00:00:00:99:02',
                                                  '52:54:00:12:34:56')),
             "the guest's l-lan@71000002 has MAC 02:00:00:00:99:02 (its "
             "device tree), this machine's 52:54:00:12:34:56"),
        ]
        for name, check, want in checks:
            try:
                line = check()
                ok = want is None or want in line
                failed += not ok
                print(f'{name}: {"ok" if ok else "FAIL"}: {line}'
                      + ('' if ok else f' (wanted {want!r})'), flush=True)
            except (RuntimeError, Failed) as e:
                failed += 1
                print(f'{name}: FAIL: {e}', flush=True)
    print(f'{len(checks) - failed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
