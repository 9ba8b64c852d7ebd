#!/usr/bin/env bash
# Install Debian's chromium for the report test (tests/report/test_report_chromium.py), which opens the HTML
# report in headless Chromium. Idempotent and quiet: does nothing when a Chromium is already on PATH, prints
# only the browser's version, and shows apt's log only when the install fails.
set -euo pipefail

for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then
        exit 0
    fi
done

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get on this machine; install Chromium by hand" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium; } >"$log" 2>&1; then
    echo "install-chromium: apt-get install chromium failed:" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
# the Debian wrapper script prints a harmless shell warning on some machines; keep only the version line
chromium --version 2>/dev/null | grep -i chromium || true
