# Sourced by .ci/run and .ci/lint: `phase NAME CMD…` runs CMD and then prints its time on stderr
# (`ci: clippy 212 s`), so a slow phase is seen where it happens.
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "ci: $name $((SECONDS - start)) s" >&2
}
