"""Shared fixtures: the Adult explainer with the built-in MLP, the cache and the `cent` binary.

The cache is `$CENT_CACHE` (else the repository's `data/cache`): models trained there once are
reused. The CLI comparisons need the `cent` binary: `$CENT_BIN`, else
`$CARGO_TARGET_DIR/debug/cent`, else `target/debug/cent` of the repository; a missing binary
fails those tests.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

import cent

REPO = Path(__file__).resolve().parents[2]
SEED = 1


@pytest.fixture(scope="session")
def cache() -> str:
    return os.environ.get("CENT_CACHE", str(REPO / "data" / "cache"))


@pytest.fixture(scope="session")
def cent_bin() -> str:
    if "CENT_BIN" in os.environ:
        path = Path(os.environ["CENT_BIN"])
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        path = target / "debug" / "cent"
    assert path.is_file(), f"the cent binary is not at {path}: build it with `cargo build -p cent-cli`"
    return str(path)


@pytest.fixture(scope="session")
def adult(cache) -> cent.Explainer:
    return cent.Explainer("adult", model="mlp", seed=SEED, cache=cache)


@pytest.fixture(scope="session")
def test_frame(adult):
    return adult.test_frame()


@pytest.fixture(scope="session")
def refused(adult, test_frame):
    """Test rows the built-in MLP refuses (the first 8)."""
    rows = []
    for i in range(len(test_frame)):
        person = test_frame.iloc[i].to_dict()
        r = adult.explain(person, n=1)
        if r[0].status != "already_favourable":
            rows.append(person)
        if len(rows) == 8:
            break
    assert len(rows) == 8
    return rows


def run_cli(cent_bin, cache, *args):
    """`cent ARGS --cache CACHE --seed 1 --quiet`: (exit code, stdout, stderr)."""
    cmd = [cent_bin, *args, "--cache", cache, "--seed", str(SEED), "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def cli_explain(cent_bin, cache, tmp_path, person, *flags):
    """`cent explain --query person.json --format json`, parsed."""
    query = tmp_path / "person.json"
    query.write_text(json.dumps(person))
    code, out, err = run_cli(cent_bin, cache, "explain", "--dataset", "adult", "--query", str(query), "--format", "json", *flags)
    assert out, f"cent explain printed nothing (exit {code}): {err}"
    return code, json.loads(out), err
