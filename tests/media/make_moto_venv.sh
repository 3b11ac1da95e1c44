#!/usr/bin/env bash
# Makes build/venv-moto: moto's S3 server (moto_server) for the object-store tests
# (tests/pipeline/readers/object_store_test.cc, via tests/media/object_store_servers.py, which
# runs this script when it finds no moto_server). The torch2 venv's mechanism (.ci/torch2.sh):
# exact pins, wheels kept in $PIP_CACHE_DIR/wheelhouse (default build/pip-cache) and installed
# from there with --no-index, a stamp so that a current venv costs nothing. moto[s3] + flask and
# flask-cors (what moto_server needs for S3; moto[server] would add every service's packages).
#   bash tests/media/make_moto_venv.sh        prints the moto_server path; exit 1 without PyPI
# HDL_MOTO_VENV overrides the venv's path.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
VENV=${HDL_MOTO_VENV:-$ROOT/build/venv-moto}
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$ROOT/build/pip-cache}
export PIP_DISABLE_PIP_VERSION_CHECK=1
WHEELHOUSE=$PIP_CACHE_DIR/wheelhouse
unset PYTHONHOME
REQUIREMENTS="moto[s3]==5.2.1
flask==3.1.3
flask-cors==6.0.2"
CONSTRAINTS="blinker==1.9.0
boto3==1.44.8
botocore==1.44.8
certifi==2026.10.19.post1
cffi==2.1.1
charset-normalizer==3.5.3
click==8.5.1
cryptography==50.0.2
idna==3.20
itsdangerous==2.2.0
jinja2==3.1.6
jmespath==1.1.0
markupsafe==3.0.4
py-partiql-parser==0.6.3
pycparser==3.12
python-dateutil==2.9.0.post0
pyyaml==6.0.4
requests==2.34.2
responses==0.26.3
s3transfer==0.19.3
six==1.17.0
urllib3==2.8.0
werkzeug==3.1.9
xmltodict==1.0.4"
STAMP=$VENV/.hdl-moto-pins
WANT=$(printf '%s\n--\n%s\n' "$REQUIREMENTS" "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)
if [ -x "$VENV/bin/moto_server" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ]; then
  echo "$VENV/bin/moto_server"
  exit 0
fi
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
rm -f "$STAMP"
printf '%s\n' "$REQUIREMENTS" >"$VENV/hdl-requirements.txt"
printf '%s\n' "$CONSTRAINTS" >"$VENV/hdl-constraints.txt"
pip=("$VENV/bin/python" -m pip)
install=("${pip[@]}" install -q --no-index --find-links "$WHEELHOUSE" -r "$VENV/hdl-requirements.txt"
         -c "$VENV/hdl-constraints.txt")
mkdir -p "$WHEELHOUSE"
if ! "${install[@]}" 2>/dev/null; then
  echo "make_moto_venv: downloading the pinned wheels missing from $WHEELHOUSE (about 30 MB)" >&2
  "${pip[@]}" download -q --progress-bar off --retries 3 --timeout 30 -d "$WHEELHOUSE" \
    -r "$VENV/hdl-requirements.txt" -c "$VENV/hdl-constraints.txt" >&2 ||
    { echo "make_moto_venv: the pinned wheels could not be downloaded from PyPI" >&2; exit 1; }
  "${install[@]}" >&2
fi
echo "$WANT" >"$STAMP"
echo "$VENV/bin/moto_server"
