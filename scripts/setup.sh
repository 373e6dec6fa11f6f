# Shared set-up for scripts/test.sh and scripts/demo.sh (sourced, not run).
# Installs the Debian packages the build needs when they are missing (as root;
# otherwise prints the exact apt-get line and stops), then configures and
# builds a meson build directory.

MPPROF_PACKAGES=(meson ninja-build pkg-config gcc g++ clang python3 python3-dev libcjson-dev libpng-dev libcmocka-dev)
# python3-torch (Debian, CPU only, for /usr/bin/python3): only for the PyTorch tests (tests/torch);
# libtorch-dev, pybind11-dev: its C++ headers, for the C++ backward marks (mpprof_torch/_marks.cpp);
# clang-format: the formatting check (tests/style);
# strace: its fault injection delivers a signal at a chosen system call (report_cli.sh, safety.sh:
# interrupted report, merge and diff; they skip without it)
MPPROF_TEST_PACKAGES=(python3-torch libtorch-dev pybind11-dev clang-format strace)

mpprof_install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "mpprof: missing packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    return 1
  fi
  echo "mpprof: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
}

# mpprof_build DIR [meson setup options...]
mpprof_build() {
  local dir=$1
  shift
  if [[ ! -f $dir/build.ninja ]]; then
    meson setup "$dir" "$@" >/dev/null || { meson setup "$dir" "$@"; return 1; }
  fi
  ninja -C "$dir" >/dev/null || { ninja -C "$dir"; return 1; }
}
