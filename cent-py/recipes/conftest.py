"""What the recipes share: the Adult-shaped people (`scripts/adult_rows.py`, LF line endings),
the rows `cent batch` writes for them, and the per-batch step every engine runs.

`CENT_SPARK_ROWS` sets the number of people (default 100,000).
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
ROWS = int(os.environ.get("CENT_SPARK_ROWS", "100000"))
SEED = 1


@pytest.fixture(scope="session")
def cache() -> str:
    return os.environ.get("CENT_CACHE", str(REPO / "data" / "cache"))


@pytest.fixture(scope="session")
def portfolio(tmp_path_factory, cache):
    """(people with a `line` column: each person's line in the CSV, what `cent batch` wrote for
    that CSV as text)."""
    tmp = tmp_path_factory.mktemp("portfolio")
    people = tmp / "people.csv"
    subprocess.run([sys.executable, str(REPO / "scripts" / "adult_rows.py"), "--rows", str(ROWS), "--out", str(people)],
                   check=True)
    # LF line endings: `cent batch` numbers the records of a CRLF file (as Python's csv module
    # writes) one line lower than those of an LF file, and pandas writes each batch with LF.
    people.write_bytes(people.read_bytes().replace(b"\r\n", b"\n"))
    cent_bin = os.environ.get("CENT_BIN", str(REPO / "target" / "debug" / "cent"))
    out = tmp / "cli.csv"
    p = subprocess.run([cent_bin, "batch", "--dataset", "adult", "--input", str(people), "--out", str(out),
                        "--threads", "2", "--cache", cache, "--seed", str(SEED), "--quiet"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    frame = pd.read_csv(people, dtype=str)
    frame.insert(0, "line", [str(i + 2) for i in range(len(frame))])
    return frame, pd.read_csv(out, dtype=str, keep_default_na=False)


def batch_step():
    """The step an engine runs on each batch: `step(explainer, pdf)` explains the people of
    `pdf` (with their `line`) by `explainer.batch`, as the text `cent batch` writes, each
    result's line mapped back to the person's line in the input. Made here, not at module level,
    so that the engine pickles the function itself to its workers (they cannot import this
    test module)."""

    def step(explainer, pdf):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "results.csv")
            explainer.batch(pdf.drop(columns="line"), out=out, threads=1)
            res = pd.read_csv(out, dtype=str, keep_default_na=False)
        # The batch's own line i + 2 is its row i: give it the input's line.
        res["line"] = pdf["line"].to_numpy()[res["line"].astype(int).to_numpy() - 2]
        return res

    return step


def assert_same_rows(got: pd.DataFrame, want: pd.DataFrame):
    """Equal as text once both are ordered by input line and rank."""

    def ordered(frame):
        frame = frame[list(want.columns)].astype(str)
        key = frame["line"].astype(int) * 100 + frame["rank"].replace("", "0").astype(int)
        return frame.assign(_key=key).sort_values("_key").drop(columns="_key").reset_index(drop=True)

    assert got["line"].nunique() == ROWS
    assert len(got) == len(want)
    pd.testing.assert_frame_equal(ordered(got), ordered(want))
