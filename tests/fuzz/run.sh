#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target for SECONDS on a scratch copy of
# its seed corpus (tests/fuzz/corpus/TARGET, and the migration fixtures
# for fuzz-migration), so that runs never write into the tree, and prints
# one line per target.  Fails if any target found something; the input
# that did is kept in BUILD/fuzz-findings/.
#   tests/fuzz/run.sh BUILD SECONDS TARGET...
set -u
build=$1 seconds=$2
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
findings=$build/fuzz-findings
mkdir -p "$findings"
status=0

for t in "$@"; do
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/$t.XXXXXX")
    log=$build/$t.log
    cp "$src/tests/fuzz/corpus/$t"/* "$scratch"/ 2>/dev/null
    if [ "$t" = fuzz-migration ]; then
        cp "$src"/tests/migration/*.mig "$scratch"/
    fi
    seeds=$(ls "$scratch" | wc -l)
    # Inputs up to 4 KiB from the start (libFuzzer would grow the limit
    # from the longest seed only slowly): room for a few hundred hcalls
    # or QMP requests.  Migration streams keep their own length.
    sizes=(-len_control=0 -max_len=4096)
    if [ "$t" = fuzz-migration ]; then
        sizes=()
    fi
    # -timeout: an input running 10 s is a hang, a finding.  setarch -R:
    # sanitizer runtimes and high mmap_rnd_bits do not always agree
    # (the Makefile's check-asan says more).
    setarch "$(uname -m)" -R "$build/tests/fuzz/$t" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 "${sizes[@]}" \
        -artifact_prefix="$findings/$t-" "$scratch" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$done_line")
    if [ $rc -eq 0 ]; then
        verdict="no finding"
    else
        verdict="FINDING (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY|does not balance|Test unit written' "$log"); log $log"
        status=1
    fi
    echo "$t: ${seconds} s, ${execs:-0} executions, corpus ${corp:-?} (from $seeds seeds), cov ${cov:-?} edges, $verdict"
    rm -rf "$scratch"
done
exit $status
