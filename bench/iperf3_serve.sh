#!/usr/bin/env bash
# bench/iperf3_serve.sh — stock iperf3 clients against `linerate serve` and against `iperf3 -s`,
# alternating in one run on loopback: is linerate's server ever the bottleneck for an iperf3
# client? Per pair, iperf3's own receiver goodput (`end.sum_received`) against each server; the
# medians and the paired ratio linerate/iperf3 with a 95 % interval (t over the logs).
#
# Usage: bench/iperf3_serve.sh [iperf3 client arguments, e.g. -P 2 or -R]
# Env:   REPS (7), RUN_SECONDS (3), LINERATE (target/release/linerate)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
lr=${LINERATE:-$root/target/release/linerate}
reps=${REPS:-7} secs=${RUN_SECONDS:-3}
missing=()
command -v iperf3 >/dev/null || missing+=(iperf3)
command -v jq >/dev/null || missing+=(jq)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "iperf3_serve.sh: needs ${missing[*]} (apt-get install ${missing[*]}, as root)" >&2; exit 2
  fi
fi
[[ -x $lr ]] || (cd "$root" && cargo build --release --quiet)
tmp=$(mktemp -d)
lr_port=15391 i3_port=15392
# The server stores each iperf3 client's run, as it does by default, in a database of its own.
"$lr" serve --bind 127.0.0.1 -p "$lr_port" --db "$tmp/serve.sqlite" 2>"$tmp/serve.log" &
lr_pid=$!
iperf3 -s -B 127.0.0.1 -p "$i3_port" >/dev/null 2>&1 &
i3_pid=$!
trap 'kill $lr_pid $i3_pid 2>/dev/null; rm -rf "$tmp"' EXIT
sleep 0.5

# goodput PORT: one iperf3 client run, its receiver goodput in bit/s
goodput() {
  iperf3 -c 127.0.0.1 -p "$1" -t "$secs" -J "${@:2}" | jq '.end.sum_received.bits_per_second'
}

echo "iperf3 -c -t $secs $* against linerate serve (A) and iperf3 -s (B), $reps pairs"
: >"$tmp/pairs"
for ((i = 1; i <= reps; i++)); do
  if ((i % 2)); then a=$(goodput $lr_port "$@"); b=$(goodput $i3_port "$@")
  else b=$(goodput $i3_port "$@"); a=$(goodput $lr_port "$@"); fi
  printf '%s\t%s\n' "$a" "$b" >>"$tmp/pairs"
  awk -F'\t' -v i="$i" '{ printf "  pair %d: linerate serve %.2f Gbit/s, iperf3 -s %.2f Gbit/s\n", i, $1 / 1e9, $2 / 1e9 }' <<<"$a	$b"
done
awk -F'\t' '
  function median(v, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  { a[NR] = $1; b[NR] = $2; l[NR] = log($1 / $2); s += l[NR] }
  END {
    m = s / NR; for (i = 1; i <= NR; i++) ss += (l[i] - m) ^ 2
    sd = NR > 1 ? sqrt(ss / (NR - 1)) : 0
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09", tt, " ")
    t = (NR - 1 >= 1 && NR - 1 <= 20) ? tt[NR - 1] : 2.0
    h = NR > 1 ? t * sd / sqrt(NR) : 0
    printf "median       linerate serve %.2f Gbit/s, iperf3 -s %.2f Gbit/s\n", median(a, NR) / 1e9, median(b, NR) / 1e9
    printf "linerate/iperf3 %.3f (95 %% interval %.3f to %.3f)\n", exp(m), exp(m - h), exp(m + h)
  }' "$tmp/pairs"
