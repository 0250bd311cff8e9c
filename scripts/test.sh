#!/usr/bin/env bash
# Runs every test of the workspace. As root it also runs the network-namespace accuracy tests,
# installing iproute2 (ip, tc), nftables and ethtool first when they are missing, iperf3 as an
# interop partner, GNU time for peak memory, Chromium for the HTML report test,
# DejaVu fonts for PNG text, promtool (Debian's prometheus package), PostgreSQL (a server each store test starts of its own) and
# kubectl (kustomize renders the manifests). Tests whose figures are timings (`quiet::`) run last,
# on their own and one at a time, so nothing else loads the cores meanwhile. Tests that cannot
# run here count as skipped, listed with their reasons above the closing `tests: N passed, N
# failed, N skipped`.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v ethtool >/dev/null 2>&1 || missing+=(ethtool)
command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
# GNU time reads a command's peak memory (tests/hostile_store.rs).
[ -x /usr/bin/time ] || missing+=(time)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
# promtool checks the metrics endpoint's two formats (tests/metrics.rs).
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# PNG charts draw their text with a system font (resvg finds DejaVu Sans through fontconfig).
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    echo "note: ${missing[*]} missing and this is not root: the namespace and peer tests will be skipped"
  fi
fi
# The metrics test reads the endpoint with the Prometheus project's own OpenMetrics parser; the
# Kubernetes test validates the manifests with the schemas kubernetes-validate ships.
python3 -c 'import prometheus_client' >/dev/null 2>&1 || python3 -m pip install -q prometheus_client \
  || echo "note: prometheus_client not installed: the metrics test will be skipped"
command -v kubernetes-validate >/dev/null 2>&1 || python3 -m pip install -q kubernetes-validate \
  || echo "note: kubernetes-validate not installed: the Kubernetes test will be skipped"
log=$(mktemp)
# Tests that cannot run here (not root, a tool missing) append `test-name: reason` to this file
# (tests/skip.rs): libtest counts them as passed, the closing line as skipped.
LINERATE_SKIP_LOG=$(mktemp)
export LINERATE_SKIP_LOG
trap 'rm -f "$log" "$LINERATE_SKIP_LOG"' EXIT
set +e
# Every test binary runs even after one fails, so one red test never hides another. Four tests
# at a time on two cores: most of a test's time is spent waiting (on a peer, a shaper, a
# timer), each test has its own ports, namespaces and addresses, and every figure these tests
# check holds under load (the timing-sensitive ones are `quiet::`, below).
started=$SECONDS
cargo test --workspace --release --no-fail-fast "$@" -- --skip quiet:: --test-threads=4 >"$log" 2>&1 &
tests=$!
tail -n +1 -f --pid="$tests" "$log" &
shown=$!
# Cargo runs the first test binary once every one is built, and has let go of the build
# directory's lock by then: LINERATE_TEST_BESIDE (.ci/run sets it to its lints) starts there.
while kill -0 "$tests" 2>/dev/null && ! grep -q '^     Running ' "$log"; do sleep 1; done
built=$SECONDS
beside_status=0
if [ -n "${LINERATE_TEST_BESIDE:-}" ]; then
  beside_log=$(mktemp)
  bash -c "$LINERATE_TEST_BESIDE" >"$beside_log" 2>&1 &
  beside=$!
fi
wait "$tests"
status=$?
wait "$shown"
ran=$SECONDS
if [ -n "${LINERATE_TEST_BESIDE:-}" ]; then
  wait "$beside"
  beside_status=$?
  cat "$beside_log"
  rm -f "$beside_log"
fi
quiet_from=$SECONDS
if [ "$status" = 0 ]; then
  # The timing tests run with the CPUs held out of their idle halt (PM QoS: a wake-up latency
  # of 0 in /dev/cpu_dma_latency while fd 9 is open, as cyclictest and a host tuned for
  # benchmarks hold it): on a VM a halted CPU wakes through the hypervisor, and every timer
  # the tests and the kernel's TCP pacing keep came late. Here, on an idle host: 5 ms sleeps
  # overshot by 0.6-0.7 ms at p90 and 7-10 ms at p99, TCP paced at 400 Mbit/s delivered 0.64-0.92
  # of it and `--bidir -b 200M,400M` 182 and 322; held, 0.05-0.07 ms at p90, 0.90-1.00 of the rate
  # and 200 and 398 (METHODOLOGY.md section 13.12).
  [ -w /dev/cpu_dma_latency ] && exec 9>/dev/cpu_dma_latency && printf '\0\0\0\0' >&9
  # The same cargo invocation as above (so nothing is rebuilt), filtered to the quiet tests.
  cargo test --workspace --release "$@" -- --test-threads=1 quiet:: 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
  exec 9>&-
fi
# Where the time went, on stderr: the build, the tests four at a time, the wait for what ran
# beside them, the timing tests alone.
echo "test.sh: build $((built - started)) s, parallel $((ran - built)) s," \
  "beside $((quiet_from - ran)) s more, quiet $((SECONDS - quiet_from)) s" >&2
set -e
[ "$status" = 0 ] && status=$beside_status
# The skipped tests and their reasons, then one closing line over every test binary (cargo
# ends with per-binary lines, the last of which is often an empty doc-test run).
bash scripts/test-counts.sh "$log" "$LINERATE_SKIP_LOG"
exit "$status"
