#!/bin/sh
# Builds every fuzz target (fuzz/build.sh) and runs each for a bounded time from its seed corpus
# (fuzz/corpus/<name>), new inputs going to a temporary directory. CI runs it with a short time
# per target; a crash, a leak or an abort fails the run and leaves the input in build-fuzz/.
#
#   fuzz/run.sh [SECONDS-PER-TARGET]     (default 30)
set -eu
cd "$(dirname "$0")/.."
seconds="${1:-30}"
fuzz/build.sh
for target in build-fuzz/*_fuzz; do
    name=$(basename "$target" _fuzz)
    work=$(mktemp -d)
    dict=""
    [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
    echo "fuzz: $name for ${seconds}s"
    # shellcheck disable=SC2086
    "$target" $dict -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=build-fuzz/ "$work" "fuzz/corpus/$name" 2>&1 | grep -E '^(stat::number_of_executed_units|==|SUMMARY|INFO: Running)' || true
    # libFuzzer exits non-zero on a finding; the pipe above hides it, so check for artifacts.
    rm -rf "$work"
done
if ls build-fuzz/crash-* build-fuzz/leak-* build-fuzz/oom-* build-fuzz/timeout-* >/dev/null 2>&1; then
    echo "fuzz: findings in build-fuzz/:" >&2
    ls build-fuzz/crash-* build-fuzz/leak-* build-fuzz/oom-* build-fuzz/timeout-* 2>/dev/null >&2
    exit 1
fi
echo "fuzz: no findings"
