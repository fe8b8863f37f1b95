#!/usr/bin/env python3
"""Adult-shaped rows for `cent batch` benchmarks: N people drawn (seeded, with replacement) from
the embedded UCI Adult files, in the `adult` schema's columns, as a CSV with a header.

    python3 scripts/adult_rows.py --rows 1000000 --out /tmp/adult-1m.csv
    cent batch --dataset adult --input /tmp/adult-1m.csv --out /tmp/adult-1m.jsonl --threads 2

Only the standard library. Rows with a missing value (`?`) are skipped, as the schema does;
native-country becomes `United-States` or `Other`, as the schema maps it.
"""

import argparse
import csv
import gzip
import os
import random

NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
         "income"]
KEEP = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex",
        "capital-gain", "capital-loss", "hours-per-week", "native-country"]


def people(root):
    for name, skip in (("adult.data.gz", 0), ("adult.test.gz", 1)):
        with gzip.open(os.path.join(root, "data", "adult", name), "rt", encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i < skip or not line.strip():
                    continue
                values = [v.strip() for v in line.split(",")]
                if len(values) != len(NAMES) or "?" in values:
                    continue
                row = dict(zip(NAMES, values))
                if row["native-country"] != "United-States":
                    row["native-country"] = "Other"
                yield [row[k] for k in KEEP]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."), help="the project's root")
    args = ap.parse_args()
    pool = list(people(args.root))
    rng = random.Random(args.seed)
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(KEEP)
        for _ in range(args.rows):
            w.writerow(pool[rng.randrange(len(pool))])
    print(f"wrote {args.rows} rows drawn from {len(pool)} people to {args.out}")


if __name__ == "__main__":
    main()
