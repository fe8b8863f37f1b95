//! A graph that is a stack of dense layers, read into cent's own [`Mlp`].
//!
//! Recognised, from the probability output back to the input: a `Softmax` over the last axis,
//! or the binary head skl2onnx writes (`Sigmoid`, `Sub(1, p)`, `Concat([1 − p, p])`); below it
//! dense layers, each a `Gemm` (`transA = 0`) or a `MatMul` and an `Add` with constant
//! weights and bias, with an optional `Relu` between them. `Identity`, a `Cast` to float and a
//! `Mul` by 1 are skipped. Also recognised: a single `LinearClassifier` node (skl2onnx's
//! logistic regression), one dense layer: `post_transform = LOGISTIC` on a binary model with
//! one row of coefficients (`[1 − σ(s), σ(s)]`) or two mirrored ones (`[σ(−s), σ(s)]`, what
//! skl2onnx writes), or `SOFTMAX` with one row per class. Anything else is not a dense stack, and tract serves the graph.

use super::graph::{self, Graph};
use crate::layers::{Activation, Dense, Mlp};

/// The graph's dense layers, from the input to `output`, when it is such a stack taking
/// `n_cols` columns to `classes` probabilities.
pub(super) fn from_graph(graph: &Graph<'_>, output: &str, n_cols: usize, classes: usize) -> Option<Mlp> {
    if let Some(mlp) = linear_classifier(graph, output, n_cols, classes) {
        return Some(mlp);
    }
    let input = graph.input()?;
    let (mut layers, mut value) = head(graph, output)?;
    let mut activation = Activation::Identity;
    loop {
        let value_now = graph::unwrap_passthrough(graph, value);
        if value_now == input {
            break;
        }
        let (node, 0) = graph.producer(value_now)? else { return None };
        match node.op_type.as_str() {
            "Relu" if activation == Activation::Identity && !layers.is_empty() => {
                activation = Activation::Relu;
                value = node.input.first()?;
            }
            "Gemm" | "Add" => {
                let (mut layer, below) = dense(graph, node)?;
                layer.activation = std::mem::replace(&mut activation, Activation::Identity);
                layers.push(layer);
                value = below;
            }
            _ => return None,
        }
    }
    if activation != Activation::Identity {
        return None;
    }
    layers.reverse();
    let first = layers.first()?.inputs;
    let last = layers.last_mut()?;
    if last.activation != Activation::Identity || first != n_cols {
        return None;
    }
    last.activation = Activation::Softmax;
    let mlp = Mlp { layers };
    let chained = mlp.layers.windows(2).all(|w| w[0].outputs == w[1].inputs);
    (chained && mlp.outputs() == classes).then_some(mlp)
}

/// A `LinearClassifier` reading the graph's input and writing `output` (its second output, the
/// scores), as one layer under a softmax.
fn linear_classifier(graph: &Graph<'_>, output: &str, n_cols: usize, classes: usize) -> Option<Mlp> {
    let (node, 1) = graph.producer(graph::unwrap_passthrough(graph, output))? else { return None };
    if node.op_type != "LinearClassifier" || graph::unwrap_passthrough(graph, node.input.first()?) != graph.input()? {
        return None;
    }
    let weights = graph::floats_attr(node, "coefficients").to_vec();
    let rows = weights.len() / n_cols.max(1);
    if rows == 0 || rows * n_cols != weights.len() {
        return None;
    }
    let bias = match graph::floats_attr(node, "intercepts") {
        [] => vec![0.0; rows],
        b if b.len() == rows => b.to_vec(),
        _ => return None,
    };
    let logistic = graph::string(node, "post_transform") == Some("LOGISTIC");
    let mut layer = match rows {
        // One score `s` per row: `[1 − σ(s), σ(s)]`.
        1 if logistic && classes == 2 => {
            widen_sigmoid(Dense { inputs: n_cols, outputs: 1, weights, bias, activation: Activation::Identity })?
        }
        // skl2onnx's binary form: scores `[−s, s]`, each through the logistic function.
        2 if logistic && classes == 2 => {
            let (neg, pos) = weights.split_at(n_cols);
            let mirrored = neg.iter().zip(pos).all(|(a, b)| *a == -*b) && bias[0] == -bias[1];
            if !mirrored {
                return None;
            }
            let one = Dense {
                inputs: n_cols,
                outputs: 1,
                weights: pos.to_vec(),
                bias: vec![bias[1]],
                activation: Activation::Identity,
            };
            widen_sigmoid(one)?
        }
        r if r == classes && graph::string(node, "post_transform") == Some("SOFTMAX") => {
            Dense { inputs: n_cols, outputs: rows, weights, bias, activation: Activation::Identity }
        }
        _ => return None,
    };
    layer.activation = Activation::Softmax;
    Some(Mlp { layers: vec![layer] })
}

/// The output head: the layers it already implies (a sigmoid head becomes a two-way softmax
/// layer later) and the value below it. Returns an empty stack for a softmax head; a sigmoid
/// head's last layer is widened once it is read (see [`widen_sigmoid`]).
fn head<'a>(graph: &Graph<'a>, output: &'a str) -> Option<(Vec<Dense>, &'a str)> {
    let output = graph::unwrap_passthrough(graph, output);
    let (node, 0) = graph.producer(output)? else { return None };
    match node.op_type.as_str() {
        "Softmax" => {
            let axis = graph::int(node, "axis").unwrap_or(-1);
            (axis == -1 || axis == 1).then_some((Vec::new(), node.input.first()?.as_str()))
        }
        "Concat" => {
            let below = sigmoid_pair(graph, node)?;
            let (layer_node, 0) = graph.producer(graph::unwrap_passthrough(graph, below))? else { return None };
            let (layer, under) = dense(graph, layer_node)?;
            Some((vec![widen_sigmoid(layer)?], under))
        }
        _ => None,
    }
}

/// For `Concat([Sub(1, s), s], axis = 1)` with `s = Sigmoid(z)`: the value `z`.
fn sigmoid_pair<'a>(graph: &Graph<'a>, concat: &'a tract_onnx::pb::NodeProto) -> Option<&'a str> {
    let axis = graph::int(concat, "axis")?;
    let [neg, pos] = concat.input.as_slice() else { return None };
    let (sigmoid, 0) = graph.producer(pos)? else { return None };
    let (sub, 0) = graph.producer(neg)? else { return None };
    let one = sub.input.first().and_then(|c| graph.constant(c)).is_some_and(|(_, v)| v.iter().all(|&x| x == 1.0));
    let ok = (axis == 1 || axis == -1)
        && sigmoid.op_type == "Sigmoid"
        && sub.op_type == "Sub"
        && one
        && sub.input.get(1) == Some(pos);
    ok.then(|| sigmoid.input.first().map(String::as_str)).flatten()
}

/// A one-output layer `z` under a sigmoid, as a two-output layer whose softmax gives
/// `[1 − σ(z), σ(z)]`: the first output is the constant 0.
fn widen_sigmoid(layer: Dense) -> Option<Dense> {
    if layer.outputs != 1 {
        return None;
    }
    let mut weights = vec![0.0; layer.inputs];
    weights.extend_from_slice(&layer.weights);
    let bias = vec![0.0, layer.bias[0]];
    Some(Dense { inputs: layer.inputs, outputs: 2, weights, bias, activation: Activation::Identity })
}

/// One dense layer from a `Gemm`, or from an `Add` of a constant bias to a `MatMul` by
/// constant weights; and the value it reads.
fn dense<'a>(graph: &Graph<'a>, node: &'a tract_onnx::pb::NodeProto) -> Option<(Dense, &'a str)> {
    match node.op_type.as_str() {
        "Gemm" => gemm(graph, node),
        "Add" => {
            let [a, b] = node.input.as_slice() else { return None };
            let (bias_name, product) = if graph.constant(b).is_some() { (b, a) } else { (a, b) };
            let (_, bias) = graph.constant(bias_name)?;
            let (matmul, 0) = graph.producer(graph::unwrap_passthrough(graph, product))? else { return None };
            let [x, w] = matmul.input.as_slice() else { return None };
            if matmul.op_type != "MatMul" {
                return None;
            }
            let (shape, w) = graph.constant(w)?;
            let [inputs, outputs] = shape.as_slice() else { return None };
            let layer = from_columns(*inputs, *outputs, &w, 1.0, bias, 1.0)?;
            Some((layer, x.as_str()))
        }
        _ => None,
    }
}

/// `Gemm(x, B, C) = alpha · x · op(B) + beta · C`, with `x` not transposed.
fn gemm<'a>(graph: &Graph<'a>, node: &'a tract_onnx::pb::NodeProto) -> Option<(Dense, &'a str)> {
    if graph::int(node, "transA").unwrap_or(0) != 0 {
        return None;
    }
    let x = node.input.first()?;
    let (shape, b) = graph.constant(node.input.get(1)?)?;
    let [rows, cols] = shape.as_slice() else { return None };
    let (alpha, beta) = (graph::float(node, "alpha").unwrap_or(1.0), graph::float(node, "beta").unwrap_or(1.0));
    let bias = match node.input.get(2).filter(|c| !c.is_empty()) {
        Some(c) => graph.constant(c)?.1,
        None => Vec::new(),
    };
    let layer = if graph::int(node, "transB").unwrap_or(0) == 1 {
        // B is [outputs][inputs]: cent's own layout.
        let weights = b.iter().map(|w| alpha * w).collect();
        let bias = bias_of(bias, *rows, beta)?;
        Dense { inputs: *cols, outputs: *rows, weights, bias, activation: Activation::Identity }
    } else {
        from_columns(*rows, *cols, &b, alpha, bias, beta)?
    };
    Some((layer, x.as_str()))
}

/// A layer from weights stored `[inputs][outputs]` (ONNX `MatMul` order).
fn from_columns(inputs: usize, outputs: usize, w: &[f32], alpha: f32, bias: Vec<f32>, beta: f32) -> Option<Dense> {
    let mut weights = vec![0.0; inputs * outputs];
    for i in 0..inputs {
        for o in 0..outputs {
            weights[o * inputs + i] = alpha * w[i * outputs + o];
        }
    }
    let bias = bias_of(bias, outputs, beta)?;
    Some(Dense { inputs, outputs, weights, bias, activation: Activation::Identity })
}

/// The bias of `outputs` units: none (zeros), one value for all, or one per unit.
fn bias_of(bias: Vec<f32>, outputs: usize, beta: f32) -> Option<Vec<f32>> {
    match bias.len() {
        0 => Some(vec![0.0; outputs]),
        1 => Some(vec![beta * bias[0]; outputs]),
        n if n == outputs => Some(bias.into_iter().map(|b| beta * b).collect()),
        _ => None,
    }
}
