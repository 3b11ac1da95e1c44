# Sourced, not run: pinned_venv, the one way this project makes a Python venv from exact pins
# (.ci/torch2.sh: torch 2.x; tests/media/make_moto_venv.sh: moto's S3 server).
#
#   pinned_venv NAME VENV REQUIREMENTS CONSTRAINTS [CHECK]
#
# - VENV is made by /usr/bin/python3 -m venv (no system site packages) if it has no python.
# - REQUIREMENTS (what is imported) and CONSTRAINTS (everything they pull in), newline-separated
#   "name==version" lines, are written into VENV and installed with --no-index from
#   $PIP_CACHE_DIR/wheelhouse; the wheels missing there are downloaded from PyPI first (files
#   already there are not downloaded again), so a machine that keeps build/ downloads them once.
# - Idempotent: a stamp (the pins' sha256) in VENV; when it matches and CHECK (a command run by
#   the venv's python -c, e.g. "import torch") succeeds, nothing runs at all.
# Returns 0 when the venv is ready, 2 when PyPI could not provide the wheels (the caller says
# what that means for it). Messages go to stderr, prefixed with NAME. Needs PIP_CACHE_DIR set.
pinned_venv() {
  local name=$1 venv=$2 requirements=$3 constraints=$4 check=${5:-pass}
  local wheelhouse=$PIP_CACHE_DIR/wheelhouse stamp=$2/.hdl-pins want
  want=$(printf '%s\n--\n%s\n' "$requirements" "$constraints" | sha256sum | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] &&
     "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "$name: $venv (cached)" >&2
    return 0
  fi
  local t0=$SECONDS
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  rm -f "$stamp"
  printf '%s\n' "$requirements" >"$venv/hdl-requirements.txt"
  printf '%s\n' "$constraints" >"$venv/hdl-constraints.txt"
  local pip=("$venv/bin/python" -m pip)
  local install=("${pip[@]}" install -q --no-index --find-links "$wheelhouse"
                 -r "$venv/hdl-requirements.txt" -c "$venv/hdl-constraints.txt")
  mkdir -p "$wheelhouse"
  if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "${install[@]}" 2>/dev/null; then
    echo "$name: downloading the pinned wheels missing from $wheelhouse" >&2
    PIP_DISABLE_PIP_VERSION_CHECK=1 "${pip[@]}" download -q --progress-bar off --retries 10 --timeout 60 \
      -d "$wheelhouse" -r "$venv/hdl-requirements.txt" -c "$venv/hdl-constraints.txt" >&2 || return 2
    PIP_DISABLE_PIP_VERSION_CHECK=1 "${install[@]}" >&2
  fi
  echo "$want" >"$stamp"
  echo "$name: $venv ready in $((SECONDS - t0)) s" >&2
}
