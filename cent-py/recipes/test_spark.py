"""The Spark recipe: Adult-shaped people explained with `mapInPandas` and a broadcast (pickled)
explainer, in Spark's local mode, give exactly the rows `cent batch` writes for the same input.

It needs PySpark and Java 17 or later, takes a few minutes, and runs in CI after the package's
own tests (`.ci/python.sh`):

    pip install pyspark
    CENT_BIN=target/debug/cent pytest cent-py/recipes
"""

import os
import sys

from conftest import SEED, assert_same_rows, batch_step

import cent


def test_spark_map_in_pandas_matches_cent_batch(portfolio, cache):
    from pyspark.sql import SparkSession

    people, expected = portfolio
    step = batch_step()
    columns = list(expected.columns)
    # Spark's Python workers run this interpreter (with cent and pandas), not the PATH's python3.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").appName("cent-recipe")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    try:
        broadcast = spark.sparkContext.broadcast(cent.Explainer("adult", seed=SEED, cache=cache))

        def explain(batches):
            for pdf in batches:
                yield step(broadcast.value, pdf)[columns]

        schema = ", ".join(f"`{c}` string" for c in columns)
        out = spark.createDataFrame(people).repartition(4).mapInPandas(explain, schema=schema).toPandas()
    finally:
        spark.stop()
    assert_same_rows(out, expected)
