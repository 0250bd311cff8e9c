#!/usr/bin/env bash
# bench/iperf3_src.sh — the newest iperf3, built from its source for the benchmarks
# (sourced by bench/peers.sh and bench/ab.sh; also runnable: `bench/iperf3_src.sh DIR` prints the
# binary's path).
#
# Debian ships iperf3 3.12 (2022); the reference peer is the current release (3.21 or later: a
# thread per stream, -Z, --skip-rx-copy, --gsro). IPERF3_SRC names a checkout of esnet/iperf (a
# `fetch` brings one; `git worktree add` or `git --work-tree=DIR checkout HEAD -- .` turns the
# mirror into a directory of sources). It is configured and built outside the repository, into
# ${LINERATE_BENCH_CACHE:-$HOME/.cache/linerate-bench}/iperf3-<source id>, once per source: a
# second run reuses the binary. The source directory is never written to (out-of-tree build).
#
# iperf3_src_build DIR: build (or reuse) and print the binary's path; messages go to stderr.
iperf3_src_build() {
  local src=$1 cache id dir
  [[ -x $src/configure ]] || { echo "IPERF3_SRC=$src: no configure script there (want a checkout of esnet/iperf)" >&2; return 1; }
  cache=${LINERATE_BENCH_CACHE:-$HOME/.cache/linerate-bench}
  # The source's identity: its commit when it is a git checkout, else a hash of its version and sources.
  id=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null) \
    || id=$(cat "$src/configure.ac" "$src"/src/*.c 2>/dev/null | sha256sum | cut -c1-12)
  dir=$cache/iperf3-$id
  if [[ ! -x $dir/bin/iperf3 ]]; then
    echo "building iperf3 from $src into $dir (once; about a minute)" >&2
    rm -rf "$dir.build" && mkdir -p "$dir.build" || return 1
    if ! (cd "$dir.build" && "$src/configure" --disable-shared --prefix="$dir" \
            && make -j"$(nproc)" && make install) >"$dir.build.log" 2>&1; then
      echo "iperf3 build failed: see $dir.build.log" >&2; return 1
    fi
    rm -rf "$dir.build"
  fi
  # A release that predates the modes the benchmarks compare against is refused, naming them.
  if ! "$dir/bin/iperf3" --help 2>&1 | grep -q -- '--gsro'; then
    echo "IPERF3_SRC=$src builds $("$dir/bin/iperf3" --version | head -n 1): older than 3.21 (no --gsro)" >&2
    return 1
  fi
  printf '%s\n' "$dir/bin/iperf3"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  iperf3_src_build "${1:?usage: bench/iperf3_src.sh DIR (a checkout of esnet/iperf)}"
fi
