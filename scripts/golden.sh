#!/usr/bin/env bash
# Golden runs of the virtual clock: a fixed set of virtual scenarios (fleets, a sweep, the
# fault matrix, the rollout gate, the request budget, the scale bench's small points), each
# run with a fixed seed by the relay-bench binary given, their summary.json files kept with
# `started_at`, `environment` and each case's `wall_secs` (this machine's facts) taken out. A change that must not
# move a result (a faster simulation) is checked by running this before and after it:
#   scripts/golden.sh run BIN DIR         runs the set with BIN, writes DIR/<name>.json
#   scripts/golden.sh diff DIR_A DIR_B    exits 1 naming every run whose summary differs
# The `follow` cases (rollout-gate's, faults' daemon-restart-follow) are left out: their
# injected legs are read after the recorder thread ends, while the paused clock runs on.
# e.g. scripts/golden.sh run target/release/relay-bench target/golden-new &&
#      scripts/golden.sh diff target/golden-main target/golden-new
set -euo pipefail
cd "$(dirname "$0")/.."

# name | arguments of `run` (all virtual; durations cut to keep the set to a few minutes)
RUNS=(
  "fleet-window-exec|fleet-capacity --case window-exec --duration 15m --sandboxes 300"
  "fleet-poll-only|fleet-capacity --case poll-only --duration 10m --sandboxes 200"
  "fleet-limit-75|fleet-capacity --case limit-75 --duration 15m --sandboxes 300"
  "fleet-queued|fleet-capacity --case limit-100-queued --duration 15m --sandboxes 400"
  "fleet-faults|fleet-capacity --case proxy-blip --case daemons-restart --case limit-drop --duration 20m --sandboxes 200"
  "window-sweep|window-sweep --case window-exec --sweep runner.window=5s,60s --duration 15m --sandboxes 200"
  "faults|faults --case daemon-restart --case proxy-disconnect --case sandbox-pause --case dir-replaced --case dir-replaced-local-watch --case watch-program-missing --case watch-enospc --case watch-emfile --case queue-overflow --case queue-overflow-local-watch --case exec-hang --case repeated-timeouts --case exec-fail --case stop-during-window --case chunked-publish --case burst --case org-limit --case daemon-restart-fleet "
  "rollout-gate|rollout-gate --case poll-only --case poll-50ms --case window-exec --case window-exec-quiet-idle --case window-exec-requests-only --case window-exec-both --case window-exec-inline-both"
  "request-budget|request-budget"
  "scale-100x1h-turns|target/golden-scenarios/scale-100x1h-turns.toml"
  "scale-100x1h-held|target/golden-scenarios/scale-100x1h-held.toml"
  "fleet-repeat|fleet-capacity --case window-exec --case limit-75 --case proxy-blip --duration 10m --sandboxes 100 --repeat 3"
  "rollout-repeat|rollout-gate --case poll-only --case window-exec --case window-exec-quiet-idle --repeat 4"
)

scale_scenario() { # name sandboxes workload-keys
  printf 'name = "%s"\n[workload]\nsandboxes = %s\nduration = "1h"\nseed = 3\n%s[[case]]\nname = "window-exec"\nhost = "remote"\nprofile = "proxy"\nclock = "virtual"\nrunner = "window-exec"\nwriter = "watch"\n' \
    "$1" "$2" "$3"
}

case "${1:-}" in
  run)
    [ $# -eq 3 ] || { echo "usage: $0 run BIN DIR" >&2; exit 2; }
    bin=$2 out=$3
    mkdir -p "$out" target/golden-scenarios
    scale_scenario scale-100x1h-turns 100 $'[workload.agent]\n' >target/golden-scenarios/scale-100x1h-turns.toml
    scale_scenario scale-100x1h-held 100 $'turns_per_sec = 1\n' >target/golden-scenarios/scale-100x1h-held.toml
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    for r in "${RUNS[@]}"; do
      name=${r%%|*} args=${r#*|}
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$bin" run $args --seed 7 --quiet --no-calibration --out "$work/$name" >/dev/null || true
      [ -f "$work/$name/summary.json" ] || { echo "$name: no summary.json" >&2; exit 3; }
      jq -S 'del(.started_at, .environment, .results[]?.wall_secs)' "$work/$name/summary.json" >"$out/$name.json"
      printf '%-22s %6.1f s\n' "$name" "$(echo "$(date +%s.%N) - $t0" | bc)"
    done
    ;;
  diff)
    [ $# -eq 3 ] || { echo "usage: $0 diff DIR_A DIR_B" >&2; exit 2; }
    bad=0
    for r in "${RUNS[@]}"; do
      name=${r%%|*}
      if cmp -s "$2/$name.json" "$3/$name.json"; then echo "same      $name"; else echo "DIFFERENT $name"; bad=1; fi
    done
    exit $bad
    ;;
  *) echo "usage: $0 run BIN DIR | diff DIR_A DIR_B" >&2; exit 2 ;;
esac
