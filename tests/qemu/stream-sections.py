#!/usr/bin/env python3
"""List the records of a QEMU migration stream (QEVM version 3): type,
section id, name, instance, version and body size, with a digest of the
body; with two streams, compare them section by section (a section's
records joined), and exit 1 if any but RAM differs.

FULL sections are cut by the VM description at the stream's end, RAM and
spapr/htab by their own formats, as illan's loader does."""
import argparse
import hashlib
import json
import struct
import sys

EOF_, START, PART, END, FULL = 0, 1, 2, 3, 4
VMDESC, CONFIG, COMMAND, FOOTER, SUBSECTION = 6, 7, 8, 0x7E, 5
RAM_FLAGS = dict(zero=0x02, mem_size=0x04, page=0x08, eos=0x10, cont=0x20)
PAGE = 4096


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise ValueError("stream ends early at byte %d" % len(self.d))
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def u8(self):
        return self.take(1)[0]

    def be16(self):
        return struct.unpack(">H", self.take(2))[0]

    def be32(self):
        return struct.unpack(">I", self.take(4))[0]

    def be64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def counted(self):
        return self.take(self.u8()).decode()


def find_vmdesc(data):
    for p in range(len(data) - 6, -1, -1):
        if (data[p] == VMDESC and data[p + 5:p + 6] == b"{" and
                struct.unpack(">I", data[p + 1:p + 5])[0] == len(data) - p - 5):
            return p, json.loads(data[p + 5:])
    raise ValueError("no VM description at the end of the stream")


def vmsd_len(o):
    n = sum(f["size"] * f.get("array_len", 1) for f in o.get("fields", []))
    for s in o.get("subsections", []):
        n += 1 + 1 + len(s["vmsd_name"]) + 4 + vmsd_len(s)
    return n


def ram_body(r):
    while True:
        word = r.be64()
        flags, addr = word & (PAGE - 1), word & ~(PAGE - 1)
        if flags == RAM_FLAGS["eos"]:
            return
        if flags & RAM_FLAGS["mem_size"]:
            total = addr
            while total > 0:
                r.counted()
                total -= r.be64()
            continue
        if not flags & RAM_FLAGS["cont"]:
            r.counted()
        r.take(1 if flags & RAM_FLAGS["zero"] else PAGE)


def htab_body(r):
    if r.be32() != 0:
        return
    while True:
        index, valid, invalid = r.be32(), r.be16(), r.be16()
        if index == 0 and valid == 0 and invalid == 0:
            return
        r.take(valid * 16)


def sections(data):
    """Yields (kind, id, name, instance, version, body bytes)."""
    r = Reader(data)
    if r.be32() != 0x5145564D or r.be32() != 3:
        raise ValueError("not a QEVM version 3 stream")
    _, desc = find_vmdesc(data)
    devices = iter(desc["devices"])
    names = {}
    if r.u8() != CONFIG:
        raise ValueError("no configuration section")
    r.take(r.be32())
    if r.d[r.p] == SUBSECTION:
        raise ValueError("configuration subsections are not listed here")
    while True:
        kind = r.u8()
        if kind == EOF_:
            return
        if kind == COMMAND:
            r.be16()
            r.take(r.be16())
            continue
        sid = r.be32()
        if kind in (START, FULL):
            name, inst, ver = r.counted(), r.be32(), r.be32()
            names[sid] = (name, inst, ver)
        else:
            name, inst, ver = names[sid]
        start = r.p
        if kind == FULL:
            dev = next(devices)
            assert (dev["name"], dev["instance_id"]) == (name, inst), dev["name"]
            r.take(vmsd_len(dev))
        elif name == "ram":
            ram_body(r)
        elif name == "spapr/htab":
            htab_body(r)
        else:
            raise ValueError("cannot cut iterative section %s" % name)
        body = data[start:r.p]
        if r.u8() != FOOTER or r.be32() != sid:
            raise ValueError("section %s: no footer where its body ends" % name)
        yield ("START PART END FULL".split()[kind - 1], sid, name, inst, ver,
               body)


def grouped(recs):
    """Records by section in first-seen order: a section's records (RAM's
    parts, the hash table's chunks) become one body, its ids kept."""
    out = {}
    for kind, sid, name, inst, ver, body in recs:
        g = out.setdefault((name, inst), dict(ids=set(), kinds=[], ver=ver,
                                              body=b""))
        g["ids"].add(sid)
        g["kinds"].append(kind)
        g["body"] += body
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("stream")
    ap.add_argument("other", nargs="?", help="compare with this stream")
    args = ap.parse_args()
    a = list(sections(open(args.stream, "rb").read()))
    if not args.other:
        for kind, sid, name, inst, ver, body in a:
            print("%-5s %5d %-34s %10d v%-2d %10d %s" % (
                kind, sid, name, inst, ver, len(body),
                hashlib.sha256(body).hexdigest()[:16]))
        return 0
    b = grouped(sections(open(args.other, "rb").read()))
    print("%-34s %10s %6s %10s %10s  %s" % ("section", "instance", "id",
          "bytes in", "bytes out", "same"))
    differ = 0
    for (name, inst), g in grouped(a).items():
        t = b.pop((name, inst), None)
        if name == "ram":
            verdict = "rewritten"
        else:
            same = t is not None and t["ids"] == g["ids"] and \
                t["ver"] == g["ver"] and t["kinds"] == g["kinds"] and \
                t["body"] == g["body"]
            verdict = "equal" if same else "DIFFERS"
            differ += not same
        print("%-34s %10d %6s %10d %10s  %s" % (
            name, inst, ",".join(map(str, sorted(g["ids"]))), len(g["body"]),
            len(t["body"]) if t else "-", verdict))
    for (name, inst), t in b.items():
        print("%-34s %10d %6s %10s %10d  %s" % (
            name, inst, ",".join(map(str, sorted(t["ids"]))), "-",
            len(t["body"]), "ADDED"))
        differ += 1
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
