#!/usr/bin/env bash
# bench/frames.sh — 64-byte frames per second from one sending core over a veth pair, counted
# at the receiver's XDP program: linerate's frame engines beside trafgen (netsniff-ng), paired.
#
# Two namespaces (lrfb-a, lrfb-b) joined by a veth pair va ↔ vb, 198.18.38.1 ↔ 198.18.38.2.
# Part 1, the senders alone (issue 38's target): the receiver is linerate's XDP counter on vb in
# count-and-drop mode (crates/frames/examples/frame_rate.rs `count`), the same for every sender,
# so only the sending side differs. Senders, each on core $CORE, $SECS s, same frame (Ethernet,
# IPv4, UDP to port 9000, 18-byte payload: 60 bytes built, 64 on the wire with the FCS):
#   trafgen       trafgen --cpus 1 (AF_PACKET TX ring, qdisc bypassed: its default)
#   packet        linerate's `packet` engine (AF_PACKET TX ring, PACKET_QDISC_BYPASS)
#   xdp-copy      linerate's AF_XDP socket (copy mode: a veth has no zero-copy)
#   xdp-live      linerate's `xdp` engine as it runs on a veth: XDP live frames (BPF_PROG_RUN
#                 redirecting to ndo_xdp_xmit; crates/frames/src/xdp_live.rs)
# Each rep runs every sender once, the order rotating; the sender's pps is the frames the counter
# saw over the sender's own sending time, and each run checks counted == sent (no unexplained
# loss). Printed: per sender the median Mpps; per linerate sender the paired ratio to trafgen
# (geometric mean and a 95 % interval, Student t over the logs, as bench/ab.sh).
# Part 2, end to end (context, not the target): `linerate udp --engine packet|xdp -l 18 -b max`
# against `serve --frames`: frames at the server's driver per second, and what its receiver
# took with the sequence accounting (`packet`: the stack's socket; `xdp`: the AF_XDP socket the
# counter redirects to). On a veth the receiving side runs on the sending core (the veth's
# NAPI), so this is lower than part 1.
# xdp-tools: Debian's xdp-trafficgen is tried (installed with apt-get when missing) and its
# outcome recorded: 1.3.1 fails to load on Linux 6.18 (a tracepoint it attaches is gone).
#
# Usage: bench/frames.sh            Env: REPS (7), SECS (3), CORE (0)
# Root only. Writes bench/results/frames-<UTC time>.json.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-7} secs=${SECS:-3} core=${CORE:-0}
[[ $(id -u) == 0 ]] || { echo "frames.sh: needs root (namespaces, XDP)" >&2; exit 2; }
command -v trafgen >/dev/null || apt-get install -y netsniff-ng >/dev/null
command -v jq >/dev/null || apt-get install -y jq >/dev/null
cargo build --release -q --bin linerate
cargo build --release -q -p linerate-frames --example frame_rate
fr=$PWD/target/release/examples/frame_rate lr=$PWD/target/release/linerate
a=lrfb-a b=lrfb-b
ns_down() {
  pkill -f "linerate serve --frames --port 5391" 2>/dev/null || true
  ip netns del $a 2>/dev/null || true
  ip netns del $b 2>/dev/null || true
}
ns_down
tmp=$(mktemp -d)
trap 'ns_down; rm -rf "$tmp"' EXIT
ip netns add $a && ip netns add $b
ip link add va netns $a type veth peer name vb netns $b
ip -n $a addr add 198.18.38.1/24 dev va && ip -n $b addr add 198.18.38.2/24 dev vb
for ns in $a $b; do ip -n $ns link set lo up; done
ip -n $a link set va up && ip -n $b link set vb up
mb=$(ip netns exec $b cat /sys/class/net/vb/address)
ma=$(ip netns exec $a cat /sys/class/net/va/address)
ip -n $a neigh replace 198.18.38.2 lladdr "$mb" dev va nud permanent
cat >"$tmp/tg.cfg" <<EOF
{ eth(da=$mb, sa=$ma, type=0x0800), ipv4(sa=198.18.38.1, da=198.18.38.2, ttl=64, df), udp(sp=40000, dp=9000), fill(0, 18) }
EOF

# run_SENDER: prints "pps counted sent" for one run.
run_trafgen() {
  taskset -c "$core" "$fr" count $a $b "$(awk -v s="$secs" 'BEGIN { print s + 0.8 }')" >"$tmp/count" &
  sleep 0.3
  ip netns exec $a timeout -s INT "$secs" trafgen --dev va --conf "$tmp/tg.cfg" --cpus 1 \
    >"$tmp/tg.out" 2>&1 || true
  wait
  awk -v counted="$(awk '{ print $5 }' "$tmp/count")" '
    /packets outgoing/ { sent = $1 }
    /sec,.*usec on CPU/ { t = $1 + $3 / 1e6 }
    END { if (!t) exit 1; printf "%.0f %d %d\n", counted / t, counted, sent }' <(tr -d '\r' <"$tmp/tg.out")
}
run_linerate() { # ENGINE (packet, xdp, live): frame_rate prints sent, seconds, counted
  taskset -c "$core" "$fr" "$1" $a $b "$secs" \
    | sed -E 's/.*sent ([0-9]+) in ([0-9.]+) s.*counted at vb.s XDP ([0-9]+).*/\1 \2 \3/' \
    | awk '{ printf "%.0f %d %d\n", $3 / $2, $3, $1 }'
}

senders=(trafgen packet xdp-copy xdp-live)
: >"$tmp/rows"
echo "part 1: 64-byte frames, one sending core ($core), counted at vb's XDP (count and drop), $reps reps x $secs s"
for ((r = 1; r <= reps; r++)); do
  line=$r
  for ((k = 0; k < ${#senders[@]}; k++)); do
    s=${senders[$(((k + r) % ${#senders[@]}))]}
    case $s in
      trafgen) out=$(run_trafgen) ;;
      packet) out=$(run_linerate packet) ;;
      xdp-copy) out=$(run_linerate xdp) ;;
      xdp-live) out=$(run_linerate live) ;;
    esac
    read -r pps counted sent <<<"$out"
    [[ $counted == "$sent" ]] || echo "  rep $r $s: counted $counted of $sent sent (unexplained loss)" >&2
    echo "$r $s $pps $counted $sent" >>"$tmp/rows"
    line+=" $s=$(awk -v p="$pps" 'BEGIN { printf "%.3f", p / 1e6 }')"
  done
  echo "  rep $line Mpps"
done

summary=$(awk '
  function median(s,   n, i, j, t, v) {
    n = 0; for (i = 1; i <= reps; i++) v[++n] = pps[i, s]
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  { pps[$1, $2] = $3; if ($1 > reps) reps = $1; if ($4 != $5) unexplained[$2] += $5 - $4 }
  END {
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13", tt, " ")
    t = (reps - 1 >= 1 && reps - 1 <= 15) ? tt[reps - 1] : 2.1
    n = split("trafgen packet xdp-copy xdp-live", names, " ")
    printf "{"
    for (k = 1; k <= n; k++) {
      s = names[k]; sum = 0; ss = 0
      for (i = 1; i <= reps; i++) { l[i] = log(pps[i, s] / pps[i, "trafgen"]); sum += l[i] }
      m = sum / reps
      for (i = 1; i <= reps; i++) ss += (l[i] - m) ^ 2
      h = reps > 1 ? t * sqrt(ss / (reps - 1)) / sqrt(reps) : 0
      printf "%s\"%s\":{\"median_pps\":%.0f,\"ratio_to_trafgen\":%.3f,\"ratio_low\":%.3f,\"ratio_high\":%.3f,\"unexplained_loss\":%d}",
        (k > 1 ? "," : ""), s, median(s), exp(m), exp(m - h), exp(m + h), unexplained[s]
    }
    printf "}\n"
  }' "$tmp/rows")
jq -r 'to_entries[] | "  \(.key): median \(.value.median_pps / 1e6 * 1000 | round / 1000) Mpps, x\(.value.ratio_to_trafgen) trafgen (95 % interval \(.value.ratio_low) to \(.value.ratio_high)), unexplained loss \(.value.unexplained_loss)"' <<<"$summary"

echo "part 2: linerate udp --engine ENGINE -l 18 -b max -t $secs against serve --frames (driver count, receiver)"
ip netns exec $b "$lr" serve --frames --port 5391 >"$tmp/serve.log" 2>&1 &
sleep 1
e2e="{"
for engine in packet xdp; do
  j=$(ip netns exec $a taskset -c "$core" "$lr" udp 198.18.38.2 -p 5391 --engine "$engine" -l 18 -b max \
        -t "$secs" --json --no-store 2>/dev/null \
      | jq -c '.summary | {tx_path: .frames.tx_path, pps_at_driver: .frames.pps_at_driver,
          pps_received, rx_path: .frames.rx_path, lost_on_path: .frames.lost_on_path,
          lost_in_receiver: .frames.lost_in_receiver, rx_socket_dropped: .frames.rx_socket_dropped,
          client_cpu_pct: .local_cpu_pct}')
  echo "  $engine: $j"
  e2e+="\"$engine\":$j,"
done
e2e="${e2e%,}}"

command -v xdp-trafficgen >/dev/null || apt-get install -y xdp-tools >/dev/null 2>&1 || true
if command -v xdp-trafficgen >/dev/null; then
  xt=$(ip netns exec $a timeout 5 xdp-trafficgen udp va --dst-mac "$mb" --dst-addr 198.18.38.2 \
         --dst-port 9000 -t 1 2>&1 | tail -3 | tr '\n' ' ' || true)
else
  xt="xdp-tools not installed and apt-get could not install it"
fi
echo "xdp-trafficgen: $xt"

mkdir -p bench/results
out=bench/results/frames-$(date -u +%Y%m%dT%H%M%SZ).json
jq -n --argjson senders "$summary" --argjson e2e "$e2e" --arg xt "$xt" --arg kernel "$(uname -r)" \
  --argjson reps "$reps" --argjson secs "$secs" --argjson core "$core" \
  '{bench: "frames", kernel: $kernel, reps: $reps, secs: $secs, core: $core, frame_bytes: 64,
    senders: $senders, end_to_end: $e2e, xdp_trafficgen: $xt}' >"$out"
echo "wrote $out"
