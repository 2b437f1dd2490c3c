#!/usr/bin/env bash
# Runs every libFuzzer target of build-clang (tests/fuzz/) from its checked-in corpus and prints
# executions per second for each.
#   bench/fuzz_all.sh                   10 million executions per target (the bench)
#   bench/fuzz_all.sh --seconds 30      at most 30 s per target (what .ci/run does), seed 1 so a CI
#                                       verdict repeats on the same tree (exploring is for long runs)
#   bench/fuzz_all.sh --seed N ...      libFuzzer's -seed (default: random, 1 with --seconds)
#   bench/fuzz_all.sh --runs N [TARGET...]
# BUILD_DIR (default build-clang) must be configured with -DACCELMATRIX_FUZZ=ON and built.
# New inputs go to a scratch corpus, never into tests/fuzz/corpus; a crash leaves its input in
# $BUILD_DIR/fuzz/artifacts/ and makes the script exit 1 (add it to the corpus as crash-<what>
# once fixed, with a unit test). Set the sanitizer options as .ci/run does.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-clang}
runs=10000000
seconds=0
seed=
targets=()
# The value of option $1 (given as $2): a positive integer, or a usage error (exit 2).
positive() {
  if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz_all: $1 needs a positive integer${2:+ (got '$2')}" >&2
    exit 2
  fi
  echo "$2"
}
while (($#)); do
  case "$1" in
    --runs) runs=$(positive "$@"); shift 2 ;;
    --seconds) seconds=$(positive "$@"); runs=-1; seed=${seed:-1}; shift 2 ;;
    --seed) seed=$(positive "$@"); shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  targets=(protocol_decode msgpack_json plan safetensors capability_record)
fi

export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

mkdir -p "$build/fuzz/artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=0
printf '%-20s %12s %10s %12s %s\n' target executions seconds 'execs/s' result
for t in "${targets[@]}"; do
  bin=$build/fuzz/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "fuzz_all: $bin is missing (configure $build with -DACCELMATRIX_FUZZ=ON and build it)" >&2
    exit 2
  fi
  mkdir -p "$scratch/$t"
  log=$build/fuzz/$t.log
  args=(-print_final_stats=1 -timeout=10 "-artifact_prefix=$build/fuzz/artifacts/$t-")
  if ((seconds > 0)); then args+=("-max_total_time=$seconds"); else args+=("-runs=$runs"); fi
  if [ -n "$seed" ]; then args+=("-seed=$seed"); fi
  start=$(date +%s.%N)
  if "$bin" "${args[@]}" "$scratch/$t" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log)"
    failed=1
  fi
  end=$(date +%s.%N)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  persec=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  printf '%-20s %12s %10.1f %12s %s\n' "$t" "${execs:-?}" "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" "${persec:-?}" "$result"
  if [ "$result" != ok ]; then grep -E 'ERROR|SUMMARY|property violated|runtime error' "$log" | head -5 >&2 || true; fi
done
exit $failed
