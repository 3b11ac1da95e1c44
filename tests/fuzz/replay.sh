#!/usr/bin/env bash
# CTest's fuzz_replay_<target>: runs a replay build of TARGET (or the libFuzzer build, with
# -runs=0) over the committed inputs and, when the corpus exists, a handful of corpus seeds.
#   replay.sh BINARY TARGET CORPUS_DIR INPUT...     ($HDL_CORPUS_DIR, when set, overrides CORPUS_DIR)
# Exit 77 (skipped) when there is nothing to replay: no inputs and no corpus.
set -euo pipefail
bin=$1 target=$2 corpus=${HDL_CORPUS_DIR:-$3}
shift 3
inputs=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -f "$corpus/SHA256SUMS" ] || [ -d "$corpus/tests" ]; then
  PY=python3
  [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
  "$PY" "$(dirname "$0")/seeds.py" "$target" "$corpus" "$tmp/seeds" --limit 12
  inputs+=("$tmp/seeds")
else
  echo "replay.sh: no corpus at $corpus: regression inputs only" >&2
fi
existing=()
for i in "${inputs[@]}"; do [ -e "$i" ] && existing+=("$i"); done
if [ ${#existing[@]} -eq 0 ]; then   # CTest reads 77 as skipped (SKIP_RETURN_CODE)
  echo "replay.sh: SKIP: nothing to replay for $target (no regressions, no committed seeds, no corpus)" >&2
  exit 77
fi
if "$bin" -help=1 2>&1 | grep -q "libFuzzer"; then
  exec "$bin" -runs=0 "${existing[@]}"
fi
exec "$bin" "${existing[@]}"
