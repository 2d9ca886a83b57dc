#!/usr/bin/env bash
# Installs, on Debian/Ubuntu, the system programs pixelrl's real backends and tests drive:
# Xvfb and xdotool (X11 desktop), Chromium and its driver (MiniWoB++), Tk (test apps), x11-apps
# (xedit, xcalc: real applications of the X11 tasks).
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
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "pixelrl: please install these system packages yourself: ${missing[*]}" >&2
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "pixelrl: installing system packages: ${missing[*]}"
$SUDO apt-get update -qq
# With recommends, as the tests were run: fonts and helpers the browser and X apps expect.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" xauth >/dev/null
