#!/usr/bin/env python3
"""Export a built-in cent classifier (plain dense layers, JSON) as a standard-operator ONNX graph.

The graph uses only core ONNX operators (Gemm, Relu, Softmax), so any runtime that implements the
standard domain can run it. Input `x` is float32 [batch, n_cols] in the schema's encoded column
order; output `probabilities` is float32 [batch, classes].

Regenerate the committed test model (needs `pip install onnx`):

    python3 scripts/make_onnx.py data/onnx/adult-mlp.json data/onnx/adult-mlp.onnx

data/onnx/adult-mlp.json is a copy of a model cached by `cent train --dataset adult --model mlp`
(data/cache/models/adult-mlp-seed1.json, before class weighting); any file in that format works,
with or without the `cache_key` cache files carry.

The scikit-learn fixtures that pin which skl2onnx exports cent can load (needs
`pip install scikit-learn skl2onnx`; written deterministically from a seeded toy problem):

    python3 scripts/make_onnx.py --sklearn data/onnx

The tree-ensemble fixtures: LightGBM and XGBoost classifiers (onnxmltools) and scikit-learn's
RandomForestClassifier and GradientBoostingClassifier (skl2onnx, zipmap off), 20 trees of depth 4
at most, on a seeded 8-column problem written beside them as a dataset (trees.csv, trees.toml),
with each framework's own probabilities for 16 of its rows (trees-expected.json):

    python3 scripts/make_onnx.py --trees data/onnx

A 100-tree, depth-6 LightGBM on Adult's 47 encoded columns, for latency measurements (not
committed; the encoding follows data/schemas/adult.toml: integers min-max scaled over all rows,
which for Adult are the training split's ranges too, one-hot categories in schema order):

    python3 scripts/make_onnx.py --adult-lightgbm /tmp/adult-lightgbm.onnx

A rare favourable class (not committed; docs/evaluation.md, "A rare target class"): adult.data
with about one `>50K` row in ten and a half kept (3.0 % `>50K` among the rows without a `?`), as adult-rare.csv, and a
scikit-learn logistic regression and MLP (13, 4) trained on it with no class weights
(adult-rare-lr.onnx, adult-rare-mlp.onnx), for `--data adult-rare.csv --schema
data/schemas/adult.toml --onnx ...`:

    python3 scripts/make_onnx.py --adult-rare /tmp/rare

Versions these files were made with (python3 -m venv /tmp/ens-venv, then pip install):
onnx==1.23.2 scikit-learn==1.9.1 skl2onnx==1.20.0 lightgbm==4.7.0 xgboost==3.2.0
onnxmltools==1.16.0 numpy==2.4.6 packaging (onnxmltools imports it without declaring it).
"""

import json
import sys

import onnx
from onnx import TensorProto, helper

FORMAT = "cent-classifier"
OPSET = 13


def layer_nodes(i, layer, source):
    """Gemm (weights stored [outputs][inputs], hence transB) and the layer's activation."""
    weights = helper.make_tensor(
        f"w{i}", TensorProto.FLOAT, [layer["outputs"], layer["inputs"]], layer["weights"]
    )
    bias = helper.make_tensor(f"b{i}", TensorProto.FLOAT, [layer["outputs"]], layer["bias"])
    gemm_out = f"gemm{i}"
    nodes = [helper.make_node("Gemm", [source, f"w{i}", f"b{i}"], [gemm_out], name=f"dense{i}", transB=1)]
    activation = layer["activation"]
    if activation == "Relu":
        nodes.append(helper.make_node("Relu", [gemm_out], [f"relu{i}"], name=f"relu{i}"))
        return nodes, [weights, bias], f"relu{i}"
    if activation == "Softmax":
        nodes.append(helper.make_node("Softmax", [gemm_out], ["probabilities"], name="softmax", axis=1))
        return nodes, [weights, bias], "probabilities"
    if activation == "Identity":
        return nodes, [weights, bias], gemm_out
    raise SystemExit(f"unsupported activation {activation!r} in layer {i}")


def build(model):
    layers = model["mlp"]["layers"]
    if layers[-1]["activation"] != "Softmax":
        raise SystemExit("the last layer must be a softmax: the graph must output probabilities")
    nodes, inits, source = [], [], "x"
    for i, layer in enumerate(layers):
        more_nodes, more_inits, source = layer_nodes(i, layer, source)
        nodes += more_nodes
        inits += more_inits
    graph = helper.make_graph(
        nodes,
        f"cent-{model['kind'].lower()}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", model["n_cols"]])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", model["classes"]])],
        initializer=inits,
    )
    out = helper.make_model(graph, producer_name="cent scripts/make_onnx.py", opset_imports=[helper.make_opsetid("", OPSET)])
    out.ir_version = 8
    onnx.checker.check_model(out)
    return out


def sklearn_fixtures(out_dir):
    """A logistic regression and a 13-4 MLP on a seeded 5-feature toy problem, exported by skl2onnx
    with and without ZipMap, plus the probabilities scikit-learn computes for a few rows."""
    import numpy as np
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(0)
    x = rng.random((300, 5)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] - x[:, 2] > 0.2).astype(np.int64)
    lr = LogisticRegression().fit(x, y)
    mlp = MLPClassifier((13, 4), max_iter=2000, random_state=0).fit(x, y)
    plain = {"zipmap": False}
    exports = {
        "skl-lr.onnx": to_onnx(lr, x[:1], options=plain),
        "skl-lr-zipmap.onnx": to_onnx(lr, x[:1]),
        "skl-mlp.onnx": to_onnx(mlp, x[:1], options=plain),
    }
    for name, model in exports.items():
        onnx.save(model, f"{out_dir}/{name}")
    rows = x[:8]
    expected = {
        "rows": rows.tolist(),
        "lr": lr.predict_proba(rows).astype(np.float32).tolist(),
        "mlp": mlp.predict_proba(rows).astype(np.float32).tolist(),
    }
    with open(f"{out_dir}/skl-expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1)
    print(f"wrote {', '.join(exports)} and skl-expected.json into {out_dir}")


TREE_COLUMNS = 8
TREE_OPSETS = {"": 15, "ai.onnx.ml": 3}


def tree_problem(n_rows=400):
    """A seeded binary problem on 8 columns in [0, 1] (3 decimals, exact in float32 and CSV)."""
    import numpy as np

    rng = np.random.default_rng(7)
    x = np.round(rng.random((n_rows, TREE_COLUMNS)), 3).astype(np.float32)
    score = x[:, 0] + 0.5 * x[:, 1] - x[:, 2] + 0.3 * np.sin(6 * x[:, 3]) + 0.2 * (x[:, 4] > 0.5)
    y = (score > 0.25).astype(np.int64)
    return x, y


def tree_models(x, y, trees=20, depth=4):
    """The four ensembles, fitted, with their ONNX exports (probabilities as a plain tensor)."""
    import lightgbm
    import xgboost
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType
    from skl2onnx import to_onnx
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    fitted = {
        "lightgbm": lightgbm.LGBMClassifier(
            n_estimators=trees, max_depth=depth, num_leaves=2**depth - 1, random_state=0, verbose=-1
        ).fit(x, y),
        "xgboost": xgboost.XGBClassifier(n_estimators=trees, max_depth=depth, random_state=0).fit(x, y),
        "skl-rf": RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=0).fit(x, y),
        "skl-gb": GradientBoostingClassifier(n_estimators=trees, max_depth=depth, random_state=0).fit(x, y),
    }
    typed = [("input", FloatTensorType([None, x.shape[1]]))]
    plain = {"zipmap": False}
    exports = {
        "lightgbm": convert_lightgbm(fitted["lightgbm"], initial_types=typed, zipmap=False, target_opset=15),
        "xgboost": convert_xgboost(fitted["xgboost"], initial_types=typed, target_opset=15),
        "skl-rf": to_onnx(fitted["skl-rf"], x[:1], options=plain, target_opset=TREE_OPSETS),
        "skl-gb": to_onnx(fitted["skl-gb"], x[:1], options=plain, target_opset=TREE_OPSETS),
    }
    return fitted, exports


TREES_SCHEMA = """# A seeded synthetic binary problem on 8 columns in [0, 1] (scripts/make_onnx.py --trees), the
# data the tree-ensemble test models in this directory were fitted on. With `range = [0, 1]`
# the encoded columns are the raw values, so the models read the rows as cent encodes them.
name = "trees"
description = "synthetic: 8 columns in [0, 1], binary target"

[[source]]
file = "trees.csv"

[csv]
header = true

[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
"""


def tree_fixtures(out_dir):
    """The four small ensembles, their data as a cent dataset, and the frameworks' probabilities."""
    import numpy as np

    x, y = tree_problem()
    fitted, exports = tree_models(x, y)
    for name, model in exports.items():
        onnx.save(model, f"{out_dir}/{name}.onnx")
    with open(f"{out_dir}/trees.csv", "w", encoding="utf-8") as f:
        f.write(",".join(f"x{i}" for i in range(TREE_COLUMNS)) + ",y\n")
        for row, label in zip(x, y):
            f.write(",".join(f"{v:.3f}" for v in row) + f",{label}\n")
    with open(f"{out_dir}/trees.toml", "w", encoding="utf-8") as f:
        f.write(TREES_SCHEMA)
        for i in range(TREE_COLUMNS):
            f.write(f'\n[[feature]]\nname = "x{i}"\nkind = "continuous"\nrange = [0.0, 1.0]\n')
    rows = x[:16]
    expected = {"rows": rows.tolist()}
    for name, model in fitted.items():
        expected[name] = model.predict_proba(rows).astype(np.float32).tolist()
    with open(f"{out_dir}/trees-expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1)
    print(f"wrote {', '.join(exports)} (.onnx), trees.csv, trees.toml and trees-expected.json into {out_dir}")


def adult_schema():
    """data/schemas/adult.toml, and the directory of the data files it names."""
    import os
    import tomllib

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    with open(os.path.join(here, "schemas", "adult.toml"), "rb") as f:
        return tomllib.load(f), here


def adult_lines(source):
    """The data lines of one of Adult's embedded files (`adult.data` or `adult.test`)."""
    import gzip
    import os

    schema, here = adult_schema()
    (entry,) = [s for s in schema["source"] if s["file"] == source]
    with open(os.path.join(here, "adult", source + ".gz"), "rb") as raw:
        lines = gzip.decompress(raw.read()).decode("utf-8").splitlines()
    return [line for line in lines[entry.get("skip_lines", 0):] if line.strip()]


def adult_encoded(lines=None):
    """Adult's rows (both files, or the given data lines) encoded as cent encodes them
    (data/schemas/adult.toml; numbers min-max scaled over these rows), and the labels."""
    import numpy as np

    schema, _ = adult_schema()
    if lines is None:
        lines = [line for s in schema["source"] for line in adult_lines(s["file"])]
    names = schema["csv"]["names"]
    rows = []
    for line in lines:
        fields = [v.strip() for v in line.split(",")]
        if len(fields) == len(names) and "?" not in fields:
            rows.append(dict(zip(names, fields)))
    target = schema["target"]
    label = {v: i for i, c in enumerate(target["classes"]) for v in c["values"]}
    y = np.array([label[r[target["column"]]] for r in rows], dtype=np.int64)
    columns = []
    for feat in schema["feature"]:
        values = [r[feat["name"]] for r in rows]
        if feat["kind"] in ("integer", "continuous"):
            v = np.array(values, dtype=np.float64)
            lo, hi = feat.get("range", (v.min(), v.max()))
            columns.append(((v - lo) / (hi - lo)).astype(np.float32))
        elif feat["kind"] == "binary":
            columns.append(np.array([feat["categories"].index(v) for v in values], dtype=np.float32))
        else:
            cats, other = feat["categories"], feat.get("other")
            index = [cats.index(v) if v in cats else cats.index(other) for v in values]
            for c in range(len(cats)):
                columns.append(np.array([i == c for i in index], dtype=np.float32))
    return np.stack(columns, axis=1), y


def adult_lightgbm(out):
    """A 100-tree, depth-6 LightGBM on Adult's encoded columns, exported without ZipMap."""
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    x, y = adult_encoded()
    model = lightgbm.LGBMClassifier(n_estimators=100, max_depth=6, num_leaves=63, random_state=0, verbose=-1).fit(x, y)
    typed = [("input", FloatTensorType([None, x.shape[1]]))]
    onnx.save(convert_lightgbm(model, initial_types=typed, zipmap=False, target_opset=15), out)
    print(f"wrote {out}: 100 trees of depth 6 on {x.shape[0]} rows x {x.shape[1]} columns")


def adult_rare(out_dir):
    """A rare favourable class: adult.data with every `<=50K` row and, seeded, one `>50K` row in
    about ten and a half (3.0 % `>50K`), and two classifiers trained on it without class weights
    (scikit-learn's defaults), as most models in use are: they predict `>50K` for under 1 % of
    the rows, so explaining a refusal asks for a class the model rarely gives."""
    import os
    import random

    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    keep = random.Random(7)
    lines = [line for line in adult_lines("adult.data") if ">50K" not in line or keep.random() < 0.095]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "adult-rare.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    x, y = adult_encoded(lines)
    print(f"wrote {out_dir}/adult-rare.csv: {len(lines)} lines; {x.shape[0]} rows without a `?`, {y.mean():.1%} >50K")
    models = [
        ("lr", LogisticRegression(max_iter=2000)),
        ("mlp", MLPClassifier((13, 4), max_iter=300, random_state=0)),
    ]
    for name, model in models:
        model.fit(x, y)
        onx = convert_sklearn(
            model,
            initial_types=[("x", FloatTensorType([None, x.shape[1]]))],
            options={id(model): {"zipmap": False}},
            target_opset=15,
        )
        path = os.path.join(out_dir, f"adult-rare-{name}.onnx")
        with open(path, "wb") as f:
            f.write(onx.SerializeToString())
        print(f"wrote {path}: predicts >50K for {model.predict(x).mean():.2%} of the rows")


def main(argv):
    if len(argv) == 3 and argv[1] == "--sklearn":
        sklearn_fixtures(argv[2])
        return
    if len(argv) == 3 and argv[1] == "--trees":
        tree_fixtures(argv[2])
        return
    if len(argv) == 3 and argv[1] == "--adult-rare":
        adult_rare(argv[2])
        return
    if len(argv) == 3 and argv[1] == "--adult-lightgbm":
        adult_lightgbm(argv[2])
        return
    if len(argv) != 3:
        raise SystemExit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        model = json.load(f)
    if model.get("format") != FORMAT:
        raise SystemExit(f"{argv[1]}: not a {FORMAT} file")
    onnx.save(build(model), argv[2])
    print(f"wrote {argv[2]}")


if __name__ == "__main__":
    main(sys.argv)
