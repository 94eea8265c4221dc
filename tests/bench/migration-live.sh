#!/bin/sh
# The live-migration figures: downtime and total time of 256 MiB and
# 1 GiB guests with af-xdp traffic flowing, at downtime-limit 300 ms (the
# default) and 50 ms, with the frames lost in the switchover's window
# against the generator's count there; and QMP query-status latency every
# 10 ms during a migration against none.  They are the slow mode of
# tests/qtest/migration-live-test (-m slow), which needs root.
#
#   tests/bench/migration-live.sh [BUILD]      (default: build)
set -eu

build=${1:-build}
test=$build/tests/qtest/migration-live-test
[ -x "$test" ] || { echo "$test: not built (ninja -C $build)" >&2; exit 1; }
export ILLAN_BINARY="$build/illan"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() {
    if ! "$test" -m slow -p "$1" >"$log" 2>&1; then
        cat "$log" >&2
        exit 1
    fi
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs"
run /migration-live/bench/downtime
echo
echo "Migration over tcp: with traffic into a fwd=macswap guest"
echo
sed -n 's/^# TABLE //p' "$log" | sed '1a\|---|---|---|---|---|---|---|---|'
echo
grep -E '^# tcp [0-9]+[MG]: ' "$log" | sed 's/^# /    /'
echo
run /migration-live/bench/qmp-latency
echo
sed -n 's/^# LATENCY //p' "$log"
