#!/usr/bin/env bash
# Grades production's relay runner and writer (Agenta-AI/agenta at 753af38,
# services/runner/src/tools/relay*.ts) with `relay-bench conform`. The runner's sources are
# read from a local git checkout of agenta at the pinned commit (nothing is fetched but
# esbuild, from npm, into tools/esbuild/), bundled with our harnesses
# (scripts/conform/production-{runner,writer}.ts) into target/conform-production/, and graded;
# the reports go to OUT/runner and OUT/writer (default reports/<stamp>-conform-production).
# Then the runner over a sandbox-agent daemon (sandboxRelayHost: the rollout's path; the daemon
# installed by scripts/install-sandbox-agent.sh) goes to OUT/runner-sandbox-agent (poll only,
# production's default) and OUT/runner-sandbox-agent-watch (its remote window switched on).
# Usage: [RELAY_BENCH_BIN=PATH] scripts/conform-production.sh AGENTA_GIT_DIR [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
commit=753af3838ef61cfc3f06c05951b3599fefbc75ef
esbuild_version=0.24.2
src=${1:?usage: scripts/conform-production.sh AGENTA_GIT_DIR [OUT]}
out=${2:-reports/$(date -u +%Y%m%dT%H%M%SZ)-conform-production}
command -v node >/dev/null || { echo "conform-production: node is needed" >&2; exit 2; }
git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null \
  || { echo "conform-production: $src has no commit $commit" >&2; exit 2; }
esbuild=tools/esbuild/node_modules/.bin/esbuild
if ! [ -x "$esbuild" ] || [ "$("$esbuild" --version)" != "$esbuild_version" ]; then
  mkdir -p tools/esbuild
  npm install --prefix tools/esbuild --no-audit --no-fund --no-save "esbuild@$esbuild_version" >/dev/null
fi
build=target/conform-production
rm -rf "$build" && mkdir -p "$build/agenta"
git -C "$src" archive "$commit" services/runner/src | tar -x -C "$build/agenta"
for side in runner writer; do
  cp "scripts/conform/production-$side.ts" "$build/"
  # The runner's own modules only (node builtins stay external); a bare npm import would fail here.
  "$esbuild" "$build/production-$side.ts" --bundle --platform=node --format=cjs --target=node20 \
    --log-level=warning --outfile="$build/$side.cjs"
done
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
