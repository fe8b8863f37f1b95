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


def main(argv):
    if len(argv) == 3 and argv[1] == "--sklearn":
        sklearn_fixtures(argv[2])
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
