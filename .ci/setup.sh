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
