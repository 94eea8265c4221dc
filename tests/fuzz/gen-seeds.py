#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora under tests/fuzz/corpus/.

Run from anywhere; the seeds are committed, so this runs only when a
target's input format or the QMP schema changes.  fuzz-qmp gets one
request per command of monitor/qmp-schema.c (arguments filled from their
types), the others a few inputs that reach their main paths.
fuzz-migration's seeds are the fixtures in tests/migration, the live
stream committed next to them in its corpus, and a stream shaped as
QEMU's pseries writes one, with sections illan carries (carried()).
"""
import os
import re
import struct
import json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, 'tests', 'fuzz', 'corpus')

# A value of each schema type a request may carry.
VALUES = {
    'str': 'n0', 'int': 1, 'bool': True, 'any': 1,
    'QMPCapability': 'oob',
    'MigrationCapabilityStatus': {'capability': 'events', 'state': True},
}
# Values that make a command do its work rather than refuse.
ARGS = {
    'qom-list': {'path': '/machine'},
    'qom-get': {'path': '/machine', 'property': 'type'},
    'qom-set': {'path': '/machine/peripheral-anon/device[0]',
                'property': 'mac', 'value': '52:54:00:00:00:01'},
    'qom-list-get': {'paths': ['/machine']},
    'qom-list-properties': {'typename': 'spapr-vlan'},
    'device-list-properties': {'typename': 'spapr-vlan'},
    'object-add': {'qom-type': 'memory-backend-ram', 'id': 'm0',
                   'size': 1048576},
    'object-del': {'id': 'm0'},
    'blockdev-add': {'driver': 'null-co', 'node-name': 'b0'},
    'blockdev-del': {'node-name': 'b0'},
    'human-monitor-command': {'command-line': 'info network'},
    'announce-self': {'initial': 0, 'max': 0, 'rounds': 1, 'step': 0},
    'x-guest-set-mac': {'id': 'g0', 'mac': '52:54:00:00:00:02'},
    'set_link': {'name': 'n0', 'up': False},
    'netdev_del': {'id': 'n0'},
}


def schema_commands():
    text = open(os.path.join(ROOT, 'monitor', 'qmp-schema.c')).read()
    table = text[text.index('static const SchemaCommand commands[]'):]
    table = table[:table.index('};')]
    # { "name", "members" "more", ret }: adjacent literals join.
    for m in re.finditer(r'\{\s*"([^"]+)",\s*((?:"[^"]*"\s*)+|NULL)', table):
        members = ''.join(re.findall(r'"([^"]*)"', m.group(2)))
        yield m.group(1), members.split()


def request(name, members):
    if name in ARGS:
        args = ARGS[name]
    else:
        args = {}
        for member in members:
            key, typ = member.split(':', 1)
            if key.startswith('*'):
                continue
            array = typ.startswith('[')
            value = VALUES.get(typ.strip('[]'), 'x')
            args[key] = [value] if array else value
    req = {'execute': name}
    if args:
        req['arguments'] = args
    return json.dumps(req)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def qmp():
    hello = '{"execute": "qmp_capabilities"}\n'
    for name, members in schema_commands():
        write('fuzz-qmp', name, hello + request(name, members) + '\n')
    write('fuzz-qmp', 'oob-and-ids',
          '{"execute": "qmp_capabilities", "arguments": '
          '{"enable": ["oob"]}}\n'
          '{"exec-oob": "query-status", "id": 1}\n'
          "{'execute': 'query-name', 'id': {'a': [1, 2.5e3, null]}}\n"
          '{"execute": "stop"}{"execute": "cont"}\n')


def qtest():
    write('fuzz-qtest', 'memory',
          'writel 0x100 0x11223344\nreadl 0x100\nread 0x100 4\n'
          'write 0x200 4 0xaabbccdd\nb64read 0x200 4\nb64write 0x300 3 ////\n'
          'memset 0x0 0x1000 0xff\nreadq 0xfff8\nendianness\n')
    # The largest transfer the target allows, and one byte over it.
    write('fuzz-qtest', 'largest-transfer',
          'read 0x0 0x10000\nb64read 0x0 0x10000\nread 0x0 0x10001\n')
    write('fuzz-qtest', 'clock-irq',
          'clock_step\nclock_step 1000\nclock_set 5000\n'
          'irq_intercept_in xics\n'
          'irq_intercept_out /machine/peripheral-anon/device[0]\n'
          'set_irq_in xics 0 0 1\n')
    write('fuzz-qtest', 'hcalls',
          'hcall 0x20 0x71000000 0x0 0x3\nhcall 0x1c 0x71000000 0x0\n'
          'hcall 0x104 0x71000000 1\n'
          'hcall 0x114 0x71000000 0x1000 0x8000100000002000 0x3000 '
          '0x525400123456\nhcall 0x11c 0x71000000 0x8000020000004000\n'
          'hcall 0x244 0x71000000 0 0\nhcall 0x118 0x71000000\n')


def options():
    write('fuzz-options', 'af-xdp',
          '-M pseries\n-m 32M\n'
          '-netdev af-xdp,id=n0,ifname=veth0,queues=2,mode=skb,'
          'rx-ring-size=1024,batch=16,multi-buffer=auto\n'
          '-device spapr-vlan,netdev=n0,mac=52:54:00:12:34:56,'
          'use-rx-buffer-pools=off\n'
          '-global spapr-vlan.use-rx-buffer-pools=on\n')
    write('fuzz-options', 'sock-fds',
          '-M pseries-2.0\n-netdev af-xdp,id=n0,ifname=lo,inhibit=on,'
          'sock-fds=3:4,queues=2\n-netdev dgram,id=n1\n'
          '-device spapr-vlan,netdev=n1,reg=0x71000001\n')
    write('fuzz-options', 'help',
          '-M help\n-device spapr-vlan,help\n-netdev af-xdp,help\n')
    write('fuzz-options', 'globals',
          '-machine pseries-1.0\n-m size=64M\n'
          '-global driver=spapr-vlan,property=mac,value=52:54:00:00:00:09\n'
          '-device spapr-vlan\n-device spapr-vlan,reg=0x71000010\n')


# fuzz-llan: the first byte picks the mode, then operations (see
# fuzz-llan.c's run_op(): the opcode byte modulo 16, then its arguments,
# values as a byte below the edge table's size or a literal).
def llan():
    def lit8(v):
        return bytes([0xff]) + struct.pack('>Q', v)       # 0xff % 4 == 3

    def lit4(v):
        return bytes([0xfe]) + struct.pack('>I', v)       # 0xfe % 4 == 2

    bd = lambda length, addr: (bytes([0x80]) + lit4(length) + lit4(addr))
    register = (bytes([0]) + lit4(0x100000) + bd(0x1000, 0x102000) +
                lit4(0x101000) + lit8(0x525400123456))
    add = b''.join(bytes([2]) + bd(size, addr) + b'\x01'
                   for size, addr in [(2048, 0x200000), (2048, 0x201000),
                                      (512, 0x202000), (16384, 0x204000)])
    signal = bytes([9]) + lit4(1) + b'\x01'
    # 3 frames: 60, 1514 (IPv4 TCP) and 9018 bytes, to our MAC.
    frames = (bytes([15, 2]) + bytes([8, 11, 18]) +
              b''.join(b'\x00\x04abcd' + bytes([k]) for k in (1, 9, 1)))
    # One descriptor, no continuation token, MSS 0, the backend sends.
    send = bytes([4, 1]) + bd(60, 0x300000) + b'\xff\x00\xff'
    for mode in range(4):
        write('fuzz-llan', 'session-mode%d' % mode,
              bytes([mode]) + register + add + signal + frames + send +
              bytes([13, 0]) + frames + bytes([13, 3]))


def record(kind, sid, body, name=None, instance=0, version=1):
    head = struct.pack('>BI', kind, sid)
    if name is not None:
        head += bytes([len(name)]) + name.encode() + \
            struct.pack('>II', instance, version)
    return head + body + struct.pack('>BI', 0x7e, sid)


def carried():
    """QEMU's shape: RAM and the hash table iterative, two device sections
    illan does not model (one with nested subsections), EOF, and the VM
    description that cuts them."""
    ram = 16 << 20
    block = b'\x0dppc_spapr.ram' + struct.pack('>Q', ram)
    eos = struct.pack('>Q', 0x10)
    chunk = struct.pack('>IIHH', 0, 7, 1, 1) + bytes(range(16)) + bytes(8)
    ics = bytes(range(16)) + b'\x05\x07ics/sub' + struct.pack('>I', 1) + \
        b'\x42\x05\x0aics/sub/in' + struct.pack('>I', 1) + b'\x7e\x7e'
    desc = {'page_size': 4096, 'devices': [
        {'name': 'timer', 'instance_id': 0, 'vmsd_name': 'timer',
         'version': 2, 'fields': [{'name': 'a', 'type': 'int64', 'size': 8},
                                  {'name': 'u', 'type': 'unused_buffer',
                                   'size': 8}]},
        {'name': 'ics', 'instance_id': 0, 'vmsd_name': 'ics', 'version': 1,
         'fields': [{'name': 'irqs', 'array_len': 2, 'type': 'struct',
                     'size': 8}],
         'subsections': [{'vmsd_name': 'ics/sub', 'version': 1,
                          'fields': [{'name': 'x', 'type': 'uint8',
                                      'size': 1}],
                          'subsections': [{'vmsd_name': 'ics/sub/in',
                                           'version': 1,
                                           'fields': [{'name': 'y',
                                                       'type': 'uint16',
                                                       'size': 2}]}]}]}]}
    js = json.dumps(desc).encode()
    data = (b'QEVM' + struct.pack('>I', 3) + b'\x07' +
            struct.pack('>I', 11) + b'pseries-7.2' +
            record(1, 2, struct.pack('>Q', ram | 4) + block + eos, 'ram', 0, 4) +
            record(1, 564, struct.pack('>I', 0xffffffff), 'spapr/htab') +
            record(3, 2, eos) + record(3, 564, chunk) +
            record(4, 3, bytes(range(1, 17)), 'timer', 0, 2) +
            record(4, 4, ics, 'ics') +
            b'\x00\x06' + struct.pack('>I', len(js)) + js)
    write('fuzz-migration', 'carried-pseries.mig', data)


if __name__ == '__main__':
    qmp()
    qtest()
    options()
    llan()
    carried()
