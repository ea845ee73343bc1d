#!/bin/sh
# Builds every fuzz target (fuzz/build.sh) and runs each for a bounded time from its seed corpus
# (fuzz/corpus/<name>), new inputs going to a temporary directory. CI runs it with a short time
# per target; a crash, a leak, an abort or a timeout fails the run (exit 1), with the target's
# report printed and the input left in build-fuzz/.
#
#   fuzz/run.sh [SECONDS-PER-TARGET]     (default 30)
set -eu
cd "$(dirname "$0")/.."
seconds="${1:-30}"
fuzz/build.sh
# Inputs left by an earlier run would be taken for this run's findings.
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/oom-* build-fuzz/timeout-*
failed=""
for target in build-fuzz/*_fuzz; do
    name=$(basename "$target" _fuzz)
    work=$(mktemp -d)
    log="$work.log"
    dict=""
    [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
    echo "fuzz: $name for ${seconds}s"
    # libFuzzer exits non-zero on a finding (and on any error of its own).
    status=0
    # shellcheck disable=SC2086
    "$target" $dict -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=build-fuzz/ "$work" "fuzz/corpus/$name" >"$log" 2>&1 || status=$?
    if [ "$status" -eq 0 ]; then
        grep -E '^(stat::number_of_executed_units|INFO: Running)' "$log" || true
    else
        echo "fuzz: $name FAILED (exit $status); its report:" >&2
        tail -n 60 "$log" >&2
        failed="$failed $name"
    fi
    rm -rf "$work" "$log"
done
findings=$(find build-fuzz -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
                                         -o -name 'timeout-*' \) -print)
if [ -n "$failed" ] || [ -n "$findings" ]; then
    echo "fuzz: failed:${failed:- (see the inputs below)}" >&2
    [ -z "$findings" ] || echo "fuzz: inputs in build-fuzz/: $findings" >&2
    exit 1
fi
echo "fuzz: no findings"
