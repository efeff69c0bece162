#!/usr/bin/env bash
# The benchmark job for CI: criterion benchmarks (numbers for the log, never a failure by
# themselves), then the virtual-time scenarios, whose gates decide the exit code.
# Usage: scripts/ci-bench.sh [OUT_DIR]   (default target/ci-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/ci-bench}"
mkdir -p "$out"
echo "== cargo bench (timings only)"
cargo bench --locked --bench relay -- --noplot 2>&1 | tee "$out/criterion.txt" || echo "warning: cargo bench failed; timings missing"
echo "== virtual-time scenarios: their gates decide"
cargo run --release --locked -- run request-budget faults --quiet --out "$out"
