#!/usr/bin/env bash
# Runs every test of the workspace. As root it also runs the network-namespace accuracy tests,
# installing iproute2 (ip, tc) first when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2
  else
    echo "note: ip/tc are missing and this is not root: the namespace tests will be skipped"
  fi
fi
cargo test --workspace --release "$@"
