#!/usr/bin/env bash
# The closing lines of scripts/test.sh, from cargo test's output (LOG) and the skip log (SKIPS,
# `test-name: reason` per line, written by tests/skip.rs): the skipped tests with their reasons,
# then `tests: N passed, N failed, N skipped` alone on the last line.
#
# A test that skipped itself at run time returned early, so libtest counted it as passed: each
# one moves from passed to skipped here. `#[ignore]`d tests are skipped too, listed with the
# reason libtest printed. A line repeated in the skip log counts once.
set -euo pipefail
export LC_ALL=C
log=$1
skips=$2
[ -e "$skips" ] || skips=/dev/null
# Self-skipped tests first, then the ignored ones from libtest's `test NAME ... ignored[, why]`.
{
  sort -u "$skips"
  sed -n 's/^test \(.*\) \.\.\. ignored, \(.*\)$/\1: \2 (ignored)/p; s/^test \(.*\) \.\.\. ignored$/\1: (ignored)/p' "$log"
} | sed 's/^/skipped: /'
# cargo ends every test binary with `test result: ok. P passed; F failed; I ignored; ...`.
awk -v k="$(sort -u "$skips" | wc -l)" '
  /^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) s += $i } }
  END { printf "tests: %d passed, %d failed, %d skipped\n", p - k, f, s + k }' "$log"
