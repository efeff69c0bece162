#!/usr/bin/env bash
# The benchmark job of CI, as .ci/run and .github/workflows/bench.yml both run it:
#   1. the virtual-time scenarios (request-budget, faults): their gates decide the exit code,
#      and are also written as JUnit XML (OUT_DIR/junit.xml);
#   2. cargo bench (criterion, and the scale bench's small points): timings for the log
#      (OUT_DIR/criterion.txt, OUT_DIR/scale.txt), never a failure by themselves;
#   3. with --save-baseline NAME / --baseline NAME: criterion's baseline of the harness
#      micro-benchmarks and relay-bench's baseline of the scenarios are saved / compared
#      (a relay-bench regression exits 1; criterion, leniently, only reports its changes);
#   4. with $GITHUB_STEP_SUMMARY set, each scenario's summary.md goes to the job summary.
# Usage: scripts/ci-bench.sh [--quick | --smoke] [--save-baseline NAME | --baseline NAME] [OUT_DIR]
#   --quick   criterion's quick mode (seconds, not minutes)
#   --smoke   each criterion benchmark run once as a test, in the tests' build (no bench
#             build, no timings; the scale bench not run): what .ci/run uses, where the bench
#             profile's build of the dev-dependencies would cost more than the benches
#   OUT_DIR   default target/ci-bench
set -euo pipefail
cd "$(dirname "$0")/.."
criterion=(--noplot)
relay=()
smoke=
out=target/ci-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) criterion+=(--quick) ;;
    --smoke) smoke=1 ;;
    --save-baseline|--baseline)
      [ $# -ge 2 ] || { echo "$1 needs a NAME" >&2; exit 2; }
      # criterion's --baseline panics at the first benchmark the baseline lacks (a new one,
      # or a cache miss); its lenient form compares what it has and measures the rest.
      if [ "$1" = --baseline ]; then criterion+=(--baseline-lenient "$2"); else criterion+=("$1" "$2"); fi
      relay+=("$1" "$2"); shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
# The scenarios run first: OUT_DIR is then a run directory, which `run --out` takes again
# next time with the timing logs beside it (a new directory holding other files it refuses).
mkdir -p "$out"
echo "== virtual-time scenarios: their gates decide"
set +e
cargo run --release --locked -- run request-budget faults --quiet --out "$out" --junit "$out/junit.xml" "${relay[@]}"
code=$?
set -e
if [ -n "$smoke" ]; then
  echo "== the criterion benchmarks, each run once as a test (no timings)"
  cargo test --locked --bench relay 2>&1 | tee "$out/criterion.txt" || { echo "the benchmarks failed as tests" >&2; exit 1; }
  exit $code
fi
echo "== cargo bench (timings only)"
cargo bench --locked --bench relay -- "${criterion[@]}" 2>&1 | tee "$out/criterion.txt" \
  || echo "warning: cargo bench failed; timings missing"
echo "== how far the virtual clock carries a fleet (the small points; timings only)"
cargo bench --locked --bench scale -- --quick 2>&1 | tee "$out/scale.txt" || echo "warning: the scale bench failed"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  for md in "$out"/*/summary.md; do
    [ -f "$md" ] && { cat "$md"; echo; } >> "$GITHUB_STEP_SUMMARY"
  done
fi
exit $code
