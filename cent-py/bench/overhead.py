"""Per-query overhead of the Python API against the CLI, with the built-in MLP on Adult.

    CENT_BIN=target/debug/cent python cent-py/bench/overhead.py [--queries 300]

Per query, CPU time (robust on a shared machine, where wall time mostly measures the wait for a
core): for Python, the process's CPU time over the `Explainer.explain` calls (fields in, result
objects out) divided by their number; for the CLI, the CPU time of `cent explain --query FILE`
with all the queries minus that with one query (the load), divided by the rest. Also the wall
times: Python per call, and the CLI's own per-query report (stderr "explained in X ms": the
library's work alone). Refused test rows only (a favourable one is not explained).
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    cache = os.environ.get("CENT_CACHE", str(REPO / "data" / "cache"))
    cent_bin = os.environ.get("CENT_BIN", str(REPO / "target" / "debug" / "cent"))
    explainer = cent.Explainer("adult", seed=1, cache=cache)
    frame = explainer.test_frame()
    people = []
    for i in range(len(frame)):
        person = frame.iloc[i].to_dict()
        if explainer.explain(person, n=1)[0].status != "already_favourable":
            people.append({k: (v.item() if hasattr(v, "item") else v) for k, v in person.items()})
        if len(people) == args.queries:
            break

    python_ms = []
    cpu = time.process_time()
    for person in people:
        start = time.perf_counter()
        explainer.explain(person)
        python_ms.append((time.perf_counter() - start) * 1e3)
    python_cpu = (time.process_time() - cpu) * 1e3 / len(people)

    def cli(queries):
        with tempfile.TemporaryDirectory() as tmp:
            query = Path(tmp) / "people.json"
            query.write_text(json.dumps(queries))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run([cent_bin, "explain", "--dataset", "adult", "--query", str(query), "--format",
                                "json", "--cache", cache, "--seed", "1"], capture_output=True, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3
        return cpu, [float(m) for m in re.findall(r"explained in ([0-9.]+) ms", p.stderr)]

    one, _ = cli(people[:1])
    every, cli_ms = cli(people)
    assert len(cli_ms) == len(people)
    cli_cpu = (every - one) / (len(people) - 1)

    print(f"{len(people)} refused Adult test rows, built-in MLP, n=3 (load average {os.getloadavg()[0]:.1f})")
    print(f"CPU per query:  Python {python_cpu:.3f} ms, CLI {cli_cpu:.3f} ms, binding overhead {python_cpu - cli_cpu:.3f} ms")
    print(f"wall per query: Python median {statistics.median(python_ms):.3f} ms; "
          f"CLI's own report median {statistics.median(cli_ms):.3f} ms")


if __name__ == "__main__":
    main()
