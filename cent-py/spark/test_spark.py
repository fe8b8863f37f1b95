"""The Spark recipe: Adult-shaped people explained with `mapInPandas` and a broadcast (pickled)
explainer, in Spark's local mode, give exactly the rows `cent batch` writes for the same input.

It needs PySpark and Java 17 or later, takes a few minutes, and runs in CI after the package's
own tests (`.ci/python.sh`):

    pip install pyspark
    CENT_BIN=target/debug/cent pytest cent-py/spark

`CENT_SPARK_ROWS` sets the number of people (default 100,000).
"""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

import cent

REPO = Path(__file__).resolve().parents[2]
ROWS = int(os.environ.get("CENT_SPARK_ROWS", "100000"))


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Batch results as text, ordered by input line and rank."""
    frame = frame.astype(str)
    key = frame["line"].astype(int) * 100 + frame["rank"].replace("", "0").astype(int)
    return frame.assign(_key=key).sort_values("_key").drop(columns="_key").reset_index(drop=True)


def explain_batches(broadcast, columns):
    """The function `mapInPandas` runs on each partition: the broadcast explainer's batch over
    each pandas batch, with each result's line mapped back to the person's line in the input."""

    def run(batches):
        import tempfile

        explainer = broadcast.value
        for pdf in batches:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "results.csv")
                explainer.batch(pdf.drop(columns="line"), out=out, threads=1)
                res = pd.read_csv(out, dtype=str, keep_default_na=False)
            # A batch's own line i + 2 is its row i: give it the input's line.
            res["line"] = pdf["line"].to_numpy()[res["line"].astype(int).to_numpy() - 2]
            yield res[columns]

    return run


def test_spark_map_in_pandas_matches_cent_batch(tmp_path):
    from pyspark.sql import SparkSession

    cache = os.environ.get("CENT_CACHE", str(REPO / "data" / "cache"))
    cent_bin = os.environ.get("CENT_BIN", str(REPO / "target" / "debug" / "cent"))
    people = tmp_path / "people.csv"
    subprocess.run([sys.executable, str(REPO / "scripts" / "adult_rows.py"), "--rows", str(ROWS), "--out", str(people)],
                   check=True)
    # LF line endings: `cent batch` numbers the records of a CRLF file (as Python's csv module
    # writes) one line lower than those of an LF file, and pandas writes each batch with LF.
    people.write_bytes(people.read_bytes().replace(b"\r\n", b"\n"))

    cli_out = tmp_path / "cli.csv"
    p = subprocess.run([cent_bin, "batch", "--dataset", "adult", "--input", str(people), "--out", str(cli_out),
                        "--threads", "2", "--cache", cache, "--seed", "1", "--quiet"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    expected = pd.read_csv(cli_out, dtype=str, keep_default_na=False)
    columns = list(expected.columns)

    # Spark's Python workers run this interpreter (with cent and pandas), not the PATH's python3.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    frame = pd.read_csv(people, dtype=str)
    frame.insert(0, "line", [str(i + 2) for i in range(len(frame))])
    spark = (SparkSession.builder.master("local[2]").appName("cent-recipe")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    try:
        explainer = cent.Explainer("adult", seed=1, cache=cache)
        broadcast = spark.sparkContext.broadcast(explainer)
        df = spark.createDataFrame(frame).repartition(4)
        schema = ", ".join(f"`{c}` string" for c in columns)
        out = df.mapInPandas(explain_batches(broadcast, columns), schema=schema).toPandas()
    finally:
        spark.stop()

    assert out["line"].nunique() == ROWS
    got, want = as_text(out), as_text(expected)
    assert len(got) == len(want)
    pd.testing.assert_frame_equal(got, want)
