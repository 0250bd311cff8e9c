#!/usr/bin/env bash
# bench/ab.sh — two linerate builds, A and B, paired on loopback: what a change costs.
#
# Each repetition runs A and B back to back (the order alternates) with the same arguments, each
# against its own in-process server, so machine noise hits both alike. Per run: receiver goodput
# and the process's CPU seconds per 10^9 bytes received (client and in-process server together).
# Printed: each build's median, and the paired ratio B/A with its geometric mean and a 95 %
# interval (Student t over the logs of the ratios). An interval that holds 1 is "no difference
# this host can show".
#
# Usage: bench/ab.sh A_BIN B_BIN [linerate tcp arguments, e.g. -P 2]
# Env:   REPS (7), RUN_SECONDS (3), KIND (tcp; udp runs `linerate udp`, e.g. with -b max -l 18)
# Example (the build before a change against the current one):
#   git worktree add /tmp/lr-old <rev> && cargo build --release --manifest-path /tmp/lr-old/Cargo.toml
#   bench/ab.sh /tmp/lr-old/target/release/linerate target/release/linerate -P 1
set -euo pipefail

[[ $# -ge 2 ]] || { sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 2; }
a=$1 b=$2
shift 2
for bin in "$a" "$b"; do [[ -x $bin ]] || { echo "ab.sh: $bin is not an executable" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "ab.sh: needs jq (apt-get install jq)" >&2; exit 2; }
reps=${REPS:-7} secs=${RUN_SECONDS:-3} kind=${KIND:-tcp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run BIN: one test; prints "goodput_bps cpu_s_per_GB"
run() {
  local bin=$1
  shift
  LINERATE_DB=$tmp/runs.db "$bin" "$kind" -t "$secs" --json "$@" 2>/dev/null \
    | jq -r '.summary | [.throughput_bps,
        (.local_cpu.process_pct / 100 * .duration_s / (.bytes_received / 1e9))] | @tsv'
}

echo "A: $a"
echo "B: $b"
echo "linerate $kind -t $secs $*, $reps pairs, order alternating"
: >"$tmp/pairs"
for ((i = 1; i <= reps; i++)); do
  if ((i % 2)); then
    ra=$(run "$a" "$@"); rb=$(run "$b" "$@")
  else
    rb=$(run "$b" "$@"); ra=$(run "$a" "$@")
  fi
  printf '%s\t%s\n' "$ra" "$rb" >>"$tmp/pairs"
  awk -F'\t' -v i="$i" '{ printf "  pair %d: A %.2f Gbit/s %.3f CPU s/GB   B %.2f Gbit/s %.3f CPU s/GB\n",
                           i, $1 / 1e9, $2, $3 / 1e9, $4 }' <<<"$ra	$rb"
done

# The median of column C, and the paired ratio B/A of columns CA and CB with its interval.
awk -F'\t' '
  function median(c,   n, i, j, t, v) {
    n = 0; for (i = 1; i <= NR; i++) v[++n] = col[i, c]
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  function ratio(name, ca, cb,   i, s, ss, m, sd, t, h) {
    s = 0; ss = 0
    for (i = 1; i <= NR; i++) { l[i] = log(col[i, cb] / col[i, ca]); s += l[i] }
    m = s / NR
    for (i = 1; i <= NR; i++) ss += (l[i] - m) ^ 2
    sd = NR > 1 ? sqrt(ss / (NR - 1)) : 0
    # Student t, 97.5 %, for NR - 1 degrees of freedom (NR up to 31; beyond, 2.0).
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05 2.04", tt, " ")
    t = (NR - 1 >= 1 && NR - 1 <= 30) ? tt[NR - 1] : 2.0
    h = NR > 1 ? t * sd / sqrt(NR) : 0
    printf "%-12s B/A %.3f (95 %% interval %.3f to %.3f)\n", name, exp(m), exp(m - h), exp(m + h)
  }
  { for (c = 1; c <= NF; c++) col[NR, c] = $c }
  END {
    printf "median       A %.2f Gbit/s %.3f CPU s/GB   B %.2f Gbit/s %.3f CPU s/GB\n",
      median(1) / 1e9, median(2), median(3) / 1e9, median(4)
    ratio("goodput", 1, 3); ratio("CPU s/GB", 2, 4)
  }' "$tmp/pairs"
