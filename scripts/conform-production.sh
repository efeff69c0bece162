#!/usr/bin/env bash
# Grades production's relay runner and writer (Agenta-AI/agenta at 753af38,
# services/runner/src/tools/relay*.ts) with `relay-bench conform`: bundled from a local git
# checkout of agenta by scripts/conform/build-production.sh, then graded;
# the reports go to OUT/runner and OUT/writer (default reports/<stamp>-conform-production).
# Then the runner over a sandbox-agent daemon (sandboxRelayHost: the rollout's path; the daemon
# installed by scripts/install-sandbox-agent.sh) goes to OUT/runner-sandbox-agent (poll only,
# production's default) and OUT/runner-sandbox-agent-watch (its remote window switched on).
# Usage: [RELAY_BENCH_BIN=PATH] scripts/conform-production.sh AGENTA_GIT_DIR [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: scripts/conform-production.sh AGENTA_GIT_DIR [OUT]}
out=${2:-reports/$(date -u +%Y%m%dT%H%M%SZ)-conform-production}
scripts/conform/build-production.sh "$src"
build=target/conform-production
# RELAY_BENCH_BIN: a relay-bench binary already built (default: a release build of this tree).
bin=${RELAY_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/relay-bench
fi
mkdir -p "$out"
grade() { # NAME ARGS...: one battery into $out/NAME
  local name=$1
  shift
  rm -rf "${out:?}/$name"
  set +e
  "$bin" conform "$@"
  echo "conform-production: $name exit $?; report in $out/$name"
  set -e
  rm -f "$out/$name/.relay-bench-run"
}
for side in runner writer; do
  grade "$side" "--$side" --out "$out/$side" -- node "$PWD/$build/$side.cjs"
done
scripts/install-sandbox-agent.sh >/dev/null
grade runner-sandbox-agent --runner --host sandbox-agent --out "$out/runner-sandbox-agent" \
  -- node "$PWD/$build/runner.cjs"
AGENTA_AGENT_TOOLS_RELAY_REMOTE_WATCH_ENABLED=true \
  grade runner-sandbox-agent-watch --runner --host sandbox-agent --out "$out/runner-sandbox-agent-watch" \
  -- node "$PWD/$build/runner.cjs"
