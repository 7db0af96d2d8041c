#!/usr/bin/env bash
# Sets up a software Vulkan driver (Mesa's lavapipe) that Dawn accepts, for running the WebGPU
# backend and test/gpu on machines without a GPU. Debian bookworm's own lavapipe (Mesa 22.3) lacks
# shaderUniform*ArrayDynamicIndexing, so Dawn finds no adapter on it; the Mesa 25 build from
# bookworm-backports works. This script fetches only that package's driver through a private apt
# configuration (the system's sources and installed Mesa are left alone), unpacks it into
# .cache/lavapipe/ and writes an ICD file pointing at it. The stock libvulkan1 (the loader) and
# mesa-vulkan-drivers (which pulls in the shared libraries the driver links against) are installed
# from the system's sources when missing.
#
# Idempotent. Prints the line to eval, e.g.  eval "$(bash scripts/setup-lavapipe.sh)"
#   export VK_ICD_FILENAMES=/path/to/kiln/.cache/lavapipe/lvp_icd.json
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
DIR="$ROOT/.cache/lavapipe"
ICD="$DIR/lvp_icd.json"
SUITE="${KILN_LAVAPIPE_SUITE:-bookworm-backports}"
# The Debian mirror this system already uses (its first bookworm source), so no host is named here.
system_mirror() {
  { grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$3 ~ /^bookworm/ {print $2; exit}';
    awk '/^URIs:/ {uri=$2} /^Suites:/ && / bookworm( |$)/ {print uri; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null; } | head -n 1
}
MIRROR="${KILN_LAVAPIPE_MIRROR:-$(system_mirror)}"
ARCH="$(dpkg --print-architecture)"
[ -n "$MIRROR" ] || { echo "setup-lavapipe: no Debian bookworm source in /etc/apt; set KILN_LAVAPIPE_MIRROR" >&2; exit 1; }

log() { echo "setup-lavapipe: $*" >&2; }

sudo_if_needed() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# The loader and the stock driver's dependencies.
missing=()
for pkg in libvulkan1 mesa-vulkan-drivers; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} from the system's sources"
  sudo_if_needed apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

LIB="$(find "$DIR/root" -name libvulkan_lvp.so -print -quit 2>/dev/null || true)"
if [ -z "$LIB" ]; then
  log "fetching mesa-vulkan-drivers from $SUITE into $DIR"
  APT="$DIR/apt"
  mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/etc/preferences.d" "$APT/etc/sources.list.d" "$DIR/download"
  cat >"$APT/etc/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main
EOF
  : >"$APT/status"
  # A private apt: its own sources, lists, cache and an empty dpkg status, so nothing of the
  # system's apt state is read or changed.
  apt_private=(
    -o "Dir::Etc::SourceList=$APT/etc/sources.list"
    -o "Dir::Etc::SourceParts=$APT/etc/sources.list.d"
    -o "Dir::Etc::Preferences=$APT/etc/preferences"
    -o "Dir::Etc::PreferencesParts=$APT/etc/preferences.d"
    -o "Dir::State::Lists=$APT/lists"
    -o "Dir::State::status=$APT/status"
    -o "Dir::Cache=$APT/cache"
    -o "APT::Architecture=$ARCH"
    -o "Debug::NoLocking=1"
  )
  # apt drops to the _apt user to download, which cannot write into a root-owned project folder.
  [ "$(id -u)" = 0 ] && apt_private+=(-o "APT::Sandbox::User=root")
  apt-get "${apt_private[@]}" update -qq
  (cd "$DIR/download" && rm -f ./*.deb && apt-get "${apt_private[@]}" download "mesa-vulkan-drivers/$SUITE")
  DEB="$(ls "$DIR/download"/mesa-vulkan-drivers_*.deb | head -n 1)"
  rm -rf "$DIR/root"
  dpkg-deb -x "$DEB" "$DIR/root"
  LIB="$(find "$DIR/root" -name libvulkan_lvp.so -print -quit)"
  [ -n "$LIB" ] || { log "no libvulkan_lvp.so in $DEB"; exit 1; }
fi

# Libraries the backported driver needs that the stock system lacks cannot be papered over here:
# say which, rather than letting Dawn find no adapter without a reason.
missing_libs="$(ldd "$LIB" | grep 'not found' || true)"
if [ -n "$missing_libs" ]; then
  log "$LIB needs libraries this system lacks:"
  echo "$missing_libs" >&2
  exit 1
fi

cat >"$ICD" <<EOF
{
  "file_format_version": "1.0.0",
  "ICD": { "library_path": "$LIB", "api_version": "1.3.0" }
}
EOF
log "lavapipe ready: $LIB"
echo "export VK_ICD_FILENAMES=$ICD"
