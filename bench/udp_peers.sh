# bench/udp_peers.sh — the UDP part of bench/peers.sh (`--only udp`): datagrams per second at the
# highest rate each tool reaches, client sending, server receiving, on each of peers.sh's paths.
# Sourced by peers.sh, not run on its own: it uses peers.sh's settings ($lr, $udp_dur, $reps, $tmp,
# $paths, $i3src, $tool_filter, $udp_sizes) and helpers (log, start_server, stop, proc_cpu_s,
# veth_up, veth_down, keep_tool, timed_client, $jq_lib).
# shellcheck shell=bash disable=SC2154 # settings and helpers come from peers.sh, which sources this
#
# Tools: linerate three ways (its default: UDP GSO + GRO, 64-datagram batches; --no-gro; and
# --no-gso --no-gro, plain sendmmsg/recvmmsg) to show what each kernel feature contributes;
# Debian's iperf3 (3.12), iperf 2, nuttcp, sockperf; and with IPERF3_SRC the newest iperf3 twice:
# plain and with --gsro (GSO on its sender, GRO on its receiver: its best UDP mode, the reference).
# Payloads: 18 bytes (a 64-byte Ethernet frame: the packet-rate case) and 1472 (a full 1500-byte
# MTU: the goodput case) by default; --udp-sizes changes them.
#
# Sent packets are the sender's count, received the receiver's: linerate .summary; iperf3
# .end.sum_sent.packets and .end.sum_received (packets - lost_packets); iperf 2 the client's "Sent N
# datagrams" and the server's CSV (total - lost); nuttcp -fxmitstats tx_megabytes and pkt - drop;
# sockperf the client's "messages sent" and the server's "messages received" (printed on SIGINT).
# Loss % = (sent - received) / sent from those counts, the same formula for every tool. linerate's
# own accounting is checked in every run: packets_sent == packets_received + packets_lost.
# Goodput = received datagrams × payload × 8 / the run's seconds; CPU s/GB = both ends' CPU seconds
# (measured outside the tools, as for TCP) per 10^9 payload bytes received.
#
# Targets (issue 34): received pps at the smallest payload and goodput at the largest each >= 1.2x
# the newest iperf3 --gsro, judged on the median of paired ratios (linerate / iperf3 in the same
# repetition), on every path; CPU s/GB <= its; linerate's spread (max/min over reps) no wider than
# its; accounting exact in every linerate run.

udp_tools=(linerate "linerate --no-gro" "linerate --no-gso --no-gro" iperf3)
[[ -n $i3src ]] && udp_tools+=(iperf3-src "iperf3-src --gsro")
udp_tools+=(iperf2 nuttcp sockperf)
udp_samples=$tmp/udp.jsonl
: >"$udp_samples"

# parse_udp_TOOL CLIENT_OUT PAYLOAD: print one JSON object with packets_sent, packets_received,
# pps_sent, pps_received and the tool's own self_loss_pct, self_sender_cpu_pct,
# self_receiver_cpu_pct (null where it has none). Server output is in $tmp/server.out.
parse_udp_linerate() {
  jq -ec '.summary | { packets_sent, packets_received, pps_sent, pps_received,
    self_loss_pct: .loss_pct, self_sender_cpu_pct: .local_cpu_pct,
    self_receiver_cpu_pct: .remote_cpu_pct, packets_lost, packets_out_of_order, packets_duplicate,
    accounting_exact: (.packets_sent == .packets_received + .packets_lost) }' "$1"
}
parse_udp_iperf3() { # in .end.sum_received, .packets is the receiver's highest sequence number
  jq -ec '.end | (.sum_received.packets - .sum_received.lost_packets) as $rcv
    | { packets_sent: .sum_sent.packets, packets_received: $rcv,
        pps_sent: (.sum_sent.packets / .sum_sent.seconds), pps_received: ($rcv / .sum_received.seconds),
        self_loss_pct: .sum_received.lost_percent,
        self_sender_cpu_pct: .cpu_utilization_percent.host_total,
        self_receiver_cpu_pct: .cpu_utilization_percent.remote_total }' "$1"
}
parse_udp_iperf2() { # client: "Sent N datagrams" and its interval; server CSV: interval (field 7,
                     # to 0.1 s), lost (11), total = highest sequence number (12), loss % (13)
  awk -F, '
    FNR == NR { if (!t && match($0, /[0-9.]+-[0-9.]+ sec/)) { split(substr($0, RSTART), a, /[- ]/); t = a[2] - a[1] }
                if (match($0, /Sent [0-9]+ datagrams/)) { split(substr($0, RSTART), a, " "); sent = a[2] }
                next }
    NF >= 14 { split($7, iv, "-"); rt = iv[2] - iv[1]; rcv = $12 - $11; loss = $13; ok = 1 }
    END { if (!ok || !sent || t <= 0 || rt <= 0) exit 1
          printf "{\"packets_sent\":%d,\"packets_received\":%d,\"pps_sent\":%.1f,\"pps_received\":%.1f,", sent, rcv, sent / t, rcv / rt
          printf "\"self_loss_pct\":%s,\"self_sender_cpu_pct\":null,\"self_receiver_cpu_pct\":null}\n", loss }' \
    "$1" "$tmp/server.out"
}
parse_udp_nuttcp() { # -fparse -fxmitstats: tx_megabytes sent, megabytes (2^20 bytes) and rate_Mbps
                     # received, pkt = highest sequence number, drop = gaps. The receiving time is
                     # megabytes / rate: real_seconds has only two decimals.
  awk -v len="$2" '/megabytes=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }; ok = 1 }
    END { if (!ok || v["rate_Mbps"] <= 0 || v["tx_megabytes"] == "") exit 1
          t = v["megabytes"] * 8.388608 / v["rate_Mbps"]; sent = v["tx_megabytes"] * 1048576 / len
          rcv = v["pkt"] - v["drop"]
          printf "{\"packets_sent\":%.0f,\"packets_received\":%d,\"pps_sent\":%.1f,\"pps_received\":%.1f,", sent, rcv, sent / t, rcv / t
          printf "\"self_loss_pct\":%s,\"self_sender_cpu_pct\":%s,\"self_receiver_cpu_pct\":%s}\n", v["data_loss"], v["tx_cpu"], v["rx_cpu"] }' "$1"
}
parse_udp_sockperf() { # client: "Total of N messages sent in T sec"; server: "Total N messages
                       # received and handled" (on SIGINT). The server keeps no time: T for both.
  awk '
    FNR == NR { if (match($0, /Total of [0-9]+ messages sent in [0-9.]+ sec/)) { split(substr($0, RSTART), a, " "); sent = a[3]; t = a[7] }
                next }
    match($0, /Total [0-9]+ messages received/) { split(substr($0, RSTART), a, " "); rcv = a[2]; ok = 1 }
    END { if (!ok || !sent || t <= 0) exit 1
          printf "{\"packets_sent\":%d,\"packets_received\":%d,\"pps_sent\":%.1f,\"pps_received\":%.1f,", sent, rcv, sent / t, rcv / t
          printf "\"self_loss_pct\":null,\"self_sender_cpu_pct\":null,\"self_receiver_cpu_pct\":null}\n" }' \
    "$1" "$tmp/server.out"
}

run_udp() { # run_udp TOOL PAYLOAD REP: one client run against a fresh server; appends a sample
  local tool=$1 len=$2 rep=$3 parse port cmd srv sig=TERM extra parsed wall usr sys
  case $tool in
    linerate*) port=$p_lr parse=parse_udp_linerate
      read -ra extra <<<"${tool#linerate}" # the variants' flags: --no-gro, --no-gso --no-gro
      srv=("$lr" serve -B "$dst" -p "$port")
      cmd=("$lr" udp "$dst" -p "$port" -t "$udp_dur" -i 0 --rate max -l "$len" --json --no-store "${extra[@]}") ;;
    iperf3*) port=$p_i3 parse=parse_udp_iperf3 # no -1: the server must outlive the client's exit for its CPU
      local bin=iperf3 flags=${tool#iperf3}
      [[ $tool == iperf3-src* ]] && bin=$i3src flags=${tool#iperf3-src}
      read -ra extra <<<"$flags" # the newest iperf3's mode: --gsro
      srv=("$bin" -s -B "$dst" -p "$port")
      cmd=("$bin" -c "$dst" -p "$port" -u -b 0 -l "$len" -t "$udp_dur" --json "${extra[@]}") ;;
    iperf2) port=$p_i2 parse=parse_udp_iperf2 # -b: a rate above reach is iperf 2's "max"
      srv=(iperf -s -u -B "$dst" -p "$port" -y C)
      cmd=(iperf -c "$dst" -p "$port" -u -b 100G -l "$len" -t "$udp_dur") ;;
    nuttcp) port=$p_nc parse=parse_udp_nuttcp
      srv=(nuttcp -S --nofork -P "$port")
      cmd=(nuttcp -u -R 100g -l "$len" -T "$udp_dur" -P "$port" -p "$p_nd" -fparse -fxmitstats "$dst") ;;
    sockperf) port=$p_sp parse=parse_udp_sockperf sig=INT # it prints its count on SIGINT only
      srv=(sockperf server -i "$dst" -p "$port")
      # Without warm-up messages, which the server would count as received but the client not as sent.
      cmd=(sockperf throughput -i "$dst" -p "$port" -m "$len" -t "$udp_dur" --dontwarmup) ;;
  esac
  timed_client "$port" "$sig" "$udp_dur" || return 1
  if ! parsed=$("$parse" "$tmp/client.out" "$len"); then
    log "could not parse $tool output"; cat "$tmp/client.out" "$tmp/server.out" >&2; return 1
  fi
  read -r wall usr sys < <(tail -n 1 "$tmp/time")
  jq -c --arg tool "$tool" --arg path "$path" --argjson len "$len" --argjson rep "$rep" \
    --argjson dur "$udp_dur" --argjson snd_s "$(awk -v u="$usr" -v s="$sys" 'BEGIN{print u+s}')" \
    --argjson rcv_s "$srv_cpu_s" --argjson wall "$wall" '
    { tool: $tool, path: $path, payload_bytes: $len, rep: $rep } + .
    + { loss_pct: (if .packets_sent > 0 then (.packets_sent - .packets_received) / .packets_sent * 100
                   else null end),
        goodput_gbps: (.pps_received * $len * 8 / 1e9),
        cpu_s_per_gb: (if .packets_received > 0
                       then ($snd_s + $rcv_s) / (.packets_received * $len / 1e9) else null end),
        sender_cpu_s: $snd_s, receiver_cpu_s: $rcv_s, client_wall_s: $wall,
        sender_cpu_pct: ($snd_s / $dur * 100), receiver_cpu_pct: ($rcv_s / $dur * 100) }' \
    <<<"$parsed" >>"$udp_samples"
  jq -r 'def m: . / 1e6 * 1000 | round / 1000;
    "  \(.path) \(.tool) \(.payload_bytes) B: sent \(.pps_sent | m) Mpps, received \(.pps_received | m) Mpps (\(.goodput_gbps * 100 | round / 100) Gbit/s), loss \(.loss_pct * 100 | round / 100)%, CPU \(.sender_cpu_pct | round)% / \(.receiver_cpu_pct | round)%"
    + if has("accounting_exact") then ", accounting " + (if .accounting_exact then "exact"
        else "NOT exact" end) + " (sent \(.packets_sent) = received \(.packets_received) + lost \(.packets_lost))"
      else "" end' <<<"$(tail -n 1 "$udp_samples")" >&2
}

udp_part() { # every (path, payload, tool) × $reps, tools rotated per repetition, into $udp_samples
  local p rep len k tool tools=()
  for tool in "${udp_tools[@]}"; do keep_tool "$tool" && tools+=("$tool"); done
  for p in $paths; do
    log "UDP on $p: $reps reps × ${udp_dur} s × ${#tools[@]} tools × (${udp_sizes[*]}-byte payloads)"
    if [[ $p == veth ]] && ! veth_up; then
      log "could not make the veth namespaces: skipping the veth path"; veth_down; continue
    fi
    for (( rep = 1; rep <= reps; rep++ )); do
      log "UDP $p rep $rep/$reps"
      for len in "${udp_sizes[@]}"; do
        for (( k = 0; k < ${#tools[@]}; k++ )); do
          tool=${tools[(k + rep - 1) % ${#tools[@]}]} # rotated, as for TCP
          if ! run_udp "$tool" "$len" "$rep"; then
            failures=$((failures + 1))
            jq -cn --arg tool "$tool" --arg path "$path" --argjson len "$len" --argjson rep "$rep" \
              '{tool: $tool, path: $path, payload_bytes: $len, rep: $rep, failed: true}' >>"$udp_samples"
          fi
          sleep 0.2
        done
      done
    done
    veth_down
  done
}

udp_summary() { # the part's JSON (rows, targets, samples) on stdout; needs peers.sh's $jq_lib
  jq -s --argjson reps "$reps" --argjson dur "$udp_dur" \
    --argjson tools "$(printf '%s\n' "${udp_tools[@]}" | jq -R . | jq -sc .)" \
    --argjson sizes "$(printf '%s\n' "${udp_sizes[@]}" | jq -sc .)" "$jq_lib"'
  def order: . as $t | $tools | index($t);
  def mpps: if . == null then null else . / 1e6 end;
  def r2: if . == null then null else . * 100 | round / 100 end;
  def spread: if length == 0 or min <= 0 then null else max / min end;
  . as $samples
  # Paired: linerate over the tool within one repetition (same path and payload), their median.
  | def paired($p; $l; $t): [ $samples
        | map(select(.path == $p and .payload_bytes == $l and (.failed | not))) | group_by(.rep)[]
        | (map(select(.tool == "linerate"))[0].pps_received) as $a
        | (map(select(.tool == $t))[0].pps_received) as $b
        | select($a != null and $b != null and $b > 0) | $a / $b ] | median;
  [ group_by([.path, .payload_bytes, (.tool | order)])[]
      | map(select(.failed | not)) as $ok
      | { tool: .[0].tool, path: .[0].path, payload_bytes: .[0].payload_bytes, runs: length,
          failed: (length - ($ok | length)),
          pps_sent_median: ($ok | med(.pps_sent)),
          pps_received_median: ($ok | med(.pps_received)),
          pps_received_min: ($ok | map(.pps_received) | min),
          pps_received_max: ($ok | map(.pps_received) | max),
          pps_received_spread: ($ok | map(.pps_received) | spread),
          goodput_gbps_median: ($ok | med(.goodput_gbps)),
          loss_pct_median: ($ok | med(.loss_pct)),
          sender_cpu_pct_median: ($ok | med(.sender_cpu_pct)),
          receiver_cpu_pct_median: ($ok | med(.receiver_cpu_pct)),
          cpu_s_per_gb_median: ($ok | med(.cpu_s_per_gb)),
          self_loss_pct_median: ($ok | med(.self_loss_pct)),
          self_sender_cpu_pct_median: ($ok | med(.self_sender_cpu_pct)),
          self_receiver_cpu_pct_median: ($ok | med(.self_receiver_cpu_pct)),
          accounting_exact_runs: (if .[0].tool | startswith("linerate")
                                  then $ok | map(select(.accounting_exact)) | length else null end) }
    ] as $rows
  | def row($t; $p; $l): $rows | map(select(.tool == $t and .path == $p and .payload_bytes == $l))[0];
    ($rows | map(. + { linerate_received_ratio:
                         div(row("linerate"; .path; .payload_bytes).pps_received_median; .pps_received_median),
                       linerate_paired_ratio:
                         (if .tool == "linerate" then null else paired(.path; .payload_bytes; .tool) end) }))
    as $rows
  | def row($t; $p; $l): $rows | map(select(.tool == $t and .path == $p and .payload_bytes == $l))[0];
    ($rows | map(select(.tool | startswith("linerate")))) as $lr_rows
  | ($samples | map(.path) | unique) as $paths
  | ($sizes | min) as $small | ($sizes | max) as $large
  | def ref($p; $l): row("iperf3-src --gsro"; $p; $l);
  { reps: $reps, seconds: $dur, payload_bytes: $sizes, paths: $paths,
    rows: $rows,
    targets: [
      ( $paths[] as $p | ref($p; $small) as $r | select($r != null)
        | target("\($p): UDP \($small) B received pps >= 1.2x iperf3-src --gsro"; $r.linerate_paired_ratio | r2;
                 1.2; $r.linerate_paired_ratio >= 1.2;
                 "median of paired ratios; medians \(row("linerate"; $p; $small).pps_received_median | mpps | r2) against \($r.pps_received_median | mpps | r2) Mpps") ),
      ( $paths[] as $p | ref($p; $large) as $r | select($r != null and $large != $small)
        | target("\($p): UDP \($large) B goodput >= 1.2x iperf3-src --gsro"; $r.linerate_paired_ratio | r2;
                 1.2; $r.linerate_paired_ratio >= 1.2;
                 "median of paired ratios; medians \(row("linerate"; $p; $large).goodput_gbps_median | r2) against \($r.goodput_gbps_median | r2) Gbit/s") ),
      ( $paths[] as $p | $sizes[] as $l | ref($p; $l) as $r | row("linerate"; $p; $l) as $m
        | select($r != null and $m != null)
        | target("\($p): UDP \($l) B CPU s/GB <= iperf3-src --gsro"; $m.cpu_s_per_gb_median;
                 $r.cpu_s_per_gb_median; $m.cpu_s_per_gb_median <= $r.cpu_s_per_gb_median;
                 "both ends, medians") ),
      ( $paths[] as $p | $sizes[] as $l | ref($p; $l) as $r | row("linerate"; $p; $l) as $m
        | select($r != null and $m != null and $r.pps_received_spread != null)
        | target("\($p): UDP \($l) B spread <= iperf3-src --gsro"; $m.pps_received_spread;
                 $r.pps_received_spread; $m.pps_received_spread <= $r.pps_received_spread;
                 "max/min of received pps over reps") ),
      ( row("iperf3"; "loopback"; $small) as $r | select($r != null)
        | target("loopback: UDP \($small) B received pps >= 3x Debian iperf3";
                 row("linerate"; "loopback"; $small).pps_received_median | mpps;
                 mul($r.pps_received_median | mpps; 3);
                 row("linerate"; "loopback"; $small).pps_received_median >= 3 * $r.pps_received_median;
                 "Mpps received, medians, iperf3 without GSO (3.12)") ),
      target("UDP accounting exact in every linerate run";
             $lr_rows | map(.accounting_exact_runs) | add; $lr_rows | map(.runs - .failed) | add;
             ($lr_rows | map(.accounting_exact_runs) | add) == ($lr_rows | map(.runs - .failed) | add);
             "runs with packets_sent == packets_received + packets_lost, all variants and payloads")
    ],
    samples: $samples }' "$udp_samples"
}

udp_print() { # the table and target lines from $out's .udp, on stdout
  printf '%-8s %-26s %7s %4s %9s %9s %7s %6s %5s %5s %7s %7s %7s %5s\n' path 'tool (UDP)' payload runs \
    'sent Mpps' 'rcv Mpps' 'Gbit/s' 'loss%' 'snd%' 'rcv%' 'CPUs/GB' 'LR×rcv' 'LR×pair' exact
  jq -r '.udp.rows[] | [.path, .tool, .payload_bytes, "\(.runs - .failed)/\(.runs)",
    (.pps_sent_median | if . == null then null else . / 1e6 end),
    (.pps_received_median | if . == null then null else . / 1e6 end), .goodput_gbps_median,
    .loss_pct_median, .sender_cpu_pct_median, .receiver_cpu_pct_median, .cpu_s_per_gb_median,
    .linerate_received_ratio, .linerate_paired_ratio,
    (if .accounting_exact_runs == null then null
     else "\(.accounting_exact_runs)/\(.runs - .failed)" end)] | map(. // "-" | tostring) | @tsv' "$out" \
  | awk -F'\t' '
      function f(x, p) { return x == "-" ? "-" : sprintf("%.*f", p, x) }
      { printf "%-8s %-26s %7s %4s %9s %9s %7s %6s %5s %5s %7s %7s %7s %5s\n", $1, $2, $3, $4, f($5, 3),
               f($6, 3), f($7, 2), f($8, 1), f($9, 0), f($10, 0), f($11, 3), f($12, 2), f($13, 2), $14 }'
  echo
  print_targets .udp.targets
  echo
  echo "UDP at max rate, client sending: Mpps = 10^6 datagrams/s, median over reps; sent by the sender's"
  echo "count, received by the receiver's; loss% = (sent - received) / sent; Gbit/s = payload goodput."
  echo "CPU as for TCP (snd = client, rcv = server); CPU s/GB per 10^9 payload bytes received. LR×rcv ="
  echo "linerate's (GSO + GRO) received pps over the tool's (medians); LR×pair = the median of that ratio"
  echo "within each repetition. exact: linerate runs with packets_sent == packets_received + packets_lost."
}
