#!/usr/bin/env bash
# Installs what the checks need on a fresh machine (idempotent; seconds when already present).
set -euo pipefail
rustup target add thumbv7em-none-eabihf thumbv7m-none-eabi
rustup component add rustfmt clippy llvm-tools
