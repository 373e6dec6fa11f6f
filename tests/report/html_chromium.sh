#!/bin/sh
# report.html in a real browser (Debian's chromium, headless): the page loads
# with no script error or console error, its tables sort and filter, every
# in-page link has a target and the page is no wider than the window at 900
# and 1600 px (the page's #selftest hook); the ops table says TF32 for the TF32
# site, findings link to their ops rows, charts have axis titles; screenshots
# at both widths land in the build directory (SCREENSHOT_PATH, and -900/-1600).
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
rc=0
for w in 900 1600; do
  browse --window-size=$w,2400 --screenshot="${shot%.png}-$w.png" "$page" 2>>"$work/shot.log" >/dev/null
  [ -s "${shot%.png}-$w.png" ] || { echo "no screenshot at $w px"; rc=1; }
  browse --window-size=$w,2400 --dump-dom "$page#selftest" >"$work/dom-$w.html" 2>>"$work/dom.log"
  if ! grep -q 'data-selftest="ok"' "$work/dom-$w.html"; then
    echo "self-test at $w px: $(grep -o 'data-selftest="[^"]*"' "$work/dom-$w.html")"; rc=1
  fi
done
browse --dump-dom "$page#selftest" >"$work/dom.html" 2>"$work/dom.log"
if ! [ -s "$shot" ]; then echo "no screenshot written"; rc=1; fi
# The TF32 site's row in the ops table says TF32 in its Compute cell.
if ! grep -o '<tr id="op-[0-9]*"[^>]*>.*</tr>' "$work/dom.html" | grep 'fc4' | grep -q '<td><b>TF32</b>'; then
  echo "the ops table does not say TF32 for the TF32 site"; rc=1
fi
# Some finding links to an ops row.
if ! grep -q '<li class="finding">.*href="#op-[0-9]' "$work/dom.html"; then
  echo "no finding links to an ops row"; rc=1
fi
# Each chart has both axis titles.
nimg=$(grep -o '<img[^>]*exponent histogram' "$work/dom.html" | wc -l)
nx=$(grep -o 'class="xtitle"' "$work/dom.html" | wc -l)
ny=$(grep -o 'class="ytitle"' "$work/dom.html" | wc -l)
if [ "$nimg" = 0 ] || [ "$nx" -lt "$nimg" ] || [ "$ny" -lt "$nimg" ]; then
  echo "charts without axis titles: $nimg charts, $nx x titles, $ny y titles"; rc=1
fi
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
[ $rc = 0 ] && echo "chromium: page loaded cleanly, tables sort and filter, links resolve, no overflow at 900/1600 px, TF32 shown, findings link to ops, charts titled; screenshots ${shot%.png}*.png"
exit $rc
