#!/usr/bin/env bash
# Installs, on Debian/Ubuntu, the system programs pixelrl's real backends and tests drive:
# Xvfb and xdotool (X11 desktop), Chromium and its driver (MiniWoB++), Tk (test apps), x11-apps
# (xedit, xcalc: real applications of the X11 tasks), xterm (the terminal of the OSWorld-schema
# tasks) and bubblewrap (the sandbox every task command runs in).
# Does nothing when they are all present; uses sudo when not root; elsewhere says what to install.
set -euo pipefail

missing=()
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
command -v xdotool >/dev/null 2>&1 || missing+=(xdotool)
command -v xwininfo >/dev/null 2>&1 || missing+=(x11-utils)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v wish >/dev/null 2>&1 || missing+=(tk)
command -v xedit >/dev/null 2>&1 || missing+=(x11-apps)  # xedit and xcalc for the X11 tasks
[ -d /usr/share/fonts/X11/misc ] || missing+=(xfonts-base)   # core X fonts for xedit/xcalc
command -v xterm >/dev/null 2>&1 || missing+=(xterm)          # the terminal of the OSWorld-schema tasks
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)     # the sandbox of task commands
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "pixelrl: please install these system packages yourself: ${missing[*]}" >&2
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# Another apt or dpkg (unattended-upgrades after boot, a second terminal) may hold the package
# locks. apt-get fails at once then (DPkg::Lock::Timeout would cover only dpkg's lock, not the
# package lists' of apt-get update, and wait without a word), so each apt-get here is retried
# while its failure is a lock, with a message, for at most PIXELRL_APT_LOCK_WAIT seconds (600).
LOCK_WAIT=${PIXELRL_APT_LOCK_WAIT:-600}
LOCK_POLL=${PIXELRL_APT_LOCK_POLL:-10}
apt_get() {
  local start=$SECONDS err rc
  err=$(mktemp)
  while :; do
    rc=0
    $SUDO env LC_ALL=C DEBIAN_FRONTEND=noninteractive \
      apt-get "$@" 2>"$err" || rc=$?
    if [ "$rc" -eq 0 ] || ! grep -qE 'Could not get lock|Unable to (lock|acquire)' "$err"; then
      cat "$err" >&2
      rm -f "$err"
      return "$rc"
    fi
    if [ $((SECONDS - start)) -ge "$LOCK_WAIT" ]; then
      cat "$err" >&2
      echo "pixelrl: another apt/dpkg process still holds the package lock after ${LOCK_WAIT}s;" \
        "let it finish, then run 'make setup' again" >&2
      rm -f "$err"
      return "$rc"
    fi
    echo "pixelrl: waiting for another apt/dpkg process to release the package lock" \
      "($((SECONDS - start))s of at most ${LOCK_WAIT}s): $(grep -m1 -E 'lock' "$err")" >&2
    sleep "$LOCK_POLL"
  done
}

echo "pixelrl: installing system packages: ${missing[*]}"
apt_get update -qq
# With recommends, as the tests were run: fonts and helpers the browser and X apps expect.
apt_get install -y -qq "${missing[@]}" xauth >/dev/null
