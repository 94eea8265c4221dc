#!/usr/bin/python3
"""make bench's charts: SVGs drawn from its JSON and written beside it.

STEM-cost-SIZE.svg (STEM is the JSON's name without .json): for one frame
size, the CPU a frame costs each thread of the raw loops, testpmd and
illan, with the generator's in the same runs, for rxonly, macswap and
txonly.  STEM-latency.svg: the latency part's quantiles, XDP program to
device queue and to guest.  An illan point's "umem" (absent: "copy")
names its variant; each variant present is a series of its own.
See docs/devel/benchmarks.md, "Charts".
"""

import argparse
import itertools
import json
import os
import sys

SIZES = ('64', '1500', 'mix')
SIZE_NAMES = {'64': '64 B frames', '1500': '1500 B frames',
              'mix': 'mixed sizes (64, 594, 1518 B at 7:4:1)'}
FWDS = ('rxonly', 'macswap', 'txonly')
# The raw loop each fwd is held against, as in bench.py's tables.
RAW_LOOP = {'rxonly': 'drop', 'macswap': 'macswap', 'txonly': 'txonly'}
# The points the cost charts compare: the default mode of each.
RAW_AT = {'mode': 'native', 'wait': 'poll'}
ILLAN_AT = {'pools': 'on', 'mode': 'native', 'wait': 'poll'}
# Runs from before the zero-copy UMEM have no "umem" key: they copied.
UMEM_DEFAULT = 'copy'
UMEM_NAMES = {'copy': 'copy', 'guest': 'zero copy'}
# Colours of illan's I/O, vCPU and other threads, a set a variant (in
# turn, should there be more variants than sets).
ILLAN_COLOURS = (('#d62728', '#ff7f0e', '#8c564b'),
                 ('#9467bd', '#e377c2', '#7f7f7f'))
QUANTILES = (('p50-ns', 'p50'), ('p90-ns', 'p90'), ('p99-ns', 'p99'),
             ('p99.9-ns', 'p99.9'), ('max-ns', 'max'))
WAKE_NAMES = {'spin': 'spin (+vCPU)', 'spin-io': 'spin (I/O only)'}
# A linear axis flattens the small values once the largest is this many
# times the smallest.
LOG_FROM_SPAN = 20


class MatplotlibMissing(Exception):
    pass


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display), with text kept
    as text in the SVGs: no embedded glyphs, so the files stay small."""
    try:
        import matplotlib
    except ImportError:
        raise MatplotlibMissing(
            f'{sys.executable} cannot import matplotlib: `make bench-deps` '
            "installs Debian's python3-matplotlib") from None
    matplotlib.use('Agg')
    matplotlib.rcParams.update({'svg.fonttype': 'none',
                                'svg.hashsalt': 'illan-bench',
                                'font.size': 8})
    import matplotlib.pyplot as plt
    return plt


def ok(points):
    return [p for p in points if 'failed' not in p]


def find(points, **key):
    """The first point whose fields match key; a missing umem is copy."""
    for p in ok(points):
        if all(p.get(k, UMEM_DEFAULT if k == 'umem' else None) == v
               for k, v in key.items()):
            return p
    return None


def points_of(report, name):
    """A part's points; none from a JSON older than the part."""
    return report.get(name, [])


def ns(point, thread):
    if point is None:
        return None
    return (point['cost'].get(thread) or {}).get('ns')


def umems(report):
    found = {p.get('umem', UMEM_DEFAULT)
             for p in ok(points_of(report, 'illan'))}
    return sorted(found, key=lambda u: (u != UMEM_DEFAULT, u))


def cost_series(report):
    """(name, colour, hatch, value(size, fwd)) of every bar a cost chart
    may hold, in the order they stand in a group."""
    def raw(loop):
        return lambda size, fwd: find(points_of(report, 'raw'), size=size,
                                      **RAW_AT,
                                      fwd=loop or RAW_LOOP[fwd])

    def testpmd(size, fwd):
        return find(points_of(report, 'testpmd'), size=size, fwd=fwd)

    def illan(umem):
        return lambda size, fwd: find(points_of(report, 'illan'),
                                      size=size, fwd=fwd,
                                      umem=umem, **ILLAN_AT)

    def bar(point_of, thread):
        return lambda size, fwd: ns(point_of(size, fwd), thread)

    series = [
        ('raw: xsk-rxdrop', '#1f77b4', None, bar(raw(None), 'rx')),
        ('raw: generator', '#1f77b4', '///', bar(raw(None), 'gen')),
        ('raw copy: xsk-rxdrop --fwd copy', '#6baed6', None,
         lambda size, fwd: ns(raw('copy')(size, fwd), 'rx')
         if fwd == 'rxonly' else None),
        ('raw sum: xsk-rxdrop --fwd sum', '#9ecae1', None,
         lambda size, fwd: ns(raw('sum')(size, fwd), 'rx')
         if fwd == 'rxonly' else None),
        ('testpmd: lcore (rte-worker-1)', '#2ca02c', None,
         bar(testpmd, 'lcore')),
        ('testpmd: generator', '#2ca02c', '///', bar(testpmd, 'gen'))]
    for umem, (io, vcpu, rest) in zip(umems(report),
                                        itertools.cycle(ILLAN_COLOURS)):
        name = f'illan, {UMEM_NAMES.get(umem, umem)}'
        series += [
            (f'{name}: I/O thread (xsk-*)', io, None, bar(illan(umem), 'io')),
            (f'{name}: vCPU (vcpu-*)', vcpu, None, bar(illan(umem), 'vcpu')),
            (f'{name}: main and other threads', rest, None,
             bar(illan(umem), 'rest')),
            (f'{name}: generator', io, '///', bar(illan(umem), 'gen'))]
    return series


def caption(report):
    return (f"make bench run of {report['date']}: {report['runs']} run(s) "
            f"of {report['secs']} s a point, the median shown\n"
            f"{report['kernel']}\n{report['machine']}")


def cost_figure(plt, report, size):
    """Grouped bars, one group a fwd, one bar a thread's ns a frame;
    None if no point of this size has a figure."""
    series = cost_series(report)
    groups = [(fwd, [(name, colour, hatch, value(size, fwd))
                     for name, colour, hatch, value in series])
              for fwd in FWDS]
    groups = [(fwd, [b for b in bars if b[3] is not None])
              for fwd, bars in groups]
    if not any(bars for _, bars in groups):
        return None
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.8 / max(len(bars) for _, bars in groups)
    labelled = set()
    for x, (fwd, bars) in enumerate(groups):
        if not bars:
            ax.text(x, 0, 'not measured', ha='center', va='bottom')
        for i, (name, colour, hatch, value) in enumerate(bars):
            drawn = ax.bar(x + (i - (len(bars) - 1) / 2) * width, value,
                           width, color='white' if hatch else colour,
                           edgecolor=colour, hatch=hatch,
                           label=None if name in labelled else name)
            labelled.add(name)
            ax.bar_label(drawn, fmt='%.0f', fontsize=6)
    ax.set_xticks(range(len(FWDS)), FWDS)
    ax.set_xlim(-0.5, len(FWDS) - 0.5)
    ax.set_xlabel("forwarding mode (a thread's CPU over the frames "
                  'received in rxonly, sent in macswap and txonly; the '
                  "generator's over those it offered)")
    ax.set_ylabel('CPU time a frame, ns')
    ax.set_title(f'CPU a frame by thread, {SIZE_NAMES[size]}\n'
                 'raw and illan: native XDP, poll(2) waits, illan with '
                 'pools on; testpmd polls')
    # In the order of the bars in a group, not of their first appearance.
    order = [name for name, *_ in series]
    handles = sorted(zip(*ax.get_legend_handles_labels()),
                     key=lambda hl: order.index(hl[1]))
    ax.legend(*zip(*handles), loc='upper left', bbox_to_anchor=(1.01, 1),
              frameon=False)
    fig.text(0.01, -0.02, caption(report), va='top', fontsize=7)
    return fig


def latency_label(point):
    label = (f"{WAKE_NAMES.get(point['wake'], point['wake'])}, "
             f"I/O thread on the {point['core']} core")
    if 'umem' in point:
        label += f", {UMEM_NAMES.get(point['umem'], point['umem'])}"
    return label


def latency_figure(plt, report):
    """Each point's quantiles in us, XDP program to device queue and to
    guest side by side; None without a latency point that has samples."""
    points = [p for p in ok(points_of(report, 'latency'))
              if p['device']['samples'] and p['guest']['samples']]
    if not points:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True)
    values = []
    for ax, part, title in ((axes[0], 'device', 'XDP program to device '
                             'queue (x-query-net-stats)'),
                            (axes[1], 'guest', 'XDP program to guest '
                             '(x-query-guest-stats)')):
        for point in points:
            us = [point[part][q] / 1e3 if point[part].get(q) else
                  float('nan') for q, _ in QUANTILES]
            values += [v for v in us if v == v]
            ax.plot(range(len(QUANTILES)), us, marker='o',
                    label=latency_label(point))
        ax.set_xticks(range(len(QUANTILES)), [n for _, n in QUANTILES])
        ax.set_xlabel('quantile (the end of its quarter-octave bucket: '
                      'at most 25 % high)')
        ax.set_title(title)
        ax.grid(True, which='major', alpha=0.3)
    if max(values) >= LOG_FROM_SPAN * min(values):
        axes[0].set_yscale('log')
        # 1, 10, 100 us rather than powers of ten.
        axes[0].yaxis.set_major_formatter('{x:g}')
    axes[0].set_ylabel('latency, us')
    first = points[0]
    fig.suptitle(f"Latency: illan rxonly, {first['size']} B frames at "
                 f"{first['mpps'] * 1e3:.0f} kpps, native XDP")
    axes[1].legend(loc='upper left', bbox_to_anchor=(1.01, 1), frameon=False)
    fig.text(0.01, -0.02, caption(report), va='top', fontsize=7)
    return fig


def draw(report, out_dir, stem='bench'):
    """Writes every chart the report has figures for; their paths."""
    plt = pyplot()
    figures = [(f'cost-{size}', cost_figure(plt, report, size))
               for size in SIZES]
    figures.append(('latency', latency_figure(plt, report)))
    paths = []
    for name, fig in figures:
        if fig is None:
            continue
        path = os.path.join(out_dir, f'{stem}-{name}.svg')
        # No date in the file: the same JSON draws the same SVG.
        fig.savefig(path, bbox_inches='tight', metadata={'Date': None})
        plt.close(fig)
        paths.append(path)
    return paths


def write_charts(json_path, out_dir=None, prog='charts'):
    """The charts of json_path into out_dir (default: beside it, made if
    missing), their paths printed; 1 with one line on standard error if
    matplotlib is missing or a file cannot be read or written."""
    stem = os.path.splitext(os.path.basename(json_path))[0]
    out_dir = out_dir or os.path.dirname(json_path) or '.'
    try:
        with open(json_path) as f:
            report = json.load(f)
        os.makedirs(out_dir, exist_ok=True)
        paths = draw(report, out_dir, stem)
    except (MatplotlibMissing, OSError) as e:
        print(f'{prog}: no charts: {e}', file=sys.stderr)
        return 1
    for path in paths:
        print(f'chart: {path}')
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('json', help="make bench's JSON")
    p.add_argument('--dir', help='where the SVGs go (default: beside the '
                   'JSON)')
    args = p.parse_args()
    return write_charts(args.json, args.dir)


if __name__ == '__main__':
    sys.exit(main())
