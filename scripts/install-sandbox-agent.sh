#!/usr/bin/env bash
# Installs the sandbox-agent daemon production's runner talks to (pinned: 0.4.2) into
# tools/sandbox-agent/, where relay-bench finds it (host = "sandbox-agent"). Needs npm and
# the npm registry. Idempotent: an install of the pinned version is kept.
# Usage: scripts/install-sandbox-agent.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.4.2
dir=tools/sandbox-agent
bin=$dir/node_modules/@sandbox-agent/cli-linux-x64/bin/sandbox-agent
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q " $version\$"; then
  echo "sandbox-agent $version already installed: $bin"
  exit 0
fi
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "sandbox-agent: this script installs the Linux x86_64 binary; here: $(uname -sm)" >&2
  exit 2
fi
command -v npm >/dev/null || { echo "sandbox-agent: npm is needed (apt-get install npm)" >&2; exit 2; }
mkdir -p "$dir"
# The binary package alone (the CLI wrapper only picks a platform package); npm 11 skips the
# package's postinstall chmod (we skip install scripts), hence the chmod below.
npm install --prefix "$dir" --no-audit --no-fund --no-save --ignore-scripts "@sandbox-agent/cli-linux-x64@$version" >/dev/null
chmod +x "$bin"
echo "installed $("$bin" --version): $bin"
