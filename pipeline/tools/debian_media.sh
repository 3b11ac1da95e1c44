# debian_media.sh -- shell helpers, sourced (not run), shared by the two scripts that make data
# from real media shipped in Debian 12 (bookworm) packages:
#   pipeline/tools/prepare_sample_data.sh   the sample ImageFolder of the README's main job
#   tests/corpus/make_corpus.sh      the test corpus (edge-case files, ImageNet-like set, video)
# Packages are only downloaded (apt-get download) and unpacked (dpkg-deb), never installed.
#
# The caller sets, before sourcing:
#   DM_NAME      its name, for log lines and errors
#   DM_CACHE     the cache folder: .debs go to DM_CACHE/debs, unpacked members to
#                DM_CACHE/root/<package>/ (the package's paths, e.g. usr/share/...)
#   KEEP_DEBS    0: delete a .deb once unpacked (default 1)
#   INSTALL_DEPS 1 (default): when root, dm_install installs missing tools with apt-get
# and gets: dm_log, dm_die, dm_install, dm_apt_ready, dm_fetch, dm_copyright.
# Everything runs under `set -euo pipefail`, with LC_ALL=C.

DM_T0=${DM_T0:-$(date +%s)}
KEEP_DEBS=${KEEP_DEBS:-1}
INSTALL_DEPS=${INSTALL_DEPS:-1}

dm_log() { printf '[%s %4ds] %s\n' "$DM_NAME" $(( $(date +%s) - DM_T0 )) "$*" >&2; }
dm_die() { printf '%s: error: %s\n' "$DM_NAME" "$*" >&2; exit 1; }

# dm_install PACKAGE...: installs the Debian packages named (tools the caller found missing).
# As root with INSTALL_DEPS=1 it runs apt-get install (after apt-get update if that fails);
# otherwise it stops with a message naming the packages.
dm_install() {
  [ $# -gt 0 ] || return 0
  if [ "$INSTALL_DEPS" = 1 ] && [ "$(id -u)" = 0 ]; then
    dm_log "installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null; } \
      || dm_die "could not install $*"
  else
    dm_die "missing: $* (sudo apt-get install $*)"
  fi
}

# dm_apt_ready PACKAGE: makes sure apt knows PACKAGE (runs apt-get update when root, else stops
# with advice), so that the downloads below can work.
dm_apt_ready() {
  command -v apt-get >/dev/null || dm_die "apt-get not found (this script targets Debian 12 'bookworm')"
  command -v dpkg-deb >/dev/null || dm_die "dpkg-deb not found"
  apt-cache show "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ]; then
    dm_log "apt package lists look empty: running apt-get update"
    apt-get update -q >/dev/null || dm_die "apt-get update failed"
  else
    dm_die "apt-cache does not know $1: run 'sudo apt-get update' first"
  fi
}

# dm_fetch PACKAGE VERSION MEMBER...: the pinned PACKAGE=VERSION (the current candidate, with a
# warning, if the archive no longer has it) downloaded into DM_CACHE/debs, and the MEMBERs (tar
# patterns such as ./usr/share/foo/*.jpg) plus ./usr/share/doc/*/copyright unpacked into
# DM_CACHE/root/PACKAGE. A rerun reuses both, and unpacks again only when the .deb or the member
# list changed. A member the package lacks is not an error here (the callers report missing
# files). Sets DM_VERSION (the version used) and DM_DEB (the .deb's file name).
dm_fetch() {
  local pkg=$1 ver=$2; shift 2
  local dir=$DM_CACHE/root/$pkg members deb apt_opts=(-q) aptlog
  members=$(printf '%s\n' "$@" ./usr/share/doc/\*/copyright)
  [ "$(id -u)" = 0 ] && apt_opts+=(-o APT::Sandbox::User=root)   # _apt may not write to DM_CACHE
  mkdir -p "$DM_CACHE/debs" "$DM_CACHE/root"
  deb=$(ls "$DM_CACHE/debs/${pkg}_"*.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ] && [ -f "$dir/.deb" ] && [ "$(cat "$dir/.members" 2>/dev/null || true)" = "$members" ]; then
    DM_DEB=$(cat "$dir/.deb"); DM_VERSION=$(cat "$dir/.version")   # unpacked earlier, .deb deleted
    return 0
  fi
  if [ -z "$deb" ]; then
    aptlog=$(mktemp)
    if ! ( cd "$DM_CACHE/debs" && apt-get "${apt_opts[@]}" download "$pkg=$ver" ) >"$aptlog" 2>&1; then
      dm_log "WARNING: $pkg=$ver is no longer in the archive; using the current candidate (output bytes may differ)"
      ( cd "$DM_CACHE/debs" && apt-get "${apt_opts[@]}" download "$pkg" ) >"$aptlog" 2>&1 \
        || { cat "$aptlog" >&2; rm -f "$aptlog"; dm_die "apt-get download $pkg failed"; }
    fi
    rm -f "$aptlog"
    deb=$(ls "$DM_CACHE/debs/${pkg}_"*.deb | head -1)
    dm_log "  downloaded $(basename "$deb") ($(( $(stat -c %s "$deb") / 1000000 )) MB)"
  fi
  DM_DEB=$(basename "$deb")
  DM_VERSION=$(dpkg-deb -f "$deb" Version)
  if [ "$(cat "$dir/.deb" 2>/dev/null || true)" != "$DM_DEB" ] \
     || [ "$(cat "$dir/.members" 2>/dev/null || true)" != "$members" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    # word splitting off: each member is one pattern; tar expands the wildcards itself
    local -a list; mapfile -t list <<< "$members"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" --wildcards "${list[@]}" 2>/dev/null || true
    echo "$DM_DEB" > "$dir/.deb"
    echo "$DM_VERSION" > "$dir/.version"
    printf '%s\n' "$members" > "$dir/.members"
  fi
  [ "$KEEP_DEBS" = 1 ] || rm -f "$deb"
}

# dm_copyright PACKAGE: prints the path of PACKAGE's unpacked copyright file ("" if none).
dm_copyright() {
  local f
  f="$DM_CACHE/root/$1/usr/share/doc/$1/copyright"
  [ -f "$f" ] || f=$(ls "$DM_CACHE/root/$1"/usr/share/doc/*/copyright 2>/dev/null | head -1 || true)
  printf '%s' "$f"
}
