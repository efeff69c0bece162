#!/usr/bin/env bash
# A local pickup against this machine's floor, production's runner and relay-bench's side by
# side, measured by one instrument in one run: `relay-bench conform --runner --case
# wake-latency` (10 sequential calls: request renamed into the dir -> the runner first opens
# it, seen by the battery's own inotify watch), run ROUNDS times (default 5) alternately on
# production's runner over localRelayHost (node's fs.watch; bundled from an agenta checkout by
# scripts/conform/build-production.sh) and on relay-bench's reference runner (`relay-bench
# serve`), each battery measuring the floor first (a rename reaching its own watch). Writes
# each battery's report to OUT/<runner>-<round>/ and the comparison to OUT/pickup-floor.md.
# Usage: [RELAY_BENCH_BIN=PATH] [ROUNDS=N] scripts/pickup-floor.sh AGENTA_GIT_DIR [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: scripts/pickup-floor.sh AGENTA_GIT_DIR [OUT]}
out=${2:-reports/$(date -u +%Y%m%dT%H%M%SZ)-pickup-floor}
rounds=${ROUNDS:-5}
scripts/conform/build-production.sh "$src"
bin=${RELAY_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/relay-bench
fi
mkdir -p "$out"
for k in $(seq 1 "$rounds"); do
  for runner in production relay-bench; do
    case $runner in
      production) cmd=(node "$PWD/target/conform-production/runner.cjs") ;;
      relay-bench) cmd=("$bin" serve --dir {dir} --sweep --handler-command {handler}) ;;
    esac
    rm -rf "${out:?}/$runner-$k"
    "$bin" conform --runner --case wake-latency --out "$out/$runner-$k" -- "${cmd[@]}" >/dev/null \
      || { echo "pickup-floor: $runner round $k: conform exit $?" >&2; exit 1; }
    rm -f "$out/$runner-$k/.relay-bench-run"
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for runner in ("production", "relay-bench"):
    for k in range(1, rounds + 1):
        r = json.load(open(f"{out}/{runner}-{k}/conform.json"))
        case = next(c for c in r["cases"] if c["name"] == "wake-latency")
        m = re.search(r"pickup p50 ([0-9.]+) ms", case["reason"])
        if not m:
            sys.exit(f"pickup-floor: {runner} round {k}: {case['reason']}")
        rows.setdefault(runner, []).append((float(m.group(1)) * 1000, r["calibration"]["rename_seen_us"]))
floor = statistics.median(f for v in rows.values() for _, f in v)
lines = [
    "# A local pickup against this machine's floor",
    "",
    f"`relay-bench conform --runner --case wake-latency`, {rounds} rounds each, alternately (10 sequential",
    "calls a round: a request renamed into the dir -> the runner first opens it, as the battery's own",
    "inotify watch sees both). The floor is each battery's own measure of a rename reaching its watch",
    "(median of 15). Every figure in µs.",
    "",
    "| runner | pickup p50 each round | median | floor each round | × the floor |",
    "|---|---|---:|---|---:|",
]
for runner, v in rows.items():
    p = statistics.median(x for x, _ in v)
    lines.append(
        f"| {runner} | {', '.join(f'{x:.0f}' for x, _ in v)} | {p:.0f} | {', '.join(str(f) for _, f in v)} | {p / floor:.1f} |"
    )
prod = statistics.median(x for x, _ in rows["production"])
ours = statistics.median(x for x, _ in rows["relay-bench"])
lines += ["", f"Floor (median of every battery's): {floor:.0f} µs. relay-bench's runner / production's: {ours / prod:.2f}."]
open(f"{out}/pickup-floor.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
