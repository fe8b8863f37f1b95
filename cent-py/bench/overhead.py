"""Per-query cost of the Python API against the CLI, with the built-in MLP on Adult, and where
a scikit-learn model's query time goes.

    CENT_BIN=target/debug/cent python cent-py/bench/overhead.py [--queries 300] [--rounds 5]

The same refused Adult test rows (a favourable one is not explained), n = 3, seed 1:

- Python: `Explainer.explain(dict)` per person (fields in, result objects out): CPU time of the
  process over the calls, and wall time per call.
- CLI: `cent explain --query people.json --format json`, CPU time of the child process with
  every query minus that with one query (the load), per query; and the CLI's own per-query
  report (stderr "explained in X ms": the library's work alone).

The two run in alternating rounds and each figure is the median over the rounds: timings on
this kind of machine drift by a quarter between runs, and alternating keeps both sides under
the same drift. The ratio is Python's CPU per query over the CLI's.

Then the same people with an `MLPClassifier` (16 hidden units) as the black box: wall per
query, how many `predict_proba` calls and rows a query makes, and the time spent inside them
(the rest is cent's own work and the crossings between Python and Rust).
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import cent

REPO = Path(__file__).resolve().parents[2]


def refused(explainer, count):
    """The first `count` test rows the model refuses, as plain dicts."""
    frame = explainer.test_frame()
    people = []
    for i in range(len(frame)):
        person = {k: (v.item() if hasattr(v, "item") else v) for k, v in frame.iloc[i].to_dict().items()}
        if explainer.explain(person, n=1)[0].status != "already_favourable":
            people.append(person)
        if len(people) == count:
            break
    return people


def python_round(explainer, people):
    """(CPU ms per query, median wall ms per call) of `Explainer.explain` over `people`."""
    wall = []
    cpu = time.process_time()
    for person in people:
        start = time.perf_counter()
        explainer.explain(person)
        wall.append((time.perf_counter() - start) * 1e3)
    return (time.process_time() - cpu) * 1e3 / len(people), statistics.median(wall)


def cli_run(cent_bin, cache, queries):
    """(child CPU ms, per-query "explained in" ms) of one `cent explain --query` run."""
    with tempfile.TemporaryDirectory() as tmp:
        query = Path(tmp) / "people.json"
        query.write_text(json.dumps(queries))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([cent_bin, "explain", "--dataset", "adult", "--query", str(query), "--format", "json",
                            "--cache", cache, "--seed", "1"], capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode in (0, 2), p.stderr
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3
    return cpu, [float(m) for m in re.findall(r"explained in ([0-9.]+) ms", p.stderr)]


def cli_round(cent_bin, cache, people):
    """(CPU ms per query beyond the load, median of the CLI's own per-query reports)."""
    one, _ = cli_run(cent_bin, cache, people[:1])
    every, reports = cli_run(cent_bin, cache, people)
    assert len(reports) == len(people)
    return (every - one) / (len(people) - 1), statistics.median(reports)


class Timed:
    """A model that times its `predict_proba` calls and counts them and their rows."""

    def __init__(self, inner):
        self.inner, self.calls, self.rows, self.seconds = inner, 0, 0, 0.0

    def predict_proba(self, x):
        start = time.perf_counter()
        p = self.inner.predict_proba(x)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        self.rows += len(x)
        return p


def sklearn_breakdown(base, cache, people):
    from sklearn.neural_network import MLPClassifier

    x, y = base.training_rows()
    clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=60, random_state=0).fit(x, y)
    timed = Timed(clf)
    explainer = cent.Explainer("adult", model=timed, seed=1, cache=cache)
    favourable = explainer.classes.index(explainer.favourable)
    mine = [p for p in people if clf.predict_proba(explainer.encode(p))[0].argmax() != favourable]
    explainer.explain(mine[0])  # warm: first calls into scikit-learn
    timed.calls, timed.rows, timed.seconds = 0, 0, 0.0
    wall = []
    for person in mine:
        start = time.perf_counter()
        explainer.explain(person)
        wall.append((time.perf_counter() - start) * 1e3)
    n = len(mine)
    inside = timed.seconds * 1e3 / n
    total = sum(wall) / n
    print(f"\nMLPClassifier(16) as the black box, {n} people it refuses, n=3:")
    print(f"  wall per query: mean {total:.2f} ms, median {statistics.median(wall):.2f} ms")
    print(f"  predict_proba: {timed.calls / n:.1f} calls and {timed.rows / n:.0f} rows per query, "
          f"{inside:.2f} ms per query ({inside / timed.calls * n * 1e3:.0f} us per call) = {100 * inside / total:.0f} %")
    print(f"  the rest (cent's search, encoding, crossings): {total - inside:.2f} ms = {100 * (total - inside) / total:.0f} %")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    cache = os.environ.get("CENT_CACHE", str(REPO / "data" / "cache"))
    cent_bin = os.environ.get("CENT_BIN", str(REPO / "target" / "debug" / "cent"))
    explainer = cent.Explainer("adult", seed=1, cache=cache)
    people = refused(explainer, args.queries)

    py, cl = [], []
    for r in range(args.rounds):
        py.append(python_round(explainer, people))
        cl.append(cli_round(cent_bin, cache, people))
        print(f"round {r + 1}: Python CPU {py[-1][0]:.3f} ms (wall median {py[-1][1]:.3f}), "
              f"CLI CPU {cl[-1][0]:.3f} ms (own report median {cl[-1][1]:.3f})")
    py_cpu = statistics.median(c for c, _ in py)
    cli_cpu = statistics.median(c for c, _ in cl)
    print(f"\n{len(people)} refused Adult test rows, built-in MLP, n=3, median of {args.rounds} alternating rounds "
          f"(load average {os.getloadavg()[0]:.1f}):")
    print(f"  CPU per query: Python {py_cpu:.3f} ms, CLI {cli_cpu:.3f} ms, ratio {py_cpu / cli_cpu:.2f}")
    print(f"  wall per query: Python median {statistics.median(w for _, w in py):.3f} ms; "
          f"CLI's own report median {statistics.median(w for _, w in cl):.3f} ms")
    sklearn_breakdown(explainer, cache, people)


if __name__ == "__main__":
    main()
