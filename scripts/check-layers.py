#!/usr/bin/env python3
"""Check the include graph against the layers of the source tree.

From the top: system, monitor, guest, hw, net and migration, util
(include/qemu) and trace (include/trace).  A file may include headers of
its own layer and of the layers below it, never of a layer above.

A module is a source file together with the header of the same name
(util/runstate.c and include/qemu/runstate.h; the headers directly in
include/hw belong to hw/core).  No two modules may include each other,
directly or around a longer cycle, except inside hw/ppc, where the machine,
its VIO bus and its TCE tables are one unit.

The built-in guest (guest/, include/guest/) checks the device, so it
includes none of the device's offload headers (hw/net/llan_offload.h,
llan_tso.h, llan_lro.h) and calls no llan_ function: it has checksum and
segmentation code of its own.

Prints every upward include, every cycle and every guest use of the
device's offload code, then a summary; exits 1 when there is any.  Usage: check-layers.py [SOURCE_ROOT]
"""
import os
import re
import sys

LAYERS = {'system': 6, 'monitor': 5, 'guest': 4, 'hw': 3,
          'net': 2, 'migration': 2, 'util': 1, 'trace': 1}
SOURCE_DIRS = ['system', 'monitor', 'guest', 'hw', 'net', 'migration',
               'util', 'trace', 'include']
# Cycles among these modules are allowed.
CYCLE_ALLOWED_UNDER = 'hw/ppc/'
INCLUDE_RE = re.compile(r'\s*#\s*include\s+"([^"]+)"')
DEVICE_OFFLOAD_HEADERS = {'include/hw/net/llan_offload.h',
                          'include/hw/net/llan_tso.h',
                          'include/hw/net/llan_lro.h'}
DEVICE_OFFLOAD_CALL_RE = re.compile(r'\bllan_\w+\s*\(')


def module_of(path):
    """'include/qemu/runstate.h' -> 'util/runstate'; 'hw/ppc/spapr.c' ->
    'hw/ppc/spapr'."""
    stem = os.path.splitext(path)[0]
    if stem.startswith('include/'):
        stem = stem[len('include/'):]
        if stem.startswith('qemu/'):
            stem = 'util/' + stem[len('qemu/'):]
        elif stem.startswith('hw/') and stem.count('/') == 1:
            stem = 'hw/core/' + stem[len('hw/'):]
    return stem


def layer_of(module):
    return LAYERS.get(module.split('/')[0])


def source_files(root):
    for top in SOURCE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(('.c', '.h')):
                    full = os.path.join(dirpath, name)
                    yield os.path.relpath(full, root)


def includes(root, path):
    """The project headers @path includes, as paths from @root."""
    with open(os.path.join(root, path), encoding='utf-8') as f:
        for line in f:
            m = INCLUDE_RE.match(line)
            if m and os.path.exists(os.path.join(root, 'include', m.group(1))):
                yield 'include/' + m.group(1)


def is_guest(path):
    return path.startswith(('guest/', 'include/guest/'))


def guest_offload_uses(root, path):
    """What in the guest file @path uses the device's offload code."""
    found = [h for h in includes(root, path) if h in DEVICE_OFFLOAD_HEADERS]
    with open(os.path.join(root, path), encoding='utf-8') as f:
        found += sorted(set(DEVICE_OFFLOAD_CALL_RE.findall(f.read())))
    return found


def strongly_connected(graph):
    """Tarjan's algorithm: the components of @graph with more than one
    node."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def a_cycle(graph, comp):
    """One cycle through the first module of @comp, for the message."""
    members, start = set(comp), comp[0]
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for w in sorted(graph[path[-1]] & members):
            if w == start:
                return path + [start]
            if w not in seen:
                seen.add(w)
                paths.append(path + [w])
    return comp


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    graph, problems, nfiles = {}, 0, 0

    for path in source_files(root):
        nfiles += 1
        mod = module_of(path)
        graph.setdefault(mod, set())
        for use in guest_offload_uses(root, path) if is_guest(path) else []:
            print(f'guest uses the device\'s offload code: {path}: {use}')
            problems += 1
        for header in includes(root, path):
            inc = module_of(header)
            if layer_of(inc) > layer_of(mod):
                print(f'upward include: {path} -> {header}')
                problems += 1
            if inc != mod:
                graph[mod].add(inc)
                graph.setdefault(inc, set())

    allowed = []
    for comp in strongly_connected(graph):
        if all(m.startswith(CYCLE_ALLOWED_UNDER) for m in comp):
            allowed.append(comp)
            continue
        print('include cycle: ' + ' -> '.join(a_cycle(graph, comp)))
        problems += 1

    print(f'{nfiles} files, {len(graph)} modules: {problems} problem(s)')
    for comp in allowed:
        print('allowed cycle inside hw/ppc: ' + ', '.join(comp))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
