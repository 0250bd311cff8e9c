#!/usr/bin/env bash
# bench/peers.sh — linerate against its peers (iperf3, iperf 2, nuttcp, NetPIPE, sockperf, qperf,
# netperf) on loopback, and for TCP across a veth pair between two network namespaces too.
#
# Three parts, all by default: TCP throughput (1, 2 and 4 streams; on loopback and on the veth
# path), UDP packet rate and goodput (18- and 1472-byte payloads at max rate, on the same paths;
# bench/udp_peers.sh holds that part) and request/response latency (`rr`: TCP and UDP round trips and
# TCP connect/request/response/close with 64-byte messages, client and server pinned to the same
# core and to different cores; see bench/latency.sh, which holds that part). One run, tools interleaved within each repetition (and the order
# rotated per repetition) so that machine noise hits every tool alike. TCP: every tool runs with its
# own defaults (write size, buffers), plus "iperf3 -Z" (iperf3's sendfile mode) as a separate row
# for fairness to linerate's zero-copy send (splice).
#
# The reference peer is the NEWEST iperf3, built from source: with IPERF3_SRC=DIR (a checkout of
# esnet/iperf, 3.21 or later; bench/iperf3_src.sh builds it once into a cache outside the repo) the
# TCP part adds "iperf3-src", "iperf3-src -Z" and "iperf3-src -Z --skip-rx-copy" (a thread per
# stream since 3.16; --skip-rx-copy receives with MSG_TRUNC, so it is compared with linerate's
# --rx-mode trunc, "linerate trunc"), and the UDP part "iperf3-src" and "iperf3-src --gsro" (UDP
# GSO/GRO). Its version is printed with the results. Without IPERF3_SRC those rows are absent and
# their targets N/A.
#
# CPU is measured the same way for every tool, outside the tool: the client's user+sys time from
# /usr/bin/time, the server's from /proc/PID/stat (utime+stime+cutime+cstime) read after the server
# is listening and again after the client exits. CPU % is of one core over the test duration;
# "CPU s/GB" is both ends' CPU seconds per 10^9 bytes received (the CPU-per-byte figure). Tools'
# own CPU figures (linerate, iperf3, nuttcp) are kept in the JSON output as `self_*` for comparison.
#
# Throughput is receiver goodput: linerate .summary.throughput_bps, iperf3 .end.sum_received,
# iperf 2 the server's per-stream CSV reports summed, nuttcp its (receiver-side) rate_Mbps.
# NetPIPE is a ping-pong sweep over message sizes: one run, its peak reported, no CPU.
#
# UDP: the client sends as fast as it can, the server receives; CPU as for TCP (sender = client).
# linerate runs three ways: its default (UDP GSO + GRO, 64-datagram batches), --no-gro, and
# --no-gso --no-gro (plain sendmmsg/recvmmsg), to show what each kernel feature contributes.
# Sent packets are the sender's count, received the receiver's: linerate .summary; iperf3
# .end.sum_sent.packets and .end.sum_received (packets - lost_packets); iperf 2 the client's "Sent N
# datagrams" and the server's CSV (total - lost); nuttcp -fxmitstats tx_megabytes and pkt - drop;
# sockperf the client's "messages sent" and the server's "messages received" (printed on SIGINT).
# Loss % = (sent - received) / sent from those counts, the same formula for every tool. linerate's
# own accounting is checked in every run: packets_sent == packets_received + packets_lost.
#
# The closing PASS/FAIL lines are the project's targets. "1.2x a peer" is judged on the median of
# the per-repetition ratios linerate / peer (both ran in the same repetition, so they met the same
# noise), "every peer" against the one closest to linerate; the others on medians over reps.
# This is a benchmark, not a test: exit 0 whether targets pass or not; 2 if a tool failed to run.
#
# Usage: bench/peers.sh [--quick] [--only tcp|udp|rr] [--reps N] [--seconds S] [--out FILE]
#                       [--rr-tools LIST] [--streams LIST] [--paths LIST] [--congestion ALGO]
#                       [--tools REGEX] [--udp-sizes LIST] [--summarize FILE]
#        --quick: 3 reps of 3 s (TCP, rr) and 1 s (UDP) runs, a shorter NetPIPE sweep; --only: one
#        part (default all three); --seconds sets every part's run length; --rr-tools: the rr
#        part runs linerate and only these peers (comma-separated: sockperf,qperf,netperf,iperf2),
#        e.g. many repetitions of one comparison in the time all tools take for a few.
#        --tools: the TCP and UDP parts run only the tools whose row name matches this extended
#        regular expression (linerate's default row always runs: every ratio is over it), e.g.
#        --tools 'iperf3-src' for linerate against the newest iperf3 alone, more reps in less time.
#        --udp-sizes: the UDP payloads, bytes, comma-separated (default 18,1472).
#        --summarize FILE: run nothing; read an earlier run's results (its TCP and UDP samples)
#        and print its tables and targets again, as this version of the script judges them.
#        --streams: the TCP part's stream counts (comma-separated, default 1,2,4); --paths: where
#        the TCP part runs, `loopback`, `veth` (a veth pair between two network namespaces,
#        198.18.98.1 -> .2, root only) or both (the default as root; loopback otherwise).
#        --congestion: the TCP congestion control every tool's connections get, set as the host's
#        default (net.ipv4.tcp_congestion_control, and in the veth namespaces) for the run and
#        restored at its end (root only). Without it the host's default is used. Either way the
#        output names it (`tcp_congestion`): it moves every tool's figures. BBR paces each
#        connection in TCP itself (an hrtimer per burst) unless the qdisc is fq, and in a VM each
#        timer costs an exit: on this 2-core guest BBR took loopback -P 2 from 119 to 36 Gbit/s
#        for linerate and from 83 to 32 for iperf 2 (docs/METHODOLOGY.md section 10).
# Env:   REPS (5), SECONDS (5), OUT (bench/results/peers-<UTC time>.json), PORT_BASE (15300),
#        LINERATE (target/release/linerate), NP_UPPER (NetPIPE's largest message, 8388608 bytes),
#        NP_TIMEOUT (150 s for the NetPIPE sweep, about 45 s on a 2-core VM; --quick: about 15 s),
#        NETPERF_DIR (a directory with netperf and netserver, for rr when they are not on PATH),
#        IPERF3_SRC (a checkout of esnet/iperf: the newest iperf3's rows, see above),
#        LINERATE_BENCH_CACHE (where it is built, ~/.cache/linerate-bench).
set -euo pipefail

# bash's SECONDS counts up from its imported value, so read it before anything takes time.
dur=$SECONDS
(( dur > 0 )) || dur=5
udp_dur=
parts="tcp udp rr"
reps=${REPS:-5}
out=${OUT:-}
np_upper=${NP_UPPER:-8388608}
np_timeout=${NP_TIMEOUT:-150}
np_extra=()
port_base=${PORT_BASE:-15300}
rr_tools=sockperf,qperf,netperf,iperf2
tcp_streams="1 2 4"
paths="loopback veth"
(( EUID == 0 )) || paths=loopback
congestion= # empty: the host's default
tool_filter= # empty: every tool
summarize=   # --summarize FILE: judge an earlier run's samples again
udp_sizes=(18 1472)

usage() { sed -n '/^# Usage:/,/^# *NP_TIMEOUT/s/^# \{0,1\}//p' "$0"; }
while (( $# )); do
  case $1 in
    --quick) reps=3 dur=3 udp_dur=1 np_extra=(-p 0) ;; # NetPIPE without its ±3-byte perturbations: 3× faster
    --only) case ${2:-} in tcp|udp|rr) parts=$2 ;;
              *) echo "peers.sh: --only needs 'tcp', 'udp' or 'rr' (got '${2:-}')" >&2; exit 2 ;; esac
      shift ;;
    --reps) reps=${2:?--reps needs a number}; shift ;;
    --seconds|-t) dur=${2:?--seconds needs a number} udp_dur=$dur; shift ;;
    --out) out=${2:?--out needs a file}; shift ;;
    --rr-tools) rr_tools=${2:?--rr-tools needs a list}; shift
      [[ $rr_tools =~ ^(sockperf|qperf|netperf|iperf2)(,(sockperf|qperf|netperf|iperf2))*$ ]] \
        || { echo "peers.sh: --rr-tools takes sockperf, qperf, netperf, iperf2, comma-separated (got '$rr_tools')" >&2; exit 2; } ;;
    --streams) [[ ${2:-} =~ ^[1-9][0-9]?(,[1-9][0-9]?)*$ ]] \
        || { echo "peers.sh: --streams takes stream counts 1-99, comma-separated (got '${2:-}')" >&2; exit 2; }
      tcp_streams=${2//,/ }; shift ;;
    --paths) [[ ${2:-} =~ ^(loopback|veth)(,(loopback|veth))*$ ]] \
        || { echo "peers.sh: --paths takes loopback, veth or both, comma-separated (got '${2:-}')" >&2; exit 2; }
      paths=${2//,/ }; shift ;;
    --congestion) congestion=${2:?--congestion needs an algorithm, e.g. cubic or bbr}; shift
      grep -qw -- "$congestion" /proc/sys/net/ipv4/tcp_available_congestion_control \
        || { echo "peers.sh: --congestion $congestion is not available here; available: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control) (modprobe tcp_$congestion adds one)" >&2; exit 2; }
      (( EUID == 0 )) || { echo "peers.sh: --congestion sets the host's default: run as root" >&2; exit 2; } ;;
    --summarize) summarize=${2:?--summarize needs an earlier results file}; shift
      [[ -r $summarize ]] || { echo "peers.sh: --summarize $summarize: no such file" >&2; exit 2; } ;;
    --tools) tool_filter=${2:?--tools needs a regular expression}; shift ;;
    --udp-sizes) [[ ${2:-} =~ ^[0-9]+(,[0-9]+)*$ ]] \
        || { echo "peers.sh: --udp-sizes takes payload sizes in bytes, comma-separated (got '${2:-}')" >&2; exit 2; }
      IFS=, read -ra udp_sizes <<<"$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "peers.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
udp_dur=${udp_dur:-$dur}
[[ $reps =~ ^[1-9][0-9]*$ && $dur =~ ^[1-9][0-9]*$ ]] \
  || { echo "peers.sh: REPS and SECONDS must be positive integers (got $reps, $dur)" >&2; exit 2; }
want() { [[ " $parts " == *" $1 "* ]]; } # want tcp|udp|rr: is that part selected?
keep_tool() { [[ $1 == linerate || -z $tool_filter || $1 =~ $tool_filter ]]; } # --tools

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lr=${LINERATE:-$root/target/release/linerate}
out=${out:-$root/bench/results/peers-$(date -u +%Y%m%dT%H%M%SZ).json}
log() { printf '%s\n' "$*" >&2; }

# ---- prerequisites: Debian packages for missing peers, a release build of linerate ----
declare -A pkg_of=([iperf3]=iperf3 [iperf]=iperf [nuttcp]=nuttcp [jq]=jq
                   [/usr/bin/time]=time [ss]=iproute2 [timeout]=coreutils [taskset]=util-linux)
want tcp && pkg_of[NPtcp]=netpipe-tcp
want udp && pkg_of[sockperf]=sockperf
if want rr; then # netperf is not in Debian's main archive: used when present (bench/latency.sh)
  pkg_of[sockperf]=sockperf pkg_of[qperf]=qperf pkg_of[taskset]=util-linux
fi
need=()
for cmd in "${!pkg_of[@]}"; do command -v "$cmd" >/dev/null || need+=("${pkg_of[$cmd]}"); done
if (( ${#need[@]} )); then
  sudo=(); (( EUID == 0 )) || sudo=(sudo)
  log "installing: ${need[*]}"
  "${sudo[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y "${need[@]}"
fi
# Always build (incremental: a no-op when up to date), so a stale binary is never measured;
# unless LINERATE names a binary of the caller's choosing.
if [[ -z ${LINERATE:-} ]]; then
  log "building linerate (cargo build --release)"
  (cd "$root" && cargo build --release --quiet)
fi

# The newest iperf3, from source (IPERF3_SRC): built once into a cache outside the repository.
# shellcheck source=bench/iperf3_src.sh
source "$root/bench/iperf3_src.sh"
i3src=
if [[ -n ${IPERF3_SRC:-} ]] && { want tcp || want udp; }; then
  i3src=$(iperf3_src_build "$IPERF3_SRC") || exit 2
  log "newest iperf3: $("$i3src" --version | head -n 1) ($i3src)"
elif want tcp || want udp; then
  log "IPERF3_SRC not set: no rows for the newest iperf3 (Debian's $(iperf3 --version | head -n 1 | cut -d' ' -f2) only)"
fi

# ---- process handling: every server is tracked and killed on exit ----
tmp=$(mktemp -d)
servers=()
stop() { # stop PID [SIGNAL]: SIGNAL (TERM), up to 3 s, then KILL; reap it
  local pid=$1 i
  kill -"${2:-TERM}" "$pid" 2>/dev/null || true
  for (( i = 0; i < 30; i++ )); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local rest=() p
  for p in "${servers[@]}"; do [[ $p == "$pid" ]] || rest+=("$p"); done
  servers=("${rest[@]}")
}
cleanup() {
  local pid
  for pid in "${servers[@]}"; do stop "$pid"; done
  # A run's network namespace (bench/latency.sh), should the script end in the middle of one.
  if declare -F rr_ns_down >/dev/null; then rr_ns_down; fi
  if declare -F veth_down >/dev/null; then veth_down; fi
  # The host's own congestion control back, if --congestion changed it.
  if [[ -n ${congestion_before:-} ]]; then
    sysctl -qw net.ipv4.tcp_congestion_control="$congestion_before" || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc_sysctl=/proc/sys/net/ipv4/tcp_congestion_control
if [[ -n $congestion ]]; then
  congestion_before=$(<"$cc_sysctl")
  sysctl -qw net.ipv4.tcp_congestion_control="$congestion"
fi
tcp_congestion=$(<"$cc_sysctl") # what every tool's TCP connections get: named in the output
log "TCP congestion control: $tcp_congestion ($([[ -n $congestion ]] && echo "--congestion" || echo "the host's default"))"

# Other work on the machine skews every figure: say so (the load average goes into the JSON too).
read -r load_start _ </proc/loadavg
awk -v l="$load_start" 'BEGIN { exit !(l >= 0.5) }' \
  && log "warning: load average $load_start before the run: other work is running; figures will be noisy"

hz=$(getconf CLK_TCK)
proc_cpu_s() { # user+sys seconds of a live process, its threads and reaped children
  local f; f=$(sed 's/.*) //' "/proc/$1/stat")
  awk -v hz="$hz" '{ printf "%.3f", ($12 + $13 + $14 + $15) / hz }' <<<"$f"
}

srv_pid=
ns_exec=() # `ip netns exec NS` while a part runs its tools in a namespace of their own; empty: the host's
start_server() { # start_server PORT CMD...: start it, wait (≤ 5 s) until it listens on PORT (TCP or UDP)
  local port=$1 i; shift
  "$@" >"$tmp/server.out" 2>&1 &
  srv_pid=$!
  servers+=("$srv_pid")
  for (( i = 0; i < 50; i++ )); do
    kill -0 "$srv_pid" 2>/dev/null || { log "server exited: $*"; cat "$tmp/server.out" >&2; return 1; }
    [[ -n $("${ns_exec[@]}" ss -Hltun "sport = :$port") ]] && return 0
    sleep 0.1
  done
  log "server not listening on $port after 5 s: $*"; return 1
}

srv_cpu_s= # timed_client's result
# timed_client PORT SIGNAL SECONDS: start the server "${srv[@]}" (in ns_exec) on PORT, run the client
# "${cmd[@]}" (in cli_exec) under /usr/bin/time ($tmp/time; output in $tmp/client.out and .err) with a
# timeout SECONDS + 30, then stop the server with SIGNAL; srv_cpu_s is the server's CPU seconds in
# between. Returns 1, saying why, when the server or the client failed.
timed_client() {
  local port=$1 sig=$2 secs=$3 cpu0 cpu1
  start_server "$port" "${ns_exec[@]}" "${srv[@]}" || return 1
  cpu0=$(proc_cpu_s "$srv_pid")
  if ! timeout -k 5 $((secs + 30)) /usr/bin/time -f '%e %U %S' -o "$tmp/time" \
      "${cli_exec[@]}" "${cmd[@]}" >"$tmp/client.out" 2>"$tmp/client.err"; then
    log "client failed: ${cmd[*]}"; cat "$tmp/client.out" "$tmp/client.err" >&2
    stop "$srv_pid"; return 1
  fi
  sleep 0.3 # let the server see the end (EOF, or its socket drained) and write its report
  cpu1=$(proc_cpu_s "$srv_pid")
  stop "$srv_pid" "$sig"
  srv_cpu_s=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{print b-a}')
}

# The request/response part (and rr_probe, the host-speed probe every part records).
# shellcheck source=bench/latency.sh
source "$root/bench/latency.sh"
# The UDP part.
# shellcheck source=bench/udp_peers.sh
source "$root/bench/udp_peers.sh"

# ---- one measurement ----
p_lr=$((port_base + 1)) p_i3=$((port_base + 2)) p_i2=$((port_base + 3))
p_nc=$((port_base + 4)) p_nd=$((port_base + 5)) p_np=$((port_base + 10)) # nuttcp -N 2: p_nd, p_nd+1
p_sp=$((port_base + 7))
tools=(linerate "linerate write")
"$lr" tcp --help | grep -q -- '--rx-mode' && tools+=("linerate trunc")
tools+=(iperf3 "iperf3 -Z")
[[ -n $i3src ]] && tools+=(iperf3-src "iperf3-src -Z" "iperf3-src -Z --skip-rx-copy")
tools+=(iperf2 nuttcp)
kept=()
for t in "${tools[@]}"; do keep_tool "$t" && kept+=("$t"); done
tools=("${kept[@]}")
dst=127.0.0.1 path=loopback # where the TCP part's clients send; veth_up/veth_down change both
cli_exec=()                 # `ip netns exec NS` for the clients on the veth path
samples=$tmp/samples.jsonl
: >"$samples"
failures=0

# parse_TOOL CLIENT_OUT: print "bytes_received self_sender_cpu_pct self_receiver_cpu_pct" (null if none)
parse_linerate() {
  jq -er '.summary | [.bytes_received, .local_cpu_pct, .remote_cpu_pct] | map(tostring) | join(" ")' "$1"
}
parse_iperf3() {
  jq -er '[.end.sum_received.bytes, .end.cpu_utilization_percent.host_total,
           .end.cpu_utilization_percent.remote_total] | map(tostring) | join(" ")' "$1"
}
parse_iperf2() { # the server's CSV: one line per stream, bytes in field 8
  awk -F, 'NF >= 9 { b += $8; n++ } END { if (!n) exit 1; printf "%.0f null null\n", b }' "$tmp/server.out"
}
parse_nuttcp() { # megabytes are 2^20 bytes
  awk '/megabytes=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         printf "%.0f %s %s\n", v["megabytes"] * 1048576, v["tx_cpu"], v["rx_cpu"]; ok = 1 }
       END { exit !ok }' "$1"
}

run_one() { # run_one TOOL STREAMS REP PROBE: one client run against a fresh server; appends a sample
  local tool=$1 n=$2 rep=$3 probe=$4 parse port cmd srv parsed bytes self_snd self_rcv wall usr sys
  case $tool in
    linerate*) port=$p_lr parse=parse_linerate
      srv=("$lr" serve -B "$dst" -p "$port")
      cmd=("$lr" tcp "$dst" -p "$port" -t "$dur" -P "$n" -i 0 --json --no-store)
      [[ $tool == "linerate write" ]] && cmd+=(--send-mode write)
      [[ $tool == "linerate trunc" ]] && cmd+=(--rx-mode trunc) ;;
    iperf3*) port=$p_i3 parse=parse_iperf3
      local bin=iperf3 flags=${tool#iperf3} extra
      [[ $tool == iperf3-src* ]] && bin=$i3src flags=${tool#iperf3-src}
      read -ra extra <<<"$flags" # -Z, --skip-rx-copy
      srv=("$bin" -s -B "$dst" -p "$port")
      cmd=("$bin" -c "$dst" -p "$port" -t "$dur" -P "$n" --json "${extra[@]}") ;;
    iperf2) port=$p_i2 parse=parse_iperf2
      srv=(iperf -s -B "$dst" -p "$port" -y C)
      cmd=(iperf -c "$dst" -p "$port" -t "$dur" -P "$n") ;;
    nuttcp) port=$p_nc parse=parse_nuttcp
      srv=(nuttcp -S --nofork -P "$port")
      cmd=(nuttcp -T "$dur" -P "$port" -p "$p_nd" -fparse)
      (( n > 1 )) && cmd+=(-N "$n")
      cmd+=("$dst") ;;
  esac
  timed_client "$port" TERM "$dur" || return 1
  if ! parsed=$("$parse" "$tmp/client.out"); then
    log "could not parse $tool output"; cat "$tmp/client.out" >&2; return 1
  fi
  read -r bytes self_snd self_rcv <<<"$parsed"
  read -r wall usr sys < <(tail -n 1 "$tmp/time")
  jq -cn --arg tool "$tool" --argjson streams "$n" --argjson rep "$rep" --argjson dur "$dur" \
    --arg path "$path" --argjson probe "$probe" \
    --argjson bytes "$bytes" --argjson snd_s "$(awk -v u="$usr" -v s="$sys" 'BEGIN{print u+s}')" \
    --argjson rcv_s "$srv_cpu_s" --argjson wall "$wall" \
    --argjson self_snd "$self_snd" --argjson self_rcv "$self_rcv" '
    { tool: $tool, path: $path, streams: $streams, rep: $rep, host_probe_s: $probe,
      bytes_received: $bytes,
      throughput_gbps: ($bytes * 8 / $dur / 1e9),
      sender_cpu_s: $snd_s, receiver_cpu_s: $rcv_s, client_wall_s: $wall,
      sender_cpu_pct: ($snd_s / $dur * 100), receiver_cpu_pct: ($rcv_s / $dur * 100),
      cpu_s_per_gb: (if $bytes > 0 then ($snd_s + $rcv_s) / ($bytes / 1e9) else null end),
      self_sender_cpu_pct: $self_snd, self_receiver_cpu_pct: $self_rcv }' >>"$samples"
  jq -r '"  \(.path) \(.tool) -P \(.streams): \(.throughput_gbps * 100 | round / 100) Gbit/s, CPU \(.sender_cpu_pct | round)% / \(.receiver_cpu_pct | round)%"' \
    <<<"$(tail -n 1 "$samples")" >&2
}

# ---- TCP: throughput at each stream count, on each path, then NetPIPE ----
# The veth path: two namespaces joined by a veth pair, servers in lrpeerB$$ (198.18.98.2), clients
# in lrpeerA$$ (198.18.98.1): a real device with GSO/GRO and a 1500-byte MTU, unlike loopback.
veth_up() {
  local a=lrpeerA$$ b=lrpeerB$$
  veth_down
  ip netns add "$a" && ip netns add "$b" \
    && ip -n "$a" link add lrp0 type veth peer name lrp1 netns "$b" \
    && ip -n "$a" addr add 198.18.98.1/30 dev lrp0 && ip -n "$b" addr add 198.18.98.2/30 dev lrp1 \
    && ip -n "$a" link set lo up && ip -n "$b" link set lo up \
    && ip -n "$a" link set lrp0 up && ip -n "$b" link set lrp1 up \
    && ip netns exec "$a" sysctl -qw net.ipv4.tcp_congestion_control="$tcp_congestion" \
    && ip netns exec "$b" sysctl -qw net.ipv4.tcp_congestion_control="$tcp_congestion" || return 1
  cli_exec=(ip netns exec "$a") ns_exec=(ip netns exec "$b") dst=198.18.98.2 path=veth
}
veth_down() {
  cli_exec=() ns_exec=() dst=127.0.0.1 path=loopback
  ip netns del "lrpeerA$$" 2>/dev/null || true
  ip netns del "lrpeerB$$" 2>/dev/null || true
}
if want tcp && [[ -z $summarize ]]; then
  for p in $paths; do
    log "linerate vs peers on $p: $reps reps × ${dur} s × ${#tools[@]} tools × streams ($tcp_streams)"
    if [[ $p == veth ]] && ! veth_up; then
      log "could not make the veth namespaces: skipping the veth path"; veth_down; continue
    fi
    for (( rep = 1; rep <= reps; rep++ )); do
      probe=$(rr_probe)
      log "rep $rep/$reps (host probe ${probe} s)"
      for n in $tcp_streams; do
        for (( k = 0; k < ${#tools[@]}; k++ )); do
          tool=${tools[(k + rep - 1) % ${#tools[@]}]} # rotate the order so no tool always goes first
          if ! run_one "$tool" "$n" "$rep" "$probe"; then
            failures=$((failures + 1))
            jq -cn --arg tool "$tool" --arg path "$path" --argjson n "$n" --argjson rep "$rep" \
              '{tool: $tool, path: $path, streams: $n, rep: $rep, failed: true}' >>"$samples"
          fi
          sleep 0.5
        done
      done
    done
    veth_down
  done

  # ---- NetPIPE: one ping-pong sweep, its peak ----
  log "NetPIPE sweep up to $np_upper bytes (one run)"
  srv_pid=
  # Both ends need the same sweep options (-u, -p), or they fall out of step and hang.
  np_args=(-P "$p_np" -u "$np_upper" "${np_extra[@]}")
  if start_server "$p_np" NPtcp "${np_args[@]}" \
     && timeout -k 5 "$np_timeout" NPtcp -h 127.0.0.1 "${np_args[@]}" -o "$tmp/np.out" \
          >"$tmp/np.log" 2>&1 \
     && peak=$(awk '$2 > m { m = $2; s = $1 } END { if (!m) exit 1; print m, s }' "$tmp/np.out"); then
    stop "$srv_pid"
    read -r mbps size <<<"$peak"
    jq -cn --argjson mbps "$mbps" --argjson size "$size" \
      '{tool: "NetPIPE", path: "loopback", streams: 1, rep: 1, throughput_gbps: ($mbps / 1000), peak_message_bytes: $size}' \
      >>"$samples"
    log "  NetPIPE peak: $(awk -v m="$mbps" 'BEGIN{printf "%.2f", m/1000}') Gbit/s at $size-byte messages"
  else
    [[ -n $srv_pid ]] && stop "$srv_pid"
    log "NetPIPE failed"; cat "$tmp/np.log" >&2 2>/dev/null || true
    failures=$((failures + 1))
    jq -cn '{tool: "NetPIPE", path: "loopback", streams: 1, rep: 1, failed: true}' >>"$samples"
  fi
fi

# ---- UDP: datagrams per second at max rate, client sending, server receiving ----
want udp && [[ -z $summarize ]] && udp_part

# ---- request/response: round-trip latency, transactions/s, connections/s ----
want rr && [[ -z $summarize ]] && rr_part

# ---- --summarize FILE: an earlier run's samples, judged again (nothing runs) ----
if [[ -n $summarize ]]; then
  jq -c '.samples[]?' "$summarize" >"$samples"
  jq -c '.udp.samples[]?' "$summarize" >"$udp_samples"
  reps=$(jq '.reps // .udp.reps' "$summarize") dur=$(jq '.seconds // 0' "$summarize")
  udp_dur=$(jq '.udp.seconds // 0' "$summarize") tcp_congestion=$(jq -r .tcp_congestion "$summarize")
  mapfile -t tools < <(jq -r '.samples // [] | map(.tool | select(. != "NetPIPE")) | unique[]' "$summarize")
  mapfile -t udp_tools < <(jq -r '.udp.samples // [] | map(.tool) | unique[]' "$summarize")
  mapfile -t udp_sizes < <(jq -r '.udp.payload_bytes // [] | .[]' "$summarize")
  parts=$(jq -r '[if .rows then "tcp" else empty end, if .udp then "udp" else empty end] | join(" ")' "$summarize")
fi

# ---- summary: medians, ratios, targets; JSON to $out, tables to stdout ----
mkdir -p "$(dirname "$out")"
# Results are per machine and per run: keep them out of git (also out of a `git add -A`).
[[ $out != "$root/bench/results/"* || -e $root/bench/results/.gitignore ]] \
  || printf '# written by bench/peers.sh: results are not committed\n*\n' >"$root/bench/results/.gitignore"
pkg_version() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo unknown; }
versions=$(jq -n --arg lr "$("$lr" --version)" --arg i3 "$(iperf3 --version | head -n 1)" \
  --arg i2 "$(iperf -v 2>&1 | head -n 1)" --arg nc "$(nuttcp -V 2>&1 | head -n 1)" \
  --arg np "$(pkg_version netpipe-tcp)" --arg sp "$(pkg_version sockperf)" \
  --arg qp "$(pkg_version qperf)" \
  --arg i3s "$([[ -n $i3src ]] && "$i3src" --version | head -n 1 || echo "not built (IPERF3_SRC)")" \
  --arg rev "$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)" \
  --arg ne "$([[ -n ${netperf_bin:-} ]] && "$netperf_bin" -V 2>&1 | head -n 1 || echo "not found")" \
  '{linerate: $lr, iperf3: $i3, iperf2: $i2, nuttcp: $nc, netpipe_tcp: $np, sockperf: $sp,
    qperf: $qp, netperf: $ne, iperf3_src: $i3s, linerate_source: $rev}')
[[ -n $summarize ]] && versions=$(jq -c .versions "$summarize")
# Shared by both parts' summaries.
jq_lib='
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def med(f): map(f | select(. != null)) | median;
  def div(a; b): if a == null or b == null or b == 0 then null else a / b end;
  def mul(a; k): if a == null then null else a * k end;
  def target(name; have; want; pass; note):
    { target: name, linerate: have, threshold: want, pass: (if have == null or want == null
                                                              then null else pass end), note: note };'
: >"$tmp/tcp.json"
want tcp && jq -s --argjson reps "$reps" --argjson dur "$dur" \
  --argjson tools "$(printf '%s\n' "${tools[@]}" NetPIPE | jq -R . | jq -sc .)" "$jq_lib"'
  def order: . as $t | $tools | index($t);
  def r2: if . == null then null else . * 100 | round / 100 end;
  . as $samples
  | [ group_by([(.path // "loopback"), .streams, (.tool | order)])[]
      | map(select(.failed | not)) as $ok
      | { tool: .[0].tool, path: (.[0].path // "loopback"), streams: .[0].streams, runs: length,
          failed: (length - ($ok | length)),
          throughput_gbps_median: ($ok | med(.throughput_gbps)),
          throughput_gbps_min: ($ok | map(.throughput_gbps) | min),
          throughput_gbps_max: ($ok | map(.throughput_gbps) | max),
          sender_cpu_pct_median: ($ok | med(.sender_cpu_pct)),
          receiver_cpu_pct_median: ($ok | med(.receiver_cpu_pct)),
          cpu_s_per_gb_median: ($ok | med(.cpu_s_per_gb)),
          self_sender_cpu_pct_median: ($ok | med(.self_sender_cpu_pct)),
          self_receiver_cpu_pct_median: ($ok | med(.self_receiver_cpu_pct)) } ] as $rows
  # Paired ratios: linerate over the tool in the same repetition (run minutes apart at most),
  # their median; noise that hits a whole repetition cancels.
  | def paired($p; $n; $t): [ $samples | map(select((.path // "loopback") == $p and .streams == $n
                                                 and (.failed | not)))
                           | group_by(.rep)[]
                           | (map(select(.tool == "linerate"))[0].throughput_gbps) as $l
                           | (map(select(.tool == $t))[0].throughput_gbps) as $o
                           | select($l != null and $o != null and $o > 0) | $l / $o ] | median;
    # The same over the best of several tools in each repetition ($mine over max($theirs)).
    def paired_best($p; $n; $mine; $theirs): [ $samples
        | map(select((.path // "loopback") == $p and .streams == $n and (.failed | not)))
        | group_by(.rep)[]
        | (map(select(.tool == $mine))[0].throughput_gbps) as $l
        | (map(select(.tool as $t | $theirs | index($t)) | .throughput_gbps) | max) as $o
        | select($l != null and $o != null and $o > 0) | $l / $o ] | median;
    def lr($p; $n): $rows | map(select(.tool == "linerate" and .path == $p and .streams == $n))[0];
    def row($t; $p; $n): $rows | map(select(.tool == $t and .path == $p and .streams == $n))[0];
    ($rows | map(. + { linerate_throughput_ratio:
                         div(lr(.path; .streams).throughput_gbps_median; .throughput_gbps_median),
                       linerate_paired_ratio:
                         (if .tool == "linerate" or .tool == "NetPIPE" then null
                          else paired(.path; .streams; .tool) end),
                       linerate_cpu_per_byte_ratio:
                         div(lr(.path; .streams).cpu_s_per_gb_median; .cpu_s_per_gb_median) })) as $rows
  # Bound again: a def sees the bindings before it, and these now carry the ratios.
  | def lr($p; $n): $rows | map(select(.tool == "linerate" and .path == $p and .streams == $n))[0];
    def row($t; $p; $n): $rows | map(select(.tool == $t and .path == $p and .streams == $n))[0];
    # The peers the linerate default (a copying receiver) is judged against: not the modes that
    # discard in the kernel (--skip-rx-copy), which are judged against linerate trunc.
    def peers($p; $n): $rows | map(select(.path == $p and .streams == $n
                                        and (.tool | startswith("linerate") | not)
                                        and (.tool | contains("skip-rx-copy") | not)
                                        and .tool != "NetPIPE"));
    # linerate over a peer as the issue judges it: the median of the per-repetition ratios
    # (alternating runs, so both see the same noise), else the ratio of the medians.
    def ratio_to($p; $n; $t): peers($p; $n) | map(select(.tool == $t))[0] as $r
      | select($r != null)
      | (if $r.linerate_paired_ratio != null
         then $r + { ratio: $r.linerate_paired_ratio,
                     how: "median of \($reps) paired ratios (linerate / \($t), same repetition)" }
         else $r + { ratio: $r.linerate_throughput_ratio, how: "ratio of the medians" } end)
      | select(.ratio != null);
    def cheapest_peer($p; $n): peers($p; $n) | map(select(.cpu_s_per_gb_median != null))
                             | min_by(.cpu_s_per_gb_median);
    ($samples | map(.path // "loopback") | unique) as $paths
  | ($samples | map(select(.tool != "NetPIPE") | .streams) | unique) as $counts
  | { reps: $reps, seconds: $dur, paths: $paths, streams: $counts,
    host_probe_s: ($samples | map(.host_probe_s | select(. != null)) | unique
                   | { min: min, median: median, max: max }),
    rows: $rows,
    targets: [
      ( if row("iperf3"; "loopback"; 1) then
        target("loopback: single stream >= 2x iperf3"; lr("loopback"; 1).throughput_gbps_median;
             mul(row("iperf3"; "loopback"; 1).throughput_gbps_median; 2);
             lr("loopback"; 1).throughput_gbps_median
               >= 2 * row("iperf3"; "loopback"; 1).throughput_gbps_median;
             "Gbit/s; NetPIPE peak \(row("NetPIPE"; "loopback"; 1).throughput_gbps_median | r2 // "-")")
        else empty end ),
      ( ratio_to("loopback"; 2; "iperf2") as $i | select($i != null)
        | target("loopback: -P 2 >= 1.2x iperf2"; $i.ratio | r2; 1.2; $i.ratio >= 1.2;
                 "\($i.how); medians \(lr("loopback"; 2).throughput_gbps_median | r2) against \($i.throughput_gbps_median | r2) Gbit/s") ),
      ( if lr("loopback"; 1) and lr("loopback"; 2) then
        target("loopback: -P 2 >= linerate -P 1"; lr("loopback"; 2).throughput_gbps_median;
             lr("loopback"; 1).throughput_gbps_median;
             lr("loopback"; 2).throughput_gbps_median >= lr("loopback"; 1).throughput_gbps_median;
             "Gbit/s, medians")
        else empty end ),
      ( $counts[] as $n
        | (peers("veth"; $n) | map(ratio_to("veth"; $n; .tool)) | map(select(. != null))
           | min_by(.ratio)) as $b
        | select($b != null)
        | target("veth: -P \($n) >= 1.2x every peer"; $b.ratio | r2; 1.2; $b.ratio >= 1.2;
                 "\($b.how), closest peer \($b.tool); medians \(lr("veth"; $n).throughput_gbps_median | r2) against \($b.throughput_gbps_median | r2) Gbit/s") ),
      # Against the newest iperf3 (IPERF3_SRC), issue 34: one stream over its best copying mode,
      # -P N over its -Z -P N, trunc over its --skip-rx-copy, every one paired.
      ( $paths[] as $p | select(row("iperf3-src"; $p; 1) and lr($p; 1))
        | paired_best($p; 1; "linerate"; ["iperf3-src", "iperf3-src -Z"]) as $r | select($r != null)
        | target("\($p): one stream >= 1.2x iperf3-src best copying mode (plain or -Z)"; $r | r2; 1.2;
                 $r >= 1.2; "median of paired ratios over the better of the two in each repetition") ),
      ( $paths[] as $p | $counts[] as $n | select($n > 1) | row("iperf3-src -Z"; $p; $n) as $i
        | select($i != null and $i.linerate_paired_ratio != null)
        | target("\($p): -P \($n) >= 1.2x iperf3-src -Z -P \($n)"; $i.linerate_paired_ratio | r2; 1.2;
                 $i.linerate_paired_ratio >= 1.2;
                 "median of paired ratios; medians \(lr($p; $n).throughput_gbps_median | r2) against \($i.throughput_gbps_median | r2) Gbit/s") ),
      ( $paths[] as $p | $counts[] as $n | select(row("iperf3-src -Z --skip-rx-copy"; $p; $n)
                                                   and row("linerate trunc"; $p; $n))
        | paired_best($p; $n; "linerate trunc"; ["iperf3-src -Z --skip-rx-copy"]) as $r
        | select($r != null)
        | target("\($p): -P \($n) --rx-mode trunc >= 1.2x iperf3-src -Z --skip-rx-copy"; $r | r2; 1.2;
                 $r >= 1.2; "median of paired ratios, both discarding in the kernel") ),
      ( $paths[] as $p | $counts[] as $n
        | (row("iperf3-src -Z"; $p; $n) // row("iperf3-src"; $p; $n)) as $i
        | select($i != null and $i.throughput_gbps_min != null and $i.throughput_gbps_min > 0
                 and lr($p; $n).throughput_gbps_min > 0)
        | target("\($p): -P \($n) spread (max/min) <= that of \($i.tool)";
                 div(lr($p; $n).throughput_gbps_max; lr($p; $n).throughput_gbps_min);
                 div($i.throughput_gbps_max; $i.throughput_gbps_min);
                 div(lr($p; $n).throughput_gbps_max; lr($p; $n).throughput_gbps_min)
                   <= div($i.throughput_gbps_max; $i.throughput_gbps_min);
                 "max/min over reps") ),
      ( $paths[] as $p | $counts[] as $n | row("iperf3-src -Z --skip-rx-copy"; $p; $n) as $i
        | row("linerate trunc"; $p; $n) as $t | select($i != null and $t != null)
        | target("\($p): -P \($n) --rx-mode trunc CPU s/GB <= iperf3-src -Z --skip-rx-copy";
                 $t.cpu_s_per_gb_median; $i.cpu_s_per_gb_median;
                 $t.cpu_s_per_gb_median <= $i.cpu_s_per_gb_median; "both discarding, medians") ),
      ( $paths[] as $p | $counts[] as $n | cheapest_peer($p; $n) as $b | select($b != null)
        | target("\($p): CPU s/GB <= the cheapest peer (-P \($n))"; lr($p; $n).cpu_s_per_gb_median;
                 $b.cpu_s_per_gb_median; lr($p; $n).cpu_s_per_gb_median <= $b.cpu_s_per_gb_median;
                 "cheapest peer: \($b.tool)") ),
      ( $paths[] as $p | $counts[] as $n | select($n > 1) | row("iperf2"; $p; $n) as $i
        | select($i != null and $i.throughput_gbps_min != null)
        | target("\($p): -P \($n) spread (max/min) <= that of iperf2";
                 div(lr($p; $n).throughput_gbps_max; lr($p; $n).throughput_gbps_min);
                 div($i.throughput_gbps_max; $i.throughput_gbps_min);
                 div(lr($p; $n).throughput_gbps_max; lr($p; $n).throughput_gbps_min)
                   <= div($i.throughput_gbps_max; $i.throughput_gbps_min);
                 "max/min over reps") )
    ],
    samples: $samples }' "$samples" >"$tmp/tcp.json"
: >"$tmp/udp.json"
want udp && udp_summary >"$tmp/udp.json"
: >"$tmp/rr.json"
want rr && rr_summary >"$tmp/rr.json"
jq -n --argjson versions "$versions" --arg date "$(date -u +%FT%TZ)" --arg kernel "$(uname -r)" \
  --argjson cores "$(nproc)" --arg parts "$parts" --argjson load "$load_start" \
  --arg cc "$tcp_congestion" \
  --slurpfile tcp "$tmp/tcp.json" --slurpfile udp "$tmp/udp.json" --slurpfile rr "$tmp/rr.json" '
  { date: $date, kernel: $kernel, cores: $cores, parts: ($parts | split(" ")), versions: $versions,
    loadavg_1min_at_start: $load, tcp_congestion: $cc }
  + ($tcp[0] // {}) + (if $udp[0] then { udp: $udp[0] } else {} end)
  + (if $rr[0] then { rr: $rr[0] } else {} end)' >"$out"

print_targets() { # print_targets JQ_PATH: one PASS/FAIL/N/A line per target
  jq -r "$1"'[] | "\(if .pass == null then "N/A " elif .pass then "PASS" else "FAIL" end)  \(.target): linerate \(.linerate // "-" | if type == "number" then (. * 1000 | round / 1000) else . end) vs \(.threshold // "-" | if type == "number" then (. * 1000 | round / 1000) else . end) (\(.note))"' "$out"
}
# The tables: stdout.
if want tcp; then
  printf '%-8s %-28s %-5s %4s %8s %8s %8s %7s %7s %8s %8s %8s %8s\n' \
    path tool case runs 'Gbit/s' min max 'snd%' 'rcv%' 'CPUs/GB' 'LR×thr' 'LR×pair' 'LR×CPU/B'
  jq -r '.rows[] | [.path, .tool, (if .tool == "NetPIPE" then "peak" elif .streams == 1 then "1"
                            else "-P \(.streams)" end), "\(.runs - .failed)/\(.runs)",
    .throughput_gbps_median, .throughput_gbps_min, .throughput_gbps_max, .sender_cpu_pct_median,
    .receiver_cpu_pct_median, .cpu_s_per_gb_median, .linerate_throughput_ratio,
    .linerate_paired_ratio, .linerate_cpu_per_byte_ratio] | map(. // "-" | tostring) | @tsv' "$out" \
  | awk -F'\t' '
      function f(x, p) { return x == "-" ? "-" : sprintf("%.*f", p, x) }
      { printf "%-8s %-28s %-5s %4s %8s %8s %8s %7s %7s %8s %8s %8s %8s\n", $1, $2, $3, $4, f($5, 2),
               f($6, 2), f($7, 2), f($8, 0), f($9, 0), f($10, 3), f($11, 2), f($12, 2), f($13, 2) }'
  echo
  print_targets .targets
  echo
  echo "CPU: % of one core, measured outside each tool (client: /usr/bin/time, server: /proc/PID/stat);"
  echo "CPU s/GB = both ends' CPU seconds per 10^9 bytes received. LR×thr = linerate's median over the"
  echo "tool's (>1: linerate faster); LR×pair = the median of linerate/tool within each repetition;"
  echo "LR×CPU/B = linerate's CPU s/GB over the tool's (<1: linerate cheaper). 'linerate write' is linerate"
  echo "with --send-mode write (a copy from user memory, as the peers send) beside its default auto;"
  echo "'linerate trunc' receives with --rx-mode trunc (discarded in the kernel, as iperf3 --skip-rx-copy)."
  echo "iperf3-src: the newest iperf3, built from IPERF3_SRC: $(jq -r .versions.iperf3_src "$out")"
  jq -r '"host probe (a fixed CPU loop before each repetition): \(.host_probe_s.min)-\(.host_probe_s.max) s, median \(.host_probe_s.median) s"' "$out"
  jq -r '"TCP congestion control: \(.tcp_congestion) for every tool (bench/peers.sh --congestion sets it)"' "$out"
  echo
fi
want udp && { udp_print; echo; }
want rr && { rr_print; echo; }
echo "results: $out"

if (( failures )); then log "peers.sh: $failures run(s) failed"; exit 2; fi
