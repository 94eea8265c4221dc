#!/usr/bin/python3
"""make bench's SVG charts, drawn from charts-fixture.json: a cut of a
real run (2026-11-26 14:52) with points of the 2026-11-25
10:06 run's tables added, so that every chart has bars, and its rxonly
64 B illan point once more as "umem": "guest", a second variant; its
rxonly 1500 B point has "umem": "copy", as bench.py writes it, and a
"guest" twin with the zero-copy figures of 2026-11-27.

Usage: test-charts.py SOURCE_DIR (the directory of charts.py)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(
    os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, 'charts-fixture.json')
sys.path.insert(0, HERE)


def run(script, *args, env=None):
    return subprocess.run([sys.executable, os.path.join(HERE, script),
                           *args], capture_output=True, text=True, env=env)


def read(path):
    with open(path) as f:
        return f.read()


def missing(svg, texts):
    """The texts not in svg (an SVG is too long for a failure's text)."""
    return [t for t in texts if t not in svg]


class Charts(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix='illan-charts-')
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def draw(self, report):
        path = os.path.join(self.dir, 'bench.json')
        with open(path, 'w') as f:
            json.dump(report, f)
        done = run('charts.py', path)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_every_chart_with_titles_series_and_caption(self):
        done = run('charts.py', FIXTURE, '--dir', self.dir)
        self.assertEqual(done.returncode, 0, done.stderr)
        names = sorted(os.listdir(self.dir))
        self.assertEqual(names, ['charts-fixture-cost-1500.svg',
                                 'charts-fixture-cost-64.svg',
                                 'charts-fixture-cost-mix.svg',
                                 'charts-fixture-latency.svg'])
        self.assertEqual(done.stdout.split(), [
            w for n in ('cost-64', 'cost-1500', 'cost-mix', 'latency')
            for w in ('chart:', os.path.join(self.dir,
                                             f'charts-fixture-{n}.svg'))])
        report = json.loads(read(FIXTURE))
        for name in names:
            svg = read(os.path.join(self.dir, name))
            self.assertEqual(missing(svg, (report['date'], report['kernel'],
                                           report['machine'])), [], name)
            # Text is text, not glyph paths: small files.
            self.assertFalse('<path id="DejaVu' in svg, name)
            self.assertLess(len(svg), 120000, name)
        svg = read(os.path.join(self.dir, 'charts-fixture-cost-64.svg'))
        self.assertEqual(missing(svg, (
                     'CPU a frame by thread, 64 B frames', 'rxonly',
                     'macswap', 'txonly', 'CPU time a frame, ns',
                     'raw: xsk-rxdrop', 'raw: generator',
                     'raw copy: xsk-rxdrop --fwd copy',
                     'raw sum: xsk-rxdrop --fwd sum',
                     'testpmd: lcore (rte-worker-1)', 'testpmd: generator',
                     'illan, copy: I/O thread (xsk-*)',
                     'illan, copy: vCPU (vcpu-*)',
                     'illan, copy: main and other threads',
                     'illan, copy: generator',
                     'illan, zero copy: I/O thread (xsk-*)',
                     'illan, zero copy: vCPU (vcpu-*)',
                     # bar values: raw 64 B rxonly, its raw sum, illan's
                     # txonly vCPU
                     '>66<', '>83<', '>975<')), [])
        svg = read(os.path.join(self.dir, 'charts-fixture-cost-1500.svg'))
        self.assertEqual(missing(svg, (
                     'CPU a frame by thread, 1500 B frames',
                     'illan, copy: I/O thread (xsk-*)',
                     'illan, zero copy: I/O thread (xsk-*)',
                     'illan, zero copy: vCPU (vcpu-*)',
                     # bar values: the zero-copy twin's I/O and vCPU
                     '>395<', '>228<')), [])
        svg = read(os.path.join(self.dir, 'charts-fixture-cost-mix.svg'))
        self.assertEqual(missing(svg, (
            'CPU a frame by thread, mixed sizes', 'raw: xsk-rxdrop')), [])
        self.assertFalse('testpmd: lcore' in svg)
        svg = read(os.path.join(self.dir, 'charts-fixture-latency.svg'))
        self.assertEqual(missing(svg, (
                     'Latency: illan rxonly, 64 B frames at 20 kpps',
                     'XDP program to device queue', 'XDP program to guest',
                     'latency, us', 'p50', 'p99.9', 'max',
                     'spin (+vCPU), I/O thread on the same core',
                     'poll, I/O thread on the other core')), [])
        self.assertFalse('busy-poll' in svg)

    def test_one_illan_series_when_every_point_copies(self):
        report = json.loads(read(FIXTURE))
        report['illan'] = [p for p in report['illan']
                           if p.get('umem', 'copy') == 'copy']
        self.draw(report)
        svg = read(os.path.join(self.dir, 'bench-cost-64.svg'))
        self.assertEqual(missing(svg, ('illan, copy: I/O thread',)), [])
        self.assertFalse('zero copy' in svg)

    def test_no_chart_without_figures(self):
        report = json.loads(read(FIXTURE))
        for part in ('raw', 'testpmd', 'illan', 'latency'):
            report[part] = [p for p in report[part] if 'failed' in p]
        self.assertEqual(self.draw(report), '')
        self.assertEqual(os.listdir(self.dir), ['bench.json'])

    def test_latency_on_a_log_axis_when_its_span_needs_it(self):
        import charts
        plt = charts.pyplot()
        report = json.loads(read(FIXTURE))
        fig = charts.latency_figure(plt, report)
        self.assertEqual(fig.axes[0].get_yscale(), 'log')
        report['latency'] = report['latency'][3:4]
        report['latency'][0]['device'].update({'p99.9-ns': 49000,
                                               'max-ns': 172000})
        report['latency'][0]['guest'].update({'p99.9-ns': 57000,
                                              'max-ns': 178000})
        fig = charts.latency_figure(plt, report)
        self.assertEqual(fig.axes[0].get_yscale(), 'linear')

    def test_out_dir_made(self):
        out = os.path.join(self.dir, 'new', 'charts')
        done = run('charts.py', FIXTURE, '--dir', out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn('charts-fixture-cost-64.svg', os.listdir(out))

    def test_out_dir_not_writable_is_one_line(self):
        taken = os.path.join(self.dir, 'a-file')
        with open(taken, 'w'):
            pass
        done = run('charts.py', FIXTURE, '--dir', taken)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr.count('\n'), 1, done.stderr)
        self.assertRegex(done.stderr, r'^charts: no charts: .*a-file')

    def test_older_json_without_some_parts(self):
        report = json.loads(read(FIXTURE))
        for part in ('testpmd', 'latency'):
            del report[part]
        self.draw(report)
        self.assertEqual(sorted(os.listdir(self.dir)), [
            'bench-cost-1500.svg', 'bench-cost-64.svg', 'bench-cost-mix.svg',
            'bench.json'])

    def test_bench_charts_only(self):
        done = run('bench.py', '--charts-only', FIXTURE, '--charts-dir',
                   self.dir)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn('charts-fixture-cost-64.svg', os.listdir(self.dir))

    def test_bench_without_matplotlib_says_what_to_install(self):
        hide = os.path.join(self.dir, 'hide')
        os.makedirs(os.path.join(hide, 'matplotlib'))
        with open(os.path.join(hide, 'matplotlib', '__init__.py'), 'w') as f:
            f.write('raise ImportError("hidden by the test")\n')
        env = dict(os.environ, PYTHONPATH=hide)
        done = run('bench.py', '--charts-only', FIXTURE, '--charts-dir',
                   self.dir, env=env)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr.count('\n'), 1, done.stderr)
        self.assertRegex(done.stderr, r'^bench: no charts: .* cannot import '
                         r'matplotlib: `make bench-deps` installs')
        self.assertEqual(os.listdir(self.dir), ['hide'])


if __name__ == '__main__':
    unittest.main(verbosity=2)
