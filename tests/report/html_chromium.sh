#!/bin/sh
# report.html in a real browser (Debian's chromium, headless): the page loads
# with no script error or console error, its table sorts and filters (the
# page's #selftest hook), and a screenshot lands in the build directory.
# usage: html_chromium.sh MAKE_REPORT SCREENSHOT_PATH. Exit 77 (skip) without chromium.
set -u
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "chromium not installed: skipped"; exit 77; }
make_report=$1
shot=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/mpprof-chromium-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$make_report" "$work/out" >/dev/null || { echo "make_report failed"; exit 1; }
page="file://$work/out/report.html"
browse() { # extra args...
  timeout 180 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@"
}
browse --window-size=1280,2400 --screenshot="$shot" "$page" 2>"$work/shot.log" >/dev/null
browse --dump-dom "$page#selftest" >"$work/dom.html" 2>"$work/dom.log"
rc=0
if ! [ -s "$shot" ]; then echo "no screenshot written"; rc=1; fi
if ! grep -q 'data-js="ok"' "$work/dom.html"; then echo "the page script did not finish"; rc=1; fi
if grep -q 'data-js-error="' "$work/dom.html"; then
  echo "script error: $(grep -o 'data-js-error="[^"]*"' "$work/dom.html")"; rc=1
fi
if ! grep -q 'data-selftest="ok"' "$work/dom.html"; then
  echo "table self-test: $(grep -o 'data-selftest="[^"]*"' "$work/dom.html")"; rc=1
fi
if grep -h 'CONSOLE' "$work/shot.log" "$work/dom.log" | grep -Eiq 'error|uncaught|refused'; then
  echo "console errors:"; grep -h 'CONSOLE' "$work/shot.log" "$work/dom.log"; rc=1
fi
[ $rc = 0 ] && echo "chromium: page loaded cleanly, table sorts and filters; screenshot $shot"
exit $rc
