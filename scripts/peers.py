#!/usr/bin/env python3
"""cent on the DiCE comparison harness (../shared/peers): the harness's model, factuals and scorer.

    python3 scripts/peers.py --cent target/debug/cent --data-dir /tmp/peers-out \
        --harness ../shared/peers --python /tmp/peers-venv/bin/python --model mlp --out /tmp/peers-res

Run it with any Python 3 (it only uses the standard library); `--python` is the harness's
virtual environment, which runs the scorer (`score_csv.py`).

1. The harness's factuals (`factuals_raw.csv`, raw values) become two query files, one per
   target class (`target_<model>` in `factuals.csv`: the class the model does not give).
2. `cent explain --dataset adult-wide --onnx <data-dir>/<model>.onnx --desired <class>` answers
   each file (one counterfactual per factual, `--format json`). `adult-wide` has the harness's
   layout (the six numeric attributes, then the one-hot groups with sorted categories), so the
   ONNX model reads cent's rows as they are.
3. Each counterfactual is written in the harness's encoding: numeric values are decoded with
   cent's ranges (the schema's) and scaled with the harness's (its training split's); one-hot
   columns are copied. A factual without an answer gets an empty row.
4. `score_csv.py` scores the CSV with the harness's metrics; its JSON and a summary line go to
   `--out`. The harness's `table.py` renders any set of such files (and DiCE's) as one table.

Each factual's `latency_s` is the time cent reports for explaining it (`explained in … ms` on
stderr: the query alone, the data and models already loaded); the whole run's wall time,
loading included, is printed beside it.
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time

NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CLASSES = ["<=50K", ">50K"]


def cent_ranges(schema_path):
    """`range = [a, b]` of each numeric feature of the adult-wide schema."""
    ranges, name = {}, None
    with open(schema_path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("name = "):
                name = line.split("=", 1)[1].strip().strip('"')
            elif line.startswith("range = ") and name in NUMERIC:
                lo, hi = line.split("=", 1)[1].strip().strip("[]").split(",")
                ranges[name] = (float(lo), float(hi))
    missing = [n for n in NUMERIC if n not in ranges]
    if missing:
        sys.exit(f"{schema_path}: no range for {missing}")
    return ranges


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cent", default="target/debug/cent", help="the cent binary")
    ap.add_argument("--data-dir", default="/tmp/peers-out", help="prepare.py's output folder")
    ap.add_argument("--harness", default="../shared/peers", help="the harness's folder (score_csv.py)")
    ap.add_argument("--python", default="/tmp/peers-venv/bin/python", help="the harness's Python")
    ap.add_argument("--model", default="mlp", help="mlp or lr")
    ap.add_argument("--out", default="/tmp/peers-res", help="folder for queries, answers and scores")
    ap.add_argument("--schema", default="data/schemas/adult-wide.toml", help="cent's schema (for its ranges)")
    ap.add_argument("--label", default="cent", help="the run's name in the scores (e.g. `cent p=0`)")
    ap.add_argument("--section", default=None,
                    help="after scoring, (re)write the harness section at the end of this Markdown file "
                         "(e.g. docs/results.md) from every dice-*.json and cent-*.scored.json in --out")
    ap.add_argument("extra", nargs="*", help="more `cent explain` options, after `--`")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    enc = json.load(open(os.path.join(args.data_dir, "encoding.json"), encoding="utf-8"))
    theirs = {k: tuple(v) for k, v in enc["ranges"].items()}
    ours = cent_ranges(args.schema)
    columns = enc["columns"]

    with open(os.path.join(args.data_dir, "factuals.csv"), encoding="utf-8") as f:
        target = {int(r["row_id"]): int(r[f"target_{args.model}"]) for r in csv.DictReader(f)}
    with open(os.path.join(args.data_dir, "factuals_raw.csv"), encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    features = [c for c in raw[0] if c not in ("row_id", "label")]

    answers = {}
    latency = {}
    for cls in (0, 1):
        rows = [r for r in raw if target[int(r["row_id"])] == cls]
        if not rows:
            continue
        qpath = os.path.join(args.out, f"queries-{args.model}-to-{cls}.csv")
        with open(qpath, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(features)
            for r in rows:
                w.writerow([r[c] for c in features])
        cmd = [
            args.cent, "explain", "--dataset", "adult-wide",
            "--onnx", os.path.join(args.data_dir, f"{args.model}.onnx"),
            "--query", qpath, "--desired", CLASSES[cls], "--n", "1", "--format", "json", *args.extra,
        ]
        print("$", " ".join(cmd), file=sys.stderr)
        t = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if run.returncode not in (0, 3):
            sys.exit(f"cent explain failed ({run.returncode}):\n{run.stderr}")
        results = json.loads(run.stdout)
        results = results if isinstance(results, list) else [results]
        if len(results) != len(rows):
            sys.exit(f"{len(results)} answers for {len(rows)} queries")
        took = {int(m.group(1)): float(m.group(2)) / 1e3
                for m in re.finditer(r"query (\d+): explained in ([0-9.]+) ms", run.stderr)}
        for i, (r, res) in enumerate(zip(rows, results), start=1):
            rid = int(r["row_id"])
            if i in took:
                latency[rid] = took[i]
            cfs = (res.get("explanation") or {}).get("counterfactuals") or []
            if cfs:
                answers[rid] = cfs[0]["encoded"]
        print(f"to class {cls}: {len(rows)} factuals, {sum(int(r['row_id']) in answers for r in rows)} answered, "
              f"{wall:.1f} s wall with loading", file=sys.stderr)

    numeric_cols = {name: columns.index(name) for name in NUMERIC}
    cf_path = os.path.join(args.out, f"cent-{args.model}.csv")
    with open(cf_path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["row_id", *columns, "latency_s"])
        for r in raw:
            rid = int(r["row_id"])
            x = answers.get(rid)
            if x is None:
                w.writerow([rid, *([""] * len(columns)), latency.get(rid, "")])
                continue
            if len(x) != len(columns):
                sys.exit(f"row {rid}: {len(x)} encoded values, the harness has {len(columns)} columns")
            out = [float(v) for v in x]
            for name, c in numeric_cols.items():
                lo, hi = ours[name]
                value = round(lo + out[c] * (hi - lo))
                tlo, thi = theirs[name]
                out[c] = (value - tlo) / (thi - tlo)
            w.writerow([rid, *[repr(v) for v in out], latency.get(rid, "")])

    scored = os.path.join(args.out, f"cent-{args.model}.scored.json")
    cmd = [args.python, "score_csv.py", "--cf", os.path.abspath(cf_path), "--model", args.model,
           "--data-dir", os.path.abspath(args.data_dir), "--tool", args.label, "--out", os.path.abspath(scored)]
    print("$", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=args.harness, check=True)
    if args.section:
        write_section(args)


HEADING = "## On the DiCE harness (`../shared/peers`)"

PROSE = """The harness's own data, models and scorer: UCI Adult split 80/20 by the harness (seed 0), a
scikit-learn MLP (13, 4) and a logistic regression on its 104-column encoding, exported to
ONNX; 100 fixed test factuals (50 per predicted class of the MLP); DiCE 0.12 run against the
same ONNX models; every tool's counterfactuals scored by the harness's `score_csv.py` (flip by
the ONNX model, l0 over the 14 attributes, yNN with the 5 nearest of all rows). cent runs with
`--dataset adult-wide --onnx <model>.onnx` at its defaults, one counterfactual per factual
(`scripts/peers.py`); DiCE's rows are `run_dice.py` with its defaults. cent's latency is the
time it reports per query (data and models loaded); DiCE's is its own per-query time.

The harness's redundancy (a change whose reversal alone keeps the flip) counts what cent's
links add: `relationship` moved with `marital-status` and `education-num` with `education`,
which the scorer does not know go together. cent also keeps `fnlwgt` and `native-country`,
which the harness lets change, fixed.
"""

COMMANDS = """Regenerate (harness set up as its README says, into `/tmp/peers-out`):

```sh
cd ../shared/peers
/tmp/peers-venv/bin/python run_dice.py --model mlp --method random --out /tmp/peers-res/dice-mlp-random.json
#   ... and --method genetic, and --model lr
cd -
python3 scripts/peers.py --model lr --out /tmp/peers-res
python3 scripts/peers.py --model mlp --out /tmp/peers-res --section docs/results.md
```
"""


LINKS = """The same answers read with the links of cent's `adult-wide` schema: education and its number
are one to one, and marital status, relationship and sex take only combinations at least 30
training rows hold (counted here in the harness's training rows; a factual's own combination
always counts as held). *l0, linked as one*: the features one link ties together count as one
change when an answer changes several of them. *redundancy, linked*: the harness's redundant
attributes less those whose reversal alone would leave a combination no training rows (or too
few) hold. *breaks a link*: answers whose own values are such a combination. The goals are
judged on the harness's columns above; these show how much of the difference the links make.
"""


def link_reading(args, runs):
    """A Markdown table of every run's valid answers read with the schema's links (see LINKS)."""
    import ast
    import tomllib
    from collections import Counter

    with open(args.schema, "rb") as f:
        links = [(l["features"], int(l.get("min_rows", 1))) for l in tomllib.load(f).get("link", [])]

    def norm(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return str(v).strip()

    with open(os.path.join(args.data_dir, "train_raw.csv"), encoding="utf-8") as f:
        train = list(csv.DictReader(f))
    held = [{k for k, n in Counter(tuple(norm(r[a]) for a in feats) for r in train).items() if n >= least}
            for feats, least in links]
    with open(os.path.join(args.data_dir, "factuals_raw.csv"), encoding="utf-8") as f:
        factual = {int(r["row_id"]): {k: norm(v) for k, v in r.items()} for r in csv.DictReader(f)}

    def settled(i, x, c):
        feats = links[i][0]
        now = tuple(norm(c[a]) for a in feats)
        return now == tuple(x[a] for a in feats) or now in held[i]

    # Features joined by links (a feature in two links joins them).
    group = {}
    for feats, _ in links:
        roots = {group.get(a, a) for a in feats}
        new = min(roots)
        for a, g in list(group.items()):
            if g in roots:
                group[a] = new
        for a in feats:
            group[a] = new

    lines = ["| run | model | valid | l0 | l0, linked as one | redundancy | redundancy, linked | breaks a link |",
             "|---|---|---|---|---|---|---|---|"]
    for path in runs:
        result = json.load(open(path, encoding="utf-8"))
        rows = [r for r in result["rows"] if r.get("valid")]
        if not rows:
            continue
        l0 = one = red = linked = broken = 0
        for r in rows:
            x = factual[int(r["row_id"])]
            c = ast.literal_eval(r["cf_raw"]) if isinstance(r["cf_raw"], str) else r["cf_raw"]
            changed = r["changed"]
            l0 += len(changed)
            one += len({group.get(a, a) for a in changed})
            red += len(r["redundant"])
            for a in r["redundant"]:
                back = dict(c)
                back[a] = x[a]
                linked += all(settled(i, x, back) for i in range(len(links)))
            broken += not all(settled(i, x, c) for i in range(len(links)))
        cfg = result.get("config", {})
        name = f"DiCE {cfg['method']}" if "method" in cfg else cfg.get("tool", "?")
        n = len(rows)
        lines.append(f"| {name} | {cfg.get('model', '?')} | {n} | {l0 / n:.2f} | {one / n:.2f} | {red / n:.2f} | "
                     f"{linked / n:.2f} | {broken} |")
    return "\n".join(lines) + "\n"


def write_section(args):
    """Replaces (or appends) the harness section of `args.section` with a fresh table."""
    names = sorted(os.listdir(args.out))
    # DiCE's own runs; the harness's `run_all.sh` also leaves each one re-scored through
    # `score_csv.py` (`*.rescored.json`, the same numbers), which would repeat its row.
    runs = [os.path.join(args.out, n) for n in names
            if n.startswith("dice-") and n.endswith(".json") and not n.endswith(".rescored.json")]
    runs += [os.path.join(args.out, n) for n in names if n.startswith("cent-") and n.endswith(".scored.json")]
    table = subprocess.run([args.python, "table.py", *[os.path.abspath(r) for r in runs]], cwd=args.harness,
                           check=True, capture_output=True, text=True).stdout
    reading = link_reading(args, runs)
    load = os.getloadavg()[0]
    text = open(args.section, encoding="utf-8").read()
    if HEADING in text:
        text = text[:text.index(HEADING)].rstrip() + "\n"
    text += f"\n{HEADING}\n\n{PROSE}\n{table}\nMachine: {os.cpu_count()} logical cores, 1-minute load " \
            f"{load:.2f} when the table was written.\n\n{LINKS}\n{reading}\n{COMMANDS}"
    with open(args.section, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote the harness section of {args.section}", file=sys.stderr)


if __name__ == "__main__":
    main()
