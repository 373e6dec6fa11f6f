#!/usr/bin/env bash
# The test command. On a fresh machine: installs what is missing, configures
# build/ (and build-asan/ with -fsanitize=address,undefined), compiles, and
# runs the whole meson test suite in both. Exit status is the suites'.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/setup.sh

# chromium: the HTML report is loaded in a real headless browser when present.
mpprof_install_packages "${MPPROF_PACKAGES[@]}" chromium || exit 1

mpprof_build build || exit 1
meson test -C build --print-errorlogs --num-processes 2
rc=$?

mpprof_build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Ddevice_code=disabled || exit 1
meson test -C build-asan --setup=sanitize --print-errorlogs --num-processes 2
rc_asan=$?

if ((rc != 0 || rc_asan != 0)); then
  echo "mpprof: tests FAILED (plain: $rc, sanitized: $rc_asan)" >&2
  exit 1
fi
echo "mpprof: all tests passed (plain and sanitized)"
