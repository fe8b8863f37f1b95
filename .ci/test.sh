#!/usr/bin/env bash
# The project's one check script: humans and CI run the same thing.
#   fmt check, clippy -D warnings, every test (unit, property, integration, doc), the no_std
#   core for Cortex-M4F with and without defmt, and the firmware under QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "rustfmt"
cargo fmt --all -- --check

step "clippy (host workspace)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "no_std core for thumbv7em-none-eabihf (with and without defmt)"
cargo build -p cent-nostd --target thumbv7em-none-eabihf --locked
cargo build -p cent-nostd --target thumbv7em-none-eabihf --features defmt --locked
cargo clippy -p cent-nostd --target thumbv7em-none-eabihf --features defmt --locked -- -D warnings

step "tests (workspace: unit, property, integration, doc)"
cargo test --workspace --locked

if [ -d firmware ]; then
  step "firmware under QEMU"
  (cd firmware && cargo build --release --locked)
fi
