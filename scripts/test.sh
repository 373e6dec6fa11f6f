#!/usr/bin/env bash
# The test command. On a fresh machine: installs what is missing, configures
# build/ (warnings are errors), build-nocuda/ (no CUDA toolkit: the report side
# only) and build-asan/ (-fsanitize=address,undefined; warnings are errors
# there too), compiles, and runs the meson test suites. Exit status is the
# suites'.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/setup.sh

# chromium: the HTML report is loaded in a real headless browser when present;
# python3-torch: the PyTorch integration test (skipped without it).
mpprof_install_packages "${MPPROF_PACKAGES[@]}" "${MPPROF_TEST_PACKAGES[@]}" chromium || exit 1

mpprof_build build -Dwerror=true || exit 1
meson test -C build --print-errorlogs --num-processes 2
rc=$?

# Without the CUDA toolkit (a laptop reading a cluster's results): analysis/,
# report/ and mpprof report/merge/inspect build and pass their tests.
no_toolkit=$(mktemp -d)
mpprof_build build-nocuda -Dwerror=true -Dtoolkit_root="$no_toolkit" || exit 1
meson test -C build-nocuda --print-errorlogs --num-processes 2 --suite analysis --suite inspect
rc_nocuda=$?
meson test -C build-nocuda --print-errorlogs --num-processes 2 --logbase testlog-report report \
  report_findings report_schema report_cli || rc_nocuda=1
rmdir "$no_toolkit"

mpprof_build build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Ddevice_code=disabled || exit 1
meson test -C build-asan --setup=sanitize --print-errorlogs --num-processes 2
rc_asan=$?

# CI shows only the end of this output: name each test that did not pass, with
# the last lines of what it printed (stdout, then stderr).
mpprof_failed_tests() {
  local log=$1/meson-logs/$2
  [[ -f $log ]] || return 0
  python3 - "$log" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    t = json.loads(line)
    if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL"):
        print(f"--- {t['name']}: {t['result']} after {t.get('duration', 0):.1f} s")
        for part in ("stdout", "stderr"):
            tail = (t.get(part) or "").rstrip().splitlines()[-15:]
            if tail:
                print(f"  {part}:")
                print("\n".join("    " + l for l in tail))
PY
}

if ((rc != 0 || rc_nocuda != 0 || rc_asan != 0)); then
  mpprof_failed_tests build testlog.json >&2
  mpprof_failed_tests build-nocuda testlog.json >&2
  mpprof_failed_tests build-nocuda testlog-report.json >&2
  mpprof_failed_tests build-asan testlog-sanitize.json >&2
  echo "mpprof: tests FAILED (plain: $rc, without CUDA: $rc_nocuda, sanitized: $rc_asan)" >&2
  exit 1
fi
echo "mpprof: all tests passed (plain and sanitized)"
