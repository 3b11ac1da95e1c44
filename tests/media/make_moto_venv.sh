#!/usr/bin/env bash
# Makes build/venv-moto: moto's S3 server (moto_server) for the object-store tests
# (tests/pipeline/readers/object_store_test.cc, via tests/media/object_store_servers.py, which
# runs this script when it finds no moto_server), by .ci/pinned_venv.sh, as .ci/torch2.sh makes
# its venv: exact pins, wheels kept in $PIP_CACHE_DIR/wheelhouse (default build/pip-cache) and
# installed from there with --no-index, a stamp so that a current venv costs nothing. moto[s3] + flask and
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
# shellcheck source=../../.ci/pinned_venv.sh
. "$ROOT/.ci/pinned_venv.sh"
status=0
pinned_venv make_moto_venv "$VENV" "$REQUIREMENTS" "$CONSTRAINTS" "import moto" || status=$?
if [ "$status" = 2 ]; then
  echo "make_moto_venv: the pinned wheels (about 30 MB) could not be downloaded from PyPI" >&2
  exit 1
fi
[ "$status" = 0 ] || exit "$status"
echo "$VENV/bin/moto_server"
