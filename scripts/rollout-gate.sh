#!/usr/bin/env bash
# Runs the rollout-gate scenario on the real clock (about 32 minutes; `relay-bench run
# rollout-gate` alone decides on the virtual clock in seconds) and files the report
# under reports/runs/<date>-<host>/, with a SETUP.md saying what ran where.
# Usage: scripts/rollout-gate.sh [extra `relay-bench run` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(hostname -s 2>/dev/null || hostname)
out="reports/runs/$(date -u +%Y%m%d)-${host}"
mkdir -p "$out"
cargo build --release --locked
set +e
./target/release/relay-bench run rollout-gate --clock real --out "$out" "$@"
code=$?
set -e
./target/release/relay-bench report "$out" >/dev/null || true
{
  echo "# Setup of this run"
  echo
  echo "- command: \`scripts/rollout-gate.sh $*\` (\`relay-bench run rollout-gate --clock real --out $out\`)"
  echo "- date (UTC): $(date -u +%Y-%m-%dT%H:%M:%SZ), exit code $code"
  echo "- machine: $(uname -srm), $(nproc) cpus, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "- relay dirs on: $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2}') (${TMPDIR:-/tmp})"
  echo "- build: $(./target/release/relay-bench --version), release profile, $(rustc --version)"
  echo "- profile: proxy (20-50 ms round trips, latency injected in user space; see summary.md)"
  echo "- files: summary.md / summary.json (results), charts/*.png|svg, hdr/<case>/<measure>.hgrm|hlog, events.ndjson"
} > "$out/SETUP.md"
echo "filed under $out (exit $code)"
exit $code
