#!/usr/bin/env bash
# Bundles production's relay runner and writer (Agenta-AI/agenta at 753af38,
# services/runner/src/tools/relay*.ts) with our harnesses (scripts/conform/production-*.ts)
# into target/conform-production/{runner,writer}.cjs, for node 20. The sources are read from a
# local git checkout of agenta at the pinned commit; nothing is fetched but esbuild, from npm,
# into tools/esbuild/. Used by scripts/conform-production.sh and scripts/pickup-floor.sh.
# Usage: scripts/conform/build-production.sh AGENTA_GIT_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=753af3838ef61cfc3f06c05951b3599fefbc75ef
esbuild_version=0.24.2
src=${1:?usage: scripts/conform/build-production.sh AGENTA_GIT_DIR}
command -v node >/dev/null || { echo "build-production: node is needed" >&2; exit 2; }
git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null \
  || { echo "build-production: $src has no commit $commit" >&2; exit 2; }
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
