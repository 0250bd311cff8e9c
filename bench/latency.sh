# bench/latency.sh — the request/response (latency) part of bench/peers.sh (`--only rr`).
# Sourced by peers.sh, not run on its own: it uses peers.sh's settings ($lr, $dur, $reps, $tmp,
# $port_base, $out, $rr_tools) and helpers (log, start_server, stop, proc_cpu_s, $jq_lib).
# shellcheck shell=bash disable=SC2154 # settings and helpers come from peers.sh, which sources this
#
# What runs: one transaction in flight on one connection, 64-byte request and 64-byte response,
# on 127.0.0.1, for $dur seconds per run:
#   tcp_rr   linerate rr, sockperf ping-pong --tcp, qperf tcp_lat, netperf TCP_RR, iperf 2 --bounceback
#   udp_rr   linerate rr --udp, sockperf ping-pong, qperf udp_lat, netperf UDP_RR
#   tcp_crr  linerate crr, netperf TCP_CRR (connect, request, response, close; sockperf has none)
# netperf is not in Debian's main archive: it runs when `netperf` and `netserver` are on PATH or in
# $NETPERF_DIR (a directory holding both, e.g. a build tree's src/); otherwise its rows are skipped.
#
# Namespace: as root, every run (server and client) gets a fresh network namespace of its own
# (its loopback, plus a veth pair holding 198.18.99.1/32, because netperf's name lookup refuses a
# host with only a loopback address), deleted after the run. A TCP_CRR run leaves up to 131 072
# TIME_WAIT sockets behind for 60 s (net.ipv4.tcp_max_tw_buckets); in a shared namespace they
# would slow whichever run came next. Not root: every run shares the host's namespace, said so.
#
# CPU placement: every tool runs as two processes pinned with taskset, so placement is identical
# across tools — "same core": server and client on CPU 0; "cross core": server on CPU 1, client on
# CPU 0 (linerate too: `linerate serve` in its own process, never the in-process server). Every
# figure is reported with its placement. Tools are interleaved within each repetition (order
# rotated per repetition); figures are medians over repetitions.
#
# Latency is always the ROUND TRIP in microseconds (request sent to response received). The tools
# report it differently, converted here:
#   linerate   .summary.latency_us (round trip, HDR histogram): p50, p99, mean.
#   sockperf   with --full-rtt its percentiles are round trips ("Summary: Round trip is"); without
#              it (older versions) they are one-way = RTT/2 ("Summary: Latency is"): ×2. Transactions
#              are ReceivedMessages / RunTime of its "[Valid Duration]" line (after its warm-up).
#   qperf      tcp_lat/udp_lat report one-way latency = RTT/2, mean only (-uu: in ns): ×2 / 1000.
#              Transactions are loc_recv_msgs / loc_real_time (its msg_rate counts both directions).
#   netperf    omni -o THROUGHPUT,P50_LATENCY,P99_LATENCY,MEAN_LATENCY: round trip µs (whole µs),
#              transactions/s (TCP_CRR: connections/s).
#   iperf 2    --bounceback --bounceback-period 0 (back to back; the default is 10 bounces a second):
#              "BB cnt=avg/min/max/stdev ms" round trip; mean only (its histogram has 100 µs bins,
#              too coarse for a p50); transactions = cnt / interval.
# CPU % (of one core over the run) is measured outside every tool as in the throughput part: the
# client's user+sys from /usr/bin/time, the server's from /proc/PID/stat.
#
# Targets (issue): linerate p50 <= 1.05x sockperf p50 at the same placement (TCP and UDP);
# linerate tcp_rr transactions/s >= netperf TCP_RR; linerate crr connections/s >= netperf TCP_CRR.
# Each target compares the median over repetitions of the paired ratio (linerate's run over the
# peer's run in the same repetition and placement, run minutes apart at most): the machine's speed
# drifts over a benchmark (other guests on the host), and a pair shares the drift. The ratio of the
# two medians is in the table too. Each target line also gives the best-of-repetitions ratio (lowest
# p50, highest rate per tool, as lmbench reports the best of its runs): host interference only ever
# slows a run, and on this VM it flips runs between two speeds (same-core round trips ~6.5 vs
# ~9-11 µs, for every tool) independently per run, so the best run estimates each tool's own cost.
# Before every run a fixed CPU-bound loop is timed on CPU 0 (rr_probe); each sample carries it as
# host_probe_s and the report prints the spread, so a reader can tell a noisy host from a slow tool.
# Each target also carries a 95 % confidence interval for that median (order statistics by the sign
# test, no distribution assumed; 6 pairs at least) and says "within noise" when the interval holds
# the threshold: PASS or FAIL is then the run's luck, not a difference between the tools.

rr_len=64
p_rr_lr=$((port_base + 21)) p_rr_sp=$((port_base + 22)) p_rr_qp=$((port_base + 23))
p_rr_ns=$((port_base + 24)) p_rr_i2=$((port_base + 25))
rr_samples=$tmp/rr.jsonl
rr_raw=${out%.json}-rr-raw # every client's and server's output, kept beside the JSON
rr_md=${out%.json}-rr.md   # the Markdown table and target lines, as printed

# netperf: on PATH, or in $NETPERF_DIR (or its src/). Never built or installed by this script.
netperf_bin='' netserver_bin=''
rr_find_netperf() {
  local d
  for d in "${NETPERF_DIR:-}" "${NETPERF_DIR:+$NETPERF_DIR/src}"; do
    [[ -n $d && -x $d/netperf && -x $d/netserver ]] || continue
    netperf_bin=$d/netperf netserver_bin=$d/netserver; return 0
  done
  if command -v netperf >/dev/null && command -v netserver >/dev/null; then
    netperf_bin=$(command -v netperf) netserver_bin=$(command -v netserver); return 0
  fi
  return 1
}

# ---- per tool: rr_cmd_TOOL KIND sets port, srv (server argv), cmd (client argv) ----
rr_cmd_linerate() {
  port=$p_rr_lr
  srv=("$lr" serve -B 127.0.0.1 -p "$port")
  # --omit 0: no warm-up left out, as netperf, qperf and iperf 2 leave none out.
  cmd=("$lr" rr 127.0.0.1 -p "$port" -l "$rr_len" -t "$dur" -i 0 --omit 0 --json)
  case $1 in udp_rr) cmd+=(--udp) ;; tcp_crr) cmd[1]=crr ;; esac
}
rr_cmd_sockperf() {
  port=$p_rr_sp
  local proto=(); [[ $1 == tcp_rr ]] && proto=(--tcp)
  srv=(sockperf server -i 127.0.0.1 -p "$port" "${proto[@]}")
  cmd=(sockperf ping-pong -i 127.0.0.1 -p "$port" "${proto[@]}" -m "$rr_len" -t "$dur"
       "${sockperf_rtt[@]}")
}
rr_cmd_qperf() {
  port=$p_rr_qp
  srv=(qperf --listen_port "$port")
  # -uu: figures in base units (latency in ns); -vv: also the message counts and real time.
  cmd=(qperf 127.0.0.1 --listen_port "$port" -m "$rr_len" -t "$dur" -uu -vv "${1%_rr}_lat")
}
rr_cmd_netperf() {
  port=$p_rr_ns
  # -D: stay in the foreground; -f: no child per test, so /proc/PID/stat covers the data path.
  srv=("$netserver_bin" -D -f -N -L 127.0.0.1 -p "$port")
  # shellcheck disable=SC2054 # -r REQUEST,RESPONSE and -o's list are netperf's commas
  cmd=("$netperf_bin" -H 127.0.0.1 -p "$port" -t "${1^^}" -l "$dur" -P 0
       -- -r "$rr_len,$rr_len" -o THROUGHPUT,P50_LATENCY,P99_LATENCY,MEAN_LATENCY)
}
rr_cmd_iperf2() {
  port=$p_rr_i2
  srv=(iperf -s -B 127.0.0.1 -p "$port")
  cmd=(iperf -c 127.0.0.1 -p "$port" --bounceback --bounceback-period 0 -l "$rr_len" -t "$dur" -i 0)
}

# ---- per tool: rr_parse_TOOL OUTPUT prints "transactions_per_s p50_us p99_us mean_us" (round
# trip µs; null where the tool has no such figure) ----
rr_parse_linerate() {
  jq -er '.summary | [(.connections_per_s // .transactions_per_s), .latency_us.p50, .latency_us.p99,
           .latency_us.mean] | map(tostring) | join(" ")' "$1"
}
rr_parse_sockperf() {
  awk '
    /Summary: Round trip is/ { k = 1 }  # --full-rtt: already round trips
    /Summary: Latency is/    { k = 2 }  # one-way = RTT/2
    /\[Valid Duration\]/ { for (i = 1; i <= NF; i++) { split($i, kv, "[=;]"); v[kv[1]] = kv[2] } }
    /percentile 50\.000 =/ { p50 = $NF }
    /percentile 99\.000 =/ { p99 = $NF }
    match($0, /avg-(rtt|latency)=[0-9.]+/) { split(substr($0, RSTART, RLENGTH), a, "="); mean = a[2] }
    END { if (!k || p50 == "" || v["RunTime"] + 0 <= 0) exit 1
          printf "%.1f %.3f %.3f %.3f\n", v["ReceivedMessages"] / v["RunTime"], p50 * k, p99 * k, mean * k }' "$1"
}
rr_parse_qperf() {
  awk '{ gsub(",", "") }
    $1 == "latency" && $2 == "=" { x = $3; u = $4 }
    $1 == "loc_recv_msgs" { n = $3 } $1 == "loc_real_time" { t = $3; tu = $4 }
    END { # units: -uu gives ns; anything else (us, ms) converted to be safe
          f["ns"] = 1e-3; f["us"] = 1; f["ms"] = 1e3; f["sec"] = 1e6
          s["ns"] = 1e-9; s["us"] = 1e-6; s["ms"] = 1e-3; s["sec"] = 1
          if (x == "" || !(u in f) || !(tu in s) || t <= 0) exit 1
          printf "%.1f null null %.3f\n", n / (t * s[tu]), 2 * x * f[u] }' "$1" # one-way ×2
}
rr_parse_netperf() {
  awk -F, 'NF == 4 && $1 ~ /^[0-9.]+$/ { line = $0 }
    END { if (line == "") exit 1; split(line, a, ","); printf "%s %s %s %s\n", a[1], a[2], a[3], a[4] }' "$1"
}
rr_parse_iperf2() { # "[  1] 0.0000-5.0100 sec ... 141808=0.020/0.014/11.188/0.035 ms ..."
  awk 'match($0, /[0-9.]+-[0-9.]+ sec/) { split(substr($0, RSTART, RLENGTH), iv, /[- ]/) }
    match($0, /[0-9]+=[0-9.]+\/[0-9.]+\/[0-9.]+\/[0-9.]+ ms/) {
      split(substr($0, RSTART, RLENGTH), a, /[=\/ ]/); cnt = a[1]; avg_ms = a[2]; t = iv[2] - iv[1] }
    END { if (!cnt || t <= 0) exit 1; printf "%.1f null null %.3f\n", cnt / t, avg_ms * 1000 }' "$1"
}

rr_netns=0 # 1: each run in a namespace of its own (see the head of this file)
rr_ns_check() {
  if (( EUID == 0 )) && ip netns add "lrbench$$-probe" 2>/dev/null; then
    ip netns del "lrbench$$-probe"; rr_netns=1
  else
    log "not root or no 'ip netns': runs share the host's network namespace (a crr run's TIME_WAIT sockets slow the next run)"
  fi
}
rr_ns_up() { # a fresh namespace for one run; sets ns_exec
  (( rr_netns )) || return 0
  local ns=lrbench$$
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns" && ip -n "$ns" link set lo up \
    && ip -n "$ns" link add lrb0 type veth peer name lrb1 \
    && ip -n "$ns" addr add 198.18.99.1/32 dev lrb0 \
    && ip -n "$ns" link set lrb0 up && ip -n "$ns" link set lrb1 up || return 1
  ns_exec=(ip netns exec "$ns")
}
rr_ns_down() {
  (( rr_netns )) || return 0
  ns_exec=()
  ip netns del "lrbench$$" 2>/dev/null || true
  sleep 0.5 # the kernel frees the namespace's sockets in the background
}

# The host's speed just before a run: seconds a fixed CPU-bound loop takes on CPU 0 (~0.1 s). On
# a quiet host it varies by a few percent; other guests on the same host stretch it (2x seen), and
# the round trips of the run with it.
rr_probe() {
  local t0=$EPOCHREALTIME t1
  taskset -c 0 awk 'BEGIN { for (i = 0; i < 3000000; i++) s += i }'
  t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

rr_run() { # rr_run KIND TOOL PLACEMENT REP: one pinned client run against a fresh pinned server
  local kind=$1 tool=$2 place ccpu scpu rep=$4 port srv cmd cpu0 cpu1 parsed wall usr sys raw
  IFS=: read -r place ccpu scpu <<<"$3"
  "rr_cmd_$tool" "$kind"
  raw=$rr_raw/$rep-$place-$kind-$tool
  local probe; probe=$(rr_probe)
  if ! start_server "$port" "${ns_exec[@]}" taskset -c "$scpu" "${srv[@]}"; then
    cp "$tmp/server.out" "$raw.server"; stop "$srv_pid"; return 1
  fi
  cpu0=$(proc_cpu_s "$srv_pid")
  local rc=0
  timeout -k 5 $((dur + 30)) /usr/bin/time -f '%e %U %S' -o "$tmp/time" \
    "${ns_exec[@]}" taskset -c "$ccpu" "${cmd[@]}" >"$tmp/client.out" 2>"$tmp/client.err" || rc=$?
  sleep 0.3 # let the server see the end of the test
  cpu1=$(proc_cpu_s "$srv_pid")
  stop "$srv_pid"
  cp "$tmp/server.out" "$raw.server"
  cat "$tmp/client.out" "$tmp/client.err" >"$raw.client"
  if (( rc )); then log "client failed ($rc): taskset -c $ccpu ${cmd[*]}"; cat "$raw.client" >&2; return 1; fi
  # Parse stdout alone where the tool writes JSON there; the combined output otherwise.
  if ! parsed=$("rr_parse_$tool" "$([[ $tool == linerate ]] && echo "$tmp/client.out" || echo "$raw.client")"); then
    log "could not parse $tool output ($raw.client)"; cat "$raw.client" >&2; return 1
  fi
  local tps p50 p99 mean
  read -r tps p50 p99 mean <<<"$parsed"
  read -r wall usr sys < <(tail -n 1 "$tmp/time")
  jq -cn --arg kind "$kind" --arg tool "$tool" --arg place "$place" --argjson ccpu "$ccpu" \
    --argjson scpu "$scpu" --argjson rep "$rep" --argjson dur "$dur" --argjson tps "$tps" \
    --argjson probe "$probe" \
    --argjson p50 "$p50" --argjson p99 "$p99" --argjson mean "$mean" --argjson wall "$wall" \
    --argjson cl_s "$(awk -v u="$usr" -v s="$sys" 'BEGIN{print u+s}')" \
    --argjson sv_s "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{print b-a}')" '
    { kind: $kind, tool: $tool, placement: $place, client_cpu: $ccpu, server_cpu: $scpu, rep: $rep,
      transactions_per_s: $tps, rtt_p50_us: $p50, rtt_p99_us: $p99, rtt_mean_us: $mean,
      client_cpu_pct: ($cl_s / $dur * 100), server_cpu_pct: ($sv_s / $dur * 100),
      client_wall_s: $wall, host_probe_s: $probe }' >>"$rr_samples"
  jq -r 'def f: if . == null then "-" else . * 10 | round / 10 end;
    "  \(.placement) \(.kind) \(.tool): p50 \(.rtt_p50_us | f) µs, mean \(.rtt_mean_us | f) µs, \(.transactions_per_s | round)/s, CPU \(.client_cpu_pct | round)% / \(.server_cpu_pct | round)%, host probe \(.host_probe_s) s"' \
    <<<"$(tail -n 1 "$rr_samples")" >&2
}

rr_in_own_ns() { # rr_in_own_ns CMD...: CMD in a fresh namespace (when there are any); CMD's status
  local ok=1
  rr_ns_up || { log "could not make a network namespace for the run"; ok=0; }
  (( ok )) && "$@" || ok=0
  rr_ns_down
  (( ok ))
}

rr_part() { # the whole part: every (placement, kind, tool) × $reps, into $rr_samples
  : >"$rr_samples"
  mkdir -p "$rr_raw"
  rr_ns_check
  # Help texts read whole (iperf --help exits 1; grep -q would cut a pipe short under pipefail).
  local sp_help i2_help
  sp_help=$(sockperf ping-pong --help 2>&1 || true) i2_help=$(iperf --help 2>&1 || true)
  # sockperf >= 3.7 prints round trips with --full-rtt; older ones only one-way (parsed ×2).
  sockperf_rtt=(); [[ $sp_help == *--full-rtt* ]] && sockperf_rtt=(--full-rtt)
  local cases=("tcp_rr linerate" "tcp_rr sockperf" "tcp_rr qperf")
  if rr_find_netperf; then cases+=("tcp_rr netperf")
  else log "netperf/netserver not found (PATH or NETPERF_DIR): netperf rows skipped"; fi
  if [[ $i2_help == *--bounceback-period* ]]; then cases+=("tcp_rr iperf2")
  else log "iperf 2 without --bounceback-period ($(iperf -v 2>&1 | head -n 1)): iperf 2 skipped"; fi
  cases+=("udp_rr linerate" "udp_rr sockperf" "udp_rr qperf")
  [[ -n $netperf_bin ]] && cases+=("udp_rr netperf")
  cases+=("tcp_crr linerate")
  [[ -n $netperf_bin ]] && cases+=("tcp_crr netperf")
  local kept=() c # --rr-tools: linerate and the peers asked for
  for c in "${cases[@]}"; do
    [[ $c == *" linerate" || ",$rr_tools," == *",${c#* },"* ]] && kept+=("$c")
  done
  cases=("${kept[@]}")
  local placements=("same:0:0") # name:client CPU:server CPU
  if taskset -c 1 true 2>/dev/null; then placements+=("cross:0:1")
  else log "CPU 1 not available: cross-core placement skipped"; fi
  log "request/response on 127.0.0.1, $rr_len-byte messages: $reps reps × ${dur} s × ${#cases[@]} cases × ${#placements[@]} placements (raw output: $rr_raw)"
  local rep p k c kind tool
  for (( rep = 1; rep <= reps; rep++ )); do
    log "rr rep $rep/$reps"
    for (( p = 0; p < ${#placements[@]}; p++ )); do
      for (( k = 0; k < ${#cases[@]}; k++ )); do
        c=${cases[(k + rep - 1) % ${#cases[@]}]} # rotated, as for throughput
        read -r kind tool <<<"$c"
        if ! rr_in_own_ns rr_run "$kind" "$tool" "${placements[(p + rep - 1) % ${#placements[@]}]}" "$rep"; then
          failures=$((failures + 1))
          IFS=: read -r place _ <<<"${placements[(p + rep - 1) % ${#placements[@]}]}"
          jq -cn --arg kind "$kind" --arg tool "$tool" --arg place "$place" --argjson rep "$rep" \
            '{kind: $kind, tool: $tool, placement: $place, rep: $rep, failed: true}' >>"$rr_samples"
        fi
        sleep 0.2
      done
    done
  done
  : >"$rr_at_once_samples"
  # An `if`, not `&&`: without netperf the test is false, and as the function's last command
  # it would make the function fail (and `set -e` end the script before its summary).
  if [[ " ${cases[*]} " == *" tcp_rr netperf "* ]]; then rr_at_once_part; fi
}

# ---- same core, at once: linerate rr and netperf TCP_RR sharing CPU 0 in the same seconds ----
# On one core a tool's transactions/s is the inverse of the CPU time a transaction costs its
# client and server together: the core never idles. Run one after the other, the two tools also
# meet different host speeds (the probe's spread, up to 4x here), which no number of repetitions
# averages out quickly. Run at once, all four processes pinned to CPU 0, each pair gets half of
# the core in the same seconds, so the ratio of the two rates is the inverse ratio of the two
# tools' CPU cost per transaction whatever the host does meanwhile. Which client starts first
# alternates; each runs $dur s from its own start (linerate's handshake takes a few ms longer).
rr_at_once_samples=$tmp/rr_at_once.jsonl
rr_at_once_run() { # rr_at_once_run REP: both pairs at once in one namespace; appends a sample
  # Not "lr": that is the linerate binary.
  local rep=$1 lr_port np_port lr_s lr_c np_s np_c lr_pid np_pid a b rc=0 probe lr_fig np_fig
  rr_cmd_linerate tcp_rr; lr_port=$port lr_s=("${srv[@]}") lr_c=("${cmd[@]}")
  rr_cmd_netperf tcp_rr; np_port=$port np_s=("${srv[@]}") np_c=("${cmd[@]}")
  probe=$(rr_probe)
  start_server "$lr_port" "${ns_exec[@]}" taskset -c 0 "${lr_s[@]}" || return 1
  lr_pid=$srv_pid
  start_server "$np_port" "${ns_exec[@]}" taskset -c 0 "${np_s[@]}" || { stop "$lr_pid"; return 1; }
  np_pid=$srv_pid
  local t=(timeout -k 5 $((dur + 30)) "${ns_exec[@]}" taskset -c 0)
  if (( rep % 2 )); then
    "${t[@]}" "${lr_c[@]}" >"$tmp/once_lr.out" 2>"$tmp/once_lr.err" & a=$!
    "${t[@]}" "${np_c[@]}" >"$tmp/once_np.out" 2>&1 & b=$!
  else
    "${t[@]}" "${np_c[@]}" >"$tmp/once_np.out" 2>&1 & b=$!
    "${t[@]}" "${lr_c[@]}" >"$tmp/once_lr.out" 2>"$tmp/once_lr.err" & a=$!
  fi
  wait "$a" || rc=1
  wait "$b" || rc=1
  sleep 0.3
  stop "$lr_pid"; stop "$np_pid"
  cat "$tmp/once_lr.out" "$tmp/once_lr.err" >"$rr_raw/$rep-same-at_once-linerate.client"
  cp "$tmp/once_np.out" "$rr_raw/$rep-same-at_once-netperf.client"
  if (( rc )); then log "an at-once client failed (raw: $rr_raw/$rep-same-at_once-*)"; return 1; fi
  if ! lr_fig=$(rr_parse_linerate "$tmp/once_lr.out") \
    || ! np_fig=$(rr_parse_netperf "$tmp/once_np.out"); then
    log "could not parse an at-once run (raw: $rr_raw/$rep-same-at_once-*)"; return 1
  fi
  jq -cn --argjson rep "$rep" --argjson lr "${lr_fig%% *}" --argjson np "${np_fig%% *}" \
    --argjson probe "$probe" --arg first "$( ((rep % 2)) && echo linerate || echo netperf)" \
    '{rep: $rep, first: $first, linerate_tps: $lr, netperf_tps: $np, host_probe_s: $probe}' \
    >>"$rr_at_once_samples"
  jq -r '"  same (at once) tcp_rr: linerate \(.linerate_tps | round)/s, netperf \(.netperf_tps | round)/s, ratio \(.linerate_tps / .netperf_tps * 1000 | round / 1000), host probe \(.host_probe_s) s"' \
    <<<"$(tail -n 1 "$rr_at_once_samples")" >&2
}
rr_at_once_part() {
  log "same core, at once: linerate rr and netperf TCP_RR both on CPU 0, $reps × ${dur} s"
  local rep
  for (( rep = 1; rep <= reps; rep++ )); do
    if ! rr_in_own_ns rr_at_once_run "$rep"; then
      failures=$((failures + 1))
      jq -cn --argjson rep "$rep" '{rep: $rep, failed: true}' >>"$rr_at_once_samples"
    fi
    sleep 0.2
  done
}

rr_summary() { # the part's JSON (rows, targets, samples) on stdout; needs peers.sh's $jq_lib
  jq -s --argjson reps "$reps" --argjson dur "$dur" --argjson len "$rr_len" \
    --arg netperf "${netperf_bin:-}" --slurpfile once "$rr_at_once_samples" "$jq_lib"'
  def order: {"tcp_rr": 0, "udp_rr": 1, "tcp_crr": 2}[.kind] * 10
             + {"linerate": 0, "sockperf": 1, "qperf": 2, "netperf": 3, "iperf2": 4}[.tool];
  def pl: {"same": 0, "cross": 1}[.];
  . as $samples
  | [ group_by([(.placement | pl), order])[]
      | map(select(.failed | not)) as $ok
      | { placement: .[0].placement, client_cpu: ($ok[0].client_cpu), server_cpu: ($ok[0].server_cpu),
          kind: .[0].kind, tool: .[0].tool, runs: length, failed: (length - ($ok | length)),
          rtt_p50_us_median: ($ok | med(.rtt_p50_us)), rtt_p99_us_median: ($ok | med(.rtt_p99_us)),
          rtt_mean_us_median: ($ok | med(.rtt_mean_us)),
          rtt_p50_us_min: ($ok | map(.rtt_p50_us | select(. != null)) | min),
          transactions_per_s_median: ($ok | med(.transactions_per_s)),
          transactions_per_s_min: ($ok | map(.transactions_per_s) | min),
          transactions_per_s_max: ($ok | map(.transactions_per_s) | max),
          client_cpu_pct_median: ($ok | med(.client_cpu_pct)),
          server_cpu_pct_median: ($ok | med(.server_cpu_pct)) } ] as $rows
  | def row($p; $k; $t): $rows | map(select(.placement == $p and .kind == $k and .tool == $t))[0];
    # The median over repetitions of linerate figure / this tool figure, both from the same
    # repetition and placement.
    def paired(f): . as $r
      | [ $samples[] | select((.failed | not) and .placement == $r.placement and .kind == $r.kind
                              and .tool == $r.tool) as $s
          | $samples[] | select((.failed | not) and .placement == $s.placement and .kind == $s.kind
                                and .tool == "linerate" and .rep == $s.rep)
          | div(f; $s | f) | select(. != null) ];
    # A 95 % confidence interval for the median of paired ratios that assumes no distribution:
    # order statistics k and n+1-k, k the largest with P(Binomial(n, 1/2) < k) <= 0.025 (the sign
    # test). n = 20 gives the 6th and 15th. null below 6 pairs, where no such interval exists.
    def median_ci: sort | length as $n
      | [foreach range(0; $n) as $i ({p: pow(2; -$n), c: 0};
                                      .c += .p | .p = .p * ($n - $i) / ($i + 1); .c)] as $cdf
      | ([range(0; $n) | select($cdf[.] <= 0.025)] | length) as $k
      | if $k == 0 then null else [.[$k - 1], .[$n - $k]] end;
    ($rows | map(paired(.rtt_p50_us) as $p50 | paired(.transactions_per_s) as $tps
                 | . + { linerate_p50_ratio: div(row(.placement; .kind; "linerate").rtt_p50_us_median;
                                               .rtt_p50_us_median),
                       linerate_tps_ratio: div(row(.placement; .kind; "linerate").transactions_per_s_median;
                                               .transactions_per_s_median),
                       linerate_p50_ratio_paired: ($p50 | median),
                       linerate_tps_ratio_paired: ($tps | median),
                       linerate_p50_ratio_paired_ci95: ($p50 | median_ci),
                       linerate_tps_ratio_paired_ci95: ($tps | median_ci),
                       linerate_p50_ratio_best: div(row(.placement; .kind; "linerate").rtt_p50_us_min;
                                                    .rtt_p50_us_min),
                       linerate_tps_ratio_best: div(row(.placement; .kind; "linerate").transactions_per_s_max;
                                                    .transactions_per_s_max) })) as $rows
  | def row($p; $k; $t): $rows | map(select(.placement == $p and .kind == $k and .tool == $t))[0];
    def where($p): "\($p) core, client CPU \(row($p; "tcp_rr"; "linerate").client_cpu // "-"), server CPU \(row($p; "tcp_rr"; "linerate").server_cpu // "-")";
    def r3: if type == "number" then . * 1000 | round / 1000 else "-" end; # a ratio as printed
    # The interval in the note of a target, and whether it holds the threshold (the run cannot tell
    # linerate from the tool at that threshold).
    def ci_text($ci; $want): if $ci == null then "; too few pairs for a 95 % CI"
      else "; 95 % CI of that median \($ci[0] | r3)–\($ci[1] | r3)"
           + (if $ci[0] <= $want and $want <= $ci[1] then ", which holds \($want): within noise" else "" end) end;
    def with_ci($ci; $want): . + { ci95: $ci,
      within_noise: (if $ci == null then null else $ci[0] <= $want and $want <= $ci[1] end) };
    def absent($t): if $t == "netperf" and $netperf == "" then "not measured: netperf not found" else "not measured" end;
  { reps: $reps, seconds: $dur, message_bytes: $len, rows: $rows,
    # The probe of every completed run, in run order (a failed run records none).
    host_probe_s: ($samples | map(.host_probe_s | select(. != null))),
    host_probe_s_median: ($samples | med(.host_probe_s)),
    host_probe_spread: ($samples | map(.host_probe_s | select(. != null))
                        | if length > 0 and min > 0 then max / min else null end),
    targets: [
      (($rows | map(.placement) | unique | sort_by(pl)[]) as $p
      | (("tcp_rr", "udp_rr") as $k
         | row($p; $k; "sockperf") as $peer
         | target("\($k) p50 <= 1.05x sockperf (\($p) core)"; $peer.linerate_p50_ratio_paired; 1.05;
                  $peer.linerate_p50_ratio_paired <= 1.05;
                  if $peer == null then absent("sockperf") else "median of paired p50 ratios\(ci_text($peer.linerate_p50_ratio_paired_ci95; 1.05)), \(where($p)); medians \(row($p; $k; "linerate").rtt_p50_us_median // "-") vs \($peer.rtt_p50_us_median // "-") µs; best of reps \(row($p; $k; "linerate").rtt_p50_us_min // "-") vs \($peer.rtt_p50_us_min // "-") µs, ratio \($peer.linerate_p50_ratio_best | r3)" end)
           | with_ci($peer.linerate_p50_ratio_paired_ci95; 1.05)),
        (row($p; "tcp_rr"; "netperf") as $peer
         | target("tcp_rr transactions/s >= netperf TCP_RR (\($p) core)"; $peer.linerate_tps_ratio_paired; 1;
                  $peer.linerate_tps_ratio_paired >= 1;
                  if $peer == null then absent("netperf") else "median of paired transactions/s ratios\(ci_text($peer.linerate_tps_ratio_paired_ci95; 1)), \(where($p)); medians \(row($p; "tcp_rr"; "linerate").transactions_per_s_median | round) vs \($peer.transactions_per_s_median | round); best of reps ratio \($peer.linerate_tps_ratio_best | r3)" end)
           | with_ci($peer.linerate_tps_ratio_paired_ci95; 1)),
        (row($p; "tcp_crr"; "netperf") as $peer
         | target("crr connections/s >= netperf TCP_CRR (\($p) core)"; $peer.linerate_tps_ratio_paired; 1;
                  $peer.linerate_tps_ratio_paired >= 1;
                  if $peer == null then absent("netperf") else "median of paired connections/s ratios\(ci_text($peer.linerate_tps_ratio_paired_ci95; 1)), \(where($p)); medians \(row($p; "tcp_crr"; "linerate").transactions_per_s_median | round) vs \($peer.transactions_per_s_median | round); best of reps ratio \($peer.linerate_tps_ratio_best | r3)" end)
           | with_ci($peer.linerate_tps_ratio_paired_ci95; 1))),
      ($once | map(select(.failed | not)) | select(length > 0) as $ok
       | ($ok | map(.linerate_tps / .netperf_tps)) as $r | ($r | median) as $m | ($r | median_ci) as $ci
       | target("tcp_rr transactions/s >= netperf TCP_RR (same core, at once)"; $m; 1; $m >= 1;
                "median ratio of \($r | length) runs with both pairs on CPU 0 at the same time\(ci_text($ci; 1)); medians \($ok | med(.linerate_tps) | round) vs \($ok | med(.netperf_tps) | round) (half the core each): the inverse ratio of CPU time per transaction, at the same host speed")
       | with_ci($ci; 1))
    ],
    at_once: $once,
    samples: $samples }' "$rr_samples"
}

rr_print() { # the Markdown table and target lines from $out's .rr, on stdout and into $rr_md
  {
    echo "Request/response on 127.0.0.1, $rr_len-byte request and response, one transaction in flight;"
    echo "median of $reps × ${dur} s runs. Load average before the run: $load_start."
    echo
    echo "| placement | test | tool | runs | p50 µs | p99 µs | mean µs | trans/s | LR p50 × | LR trans/s × | client CPU % | server CPU % |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    jq -r '.rr.rows[] | [
        "\(.placement) core (client CPU \(.client_cpu // "-"), server CPU \(.server_cpu // "-"))",
        .kind, ({"iperf2": "iperf 2 bounceback", "netperf": "netperf \(.kind | ascii_upcase)",
                 "qperf": "qperf \(.kind | sub("_rr"; "_lat"))"}[.tool] // .tool),
        "\(.runs - .failed)/\(.runs)", .rtt_p50_us_median, .rtt_p99_us_median, .rtt_mean_us_median,
        .transactions_per_s_median, .linerate_p50_ratio_paired, .linerate_tps_ratio_paired,
        .client_cpu_pct_median, .server_cpu_pct_median] | map(. // "-" | tostring) | @tsv' "$out" \
    | awk -F'\t' '
        function f(x, p) { return x == "-" ? "-" : sprintf("%.*f", p, x) }
        { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4,
                 f($5, 1), f($6, 1), f($7, 1), f($8, 0), f($9, 2), f($10, 2), f($11, 0), f($12, 0) }'
    echo
    print_targets .rr.targets
    echo
    jq -r '.rr | "Host speed probe (a fixed awk loop on CPU 0 before each run, \(.host_probe_s | length) runs): fastest \(.host_probe_s | min) s, median \(.host_probe_s_median) s, slowest \(.host_probe_s | max) s; slowest/fastest \(.host_probe_spread // "-" | if type == "number" then . * 100 | round / 100 else . end)." + (if (.host_probe_spread // 1) > 1.2 then " Above 1.2: other guests slowed some runs (each sample in the JSON has its own host_probe_s); the best-of-repetitions ratios are then the steadier estimate." else "" end)' "$out"
    echo "Latency is the round trip in µs for every tool: sockperf $( ((${#sockperf_rtt[@]})) && echo "with --full-rtt" || echo "one-way ×2");"
    echo "qperf reports one-way latency (RTT/2), shown ×2, mean only; iperf 2 --bounceback gives the mean"
    echo "round trip only (its histogram has 100 µs bins); netperf whole µs. tcp_crr: connect + request +"
    echo "response + close, trans/s = connections/s. LR p50 × = linerate's p50 over the tool's (<1: linerate"
    echo "faster); LR trans/s × = linerate's transactions/s over the tool's (>1: linerate faster); both are"
    echo "medians of the ratios of runs paired by repetition (the JSON also has the ratio of the medians)."
    echo "A target's 95 % CI is that of the median paired ratio (sign test, at least 6 pairs); \"within"
    echo "noise\": the interval holds the threshold, so this run cannot tell linerate from the tool there."
    echo "\"At once\": linerate rr and netperf TCP_RR run together, all four processes on CPU 0, so the"
    echo "host's speed swings hit both alike; the ratio of their rates is that of their CPU cost per transaction."
    if (( rr_netns )); then
      echo "Each run had a network namespace of its own (no TIME_WAIT carried from one run to the next)."
    fi
    echo "CPU % of one core, measured outside each tool. '-': not given by the tool."
  } | tee "$rr_md"
  echo "rr table: $rr_md; raw outputs: $rr_raw/"
}
