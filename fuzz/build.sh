#!/bin/sh
# Builds the libFuzzer targets (not part of the CMake build): fuzz/<name>_fuzz.cpp becomes
# build-fuzz/<name>_fuzz. Needs clang++ with libclang_rt.fuzzer (Debian: clang, libclang-rt-dev).
#
#   fuzz/build.sh [name...]                 # default: every fuzz/*_fuzz.cpp
#   build-fuzz/cron_fuzz -dict=fuzz/cron.dict -max_total_time=300 "$(mktemp -d)" fuzz/corpus/cron
#   (the first directory collects new inputs; fuzz/corpus/<name> stays a small seed corpus)
set -eu
cd "$(dirname "$0")/.."
CXX="${CXX:-clang++}"
# The definitions are those of hourglass_core in CMakeLists.txt and of Debian's spdlog and fmt
# CMake targets.
FLAGS="-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -Iinclude -Isrc
       -DHOURGLASS_VERSION=\"fuzz\" -DUSE_OS_TZDB=1
       -DSPDLOG_SHARED_LIB -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DFMT_SHARED"
mkdir -p build-fuzz

# Sources each target needs besides its own file: the pure-logic targets take only their own
# files, anything else the whole core library (src/ without the CLI entry point).
sources_for() {
    case "$1" in
        cron) echo src/common/text.cpp src/cron/parse.cpp src/cron/next_occurrence.cpp src/cron/zone.cpp ;;
        rfc3339) echo src/common/time.cpp ;;
        command) echo src/common/text.cpp src/ingest/command_parser.cpp src/common/time.cpp src/common/message.cpp \
                      src/common/uuid.cpp src/store/properties_json.cpp src/store/job_rows.cpp ;;
        sql_row) echo src/common/text.cpp src/ingest/sql_rows.cpp src/ingest/command_parser.cpp \
                      src/common/time.cpp src/common/message.cpp src/common/uuid.cpp \
                      src/store/properties_json.cpp src/store/job_rows.cpp ;;
        properties) echo src/common/text.cpp src/store/properties_json.cpp src/amqp/field_table.cpp \
                         src/common/message.cpp ;;
        *) find src -name '*.cpp' ! -path src/cli/main.cpp | sort ;;
    esac
}
libraries_for() {
    case "$1" in
        cron|rfc3339) echo -ldate-tz ;;
        command|sql_row) echo -ldate-tz -lcrypto -luuid ;;
        properties) echo -lrabbitmq -lcrypto ;;
        *) echo -ldate-tz -lrabbitmq -lpqxx -lpq -luuid -lspdlog -lfmt -pthread ;;
    esac
}

if [ "$#" -eq 0 ]; then
    set -- $(for f in fuzz/*_fuzz.cpp; do basename "$f" _fuzz.cpp; done)
fi
# One object per source file, shared by the targets (the flags are the same), compiled through
# ccache when it is installed, with paths hashed relative to the checkout as in the CMake build:
# a fresh clone, such as each CI run, then reuses an earlier checkout's objects.
LAUNCHER=""
if command -v ccache >/dev/null 2>&1; then
    LAUNCHER="env CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true ccache"
fi
mkdir -p build-fuzz/obj
for name in "$@"; do
    echo "building build-fuzz/${name}_fuzz"
    objects=""
    for source in "fuzz/${name}_fuzz.cpp" $(sources_for "$name"); do
        object="build-fuzz/obj/$(echo "$source" | tr / _).o"
        # shellcheck disable=SC2086,SC2090
        $LAUNCHER "$CXX" $FLAGS -c "$source" -o "$object"
        objects="$objects $object"
    done
    # shellcheck disable=SC2046,SC2086,SC2090
    "$CXX" $FLAGS $objects $(libraries_for "$name") -o "build-fuzz/${name}_fuzz"
done
