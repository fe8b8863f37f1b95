#!/usr/bin/env bash
# The project's one check script: humans and CI run the same thing.
#   fmt check, clippy -D warnings, rustdoc -D warnings, every test (unit, property,
#   integration, doc), the no_std core and its C API for Cortex-M4F, the firmware under QEMU,
#   and the C API from C (host and Cortex-M4F under QEMU).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "rustfmt"
cargo fmt --all -- --check

step "clippy (host workspace)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "rustdoc (every public item's links resolve)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

step "no_std core for thumbv7em-none-eabihf (with and without defmt)"
cargo build -p cent-nostd --target thumbv7em-none-eabihf --locked
cargo build -p cent-nostd --target thumbv7em-none-eabihf --features defmt --locked
cargo clippy -p cent-nostd --target thumbv7em-none-eabihf --features defmt --locked -- -D warnings

# The device staticlib itself is built (profile ffi-device) and linked by tests/tests/ffi.rs.
step "C API (cent-ffi) for thumbv7em-none-eabihf: clippy"
cargo clippy -p cent-ffi --target thumbv7em-none-eabihf --locked -- -D warnings

if [ -d firmware ]; then
  step "firmware: fmt, clippy, release build (text and defmt)"
  # Own workspace: cargo must run inside it (its .cargo/config.toml sets the target), and its
  # target dir is pinned to the one the parity test uses.
  (
    cd firmware
    export CARGO_TARGET_DIR="$PWD/target"
    cargo fmt -- --check
    cargo clippy --release --locked --bins --lib -- -D warnings
    cargo build --release --locked --bins
    # The defmt build links too (defmt.x); its own target dir keeps the text binaries intact.
    export CARGO_TARGET_DIR="$PWD/target/defmt"
    cargo clippy --release --locked --bins --lib --features defmt -- -D warnings
    cargo build --release --locked --bins --features defmt
  )
fi

# The workspace tests include the firmware's bit-exact parity with the host's native run under
# QEMU (tests/tests/firmware.rs; needs qemu-system-arm from .ci/setup.sh and fails without it),
# the C API's header drift check (cent-ffi/tests/header.rs) and the C programs over it: gcc on
# the host against a native run, arm-none-eabi-gcc under QEMU against the host program, byte
# for byte (tests/tests/ffi.rs; fails without the tools, naming them).
# One `cargo test --workspace`: testing a single package would unify features differently and
# rebuild every dependency a second time.
step "tests (workspace: unit, property, integration, doc, firmware parity)"
cargo test --workspace --locked

# The Python package (cent-py): wheel into a fresh venv, then its pytest suite (needs python3
# with venv and pip, from .ci/setup.sh).
step "python package: maturin wheel, pytest"
bash .ci/python.sh
