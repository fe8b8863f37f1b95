#!/usr/bin/env bash
# The Python package: a fresh venv, maturin and the test dependencies from PyPI, the wheel built
# (dev profile: cent's crates optimised, burn not, as the rest of CI) and installed, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export CENT_CACHE="${CENT_CACHE:-$root/data/cache}"
venv="$(mktemp -d /tmp/cent-py-ci.XXXXXX)"
trap 'rm -rf "$venv"' EXIT

python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "maturin>=1.9,<2" pytest numpy pandas pyarrow scikit-learn lightgbm "pyspark>=3.5" "ray[data]"

# The `cent` binary the tests compare with, as the workspace tests build it (after .ci/test.sh's
# `cargo test --workspace` this builds nothing; `cargo build -p cent-cli` would unify features
# differently and rebuild the dependencies).
cargo test --workspace --locked --no-run
start=$(date +%s)
"$venv/bin/maturin" build --profile dev --locked -m cent-py/Cargo.toml -o "$venv/dist"
echo "wheel built in $(( $(date +%s) - start )) s: $(ls -s --block-size=K "$venv"/dist/*.whl)"
"$venv/bin/pip" install -q "$venv"/dist/*.whl

# From outside the source tree, so that the installed wheel is what is imported. The recipes
# (cent-py/recipes: Spark and Ray Data in local mode, Java from .ci/setup.sh, 100,000 people)
# run last.
cd "$venv"
export CENT_BIN="$CARGO_TARGET_DIR/debug/cent"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/cent-py/tests"
start=$(date +%s)
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/cent-py/recipes"
echo "Spark and Ray recipes in $(( $(date +%s) - start )) s"
