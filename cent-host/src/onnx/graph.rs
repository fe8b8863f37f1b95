//! Reading an ONNX graph as written (the protobuf, before tract plans it): which node makes a
//! value, a node's float attributes and constant tensors. Used to recognise the graphs cent
//! serves with its own code (`dense`, `forest`).

use tract_onnx::pb::{GraphProto, NodeProto, TensorProto, tensor_proto::DataType};

/// A graph, indexed by the values its nodes produce.
pub(super) struct Graph<'a> {
    pub(super) proto: &'a GraphProto,
}

impl<'a> Graph<'a> {
    pub(super) fn new(proto: &'a GraphProto) -> Self {
        Graph { proto }
    }

    /// The graph's one real input (an input that is not an initializer).
    pub(super) fn input(&self) -> Option<&'a str> {
        let inits: Vec<&str> = self.proto.initializer.iter().map(|t| t.name.as_str()).collect();
        let mut real = self.proto.input.iter().filter(|i| !inits.contains(&i.name.as_str()));
        match (real.next(), real.next()) {
            (Some(one), None) => Some(one.name.as_str()),
            _ => None,
        }
    }

    /// The node that produces `value`, and which of its outputs it is.
    pub(super) fn producer(&self, value: &str) -> Option<(&'a NodeProto, usize)> {
        self.proto.node.iter().find_map(|n| n.output.iter().position(|o| o == value).map(|i| (n, i)))
    }

    /// The float tensor `name` when it is an initializer (or a `Constant` node's value), with
    /// its shape.
    pub(super) fn constant(&self, name: &str) -> Option<(Vec<usize>, Vec<f32>)> {
        if let Some(t) = self.proto.initializer.iter().find(|t| t.name == name) {
            return floats(t);
        }
        let (node, _) = self.producer(name)?;
        if node.op_type != "Constant" {
            return None;
        }
        node.attribute.iter().find(|a| a.name == "value").and_then(|a| a.t.as_ref()).and_then(floats)
    }
}

/// The values of a `float32` tensor (from `float_data` or little-endian `raw_data`).
fn floats(t: &TensorProto) -> Option<(Vec<usize>, Vec<f32>)> {
    if t.data_type != DataType::Float as i32 {
        return None;
    }
    let shape: Vec<usize> = t.dims.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<_>>()?;
    let values: Vec<f32> = if t.raw_data.is_empty() {
        t.float_data.clone()
    } else {
        t.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    };
    (values.len() == shape.iter().product::<usize>()).then_some((shape, values))
}

/// Attribute `name` of `node` as an integer.
pub(super) fn int(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// Attribute `name` of `node` as a float.
pub(super) fn float(node: &NodeProto, name: &str) -> Option<f32> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.f)
}

/// Attribute `name` of `node` as a list of integers (empty when absent).
pub(super) fn ints<'a>(node: &'a NodeProto, name: &str) -> &'a [i64] {
    node.attribute.iter().find(|a| a.name == name).map_or(&[], |a| a.ints.as_slice())
}

/// Attribute `name` of `node` as a list of floats (empty when absent).
pub(super) fn floats_attr<'a>(node: &'a NodeProto, name: &str) -> &'a [f32] {
    node.attribute.iter().find(|a| a.name == name).map_or(&[], |a| a.floats.as_slice())
}

/// Attribute `name` of `node` as a list of strings (empty when absent; not UTF-8 counts as
/// absent).
pub(super) fn strings<'a>(node: &'a NodeProto, name: &str) -> Vec<&'a str> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map_or_else(Vec::new, |a| a.strings.iter().filter_map(|s| std::str::from_utf8(s).ok()).collect())
}

/// Attribute `name` of `node` as a string.
pub(super) fn string<'a>(node: &'a NodeProto, name: &str) -> Option<&'a str> {
    node.attribute.iter().find(|a| a.name == name).and_then(|a| std::str::from_utf8(&a.s).ok())
}

/// Follows `value` back through nodes that pass it on unchanged (`Identity`, a `Cast` to
/// float, a `Mul` by the constant 1) and returns the value they start from.
pub(super) fn unwrap_passthrough<'a>(graph: &Graph<'a>, mut value: &'a str) -> &'a str {
    while let Some((node, 0)) = graph.producer(value) {
        let next = match node.op_type.as_str() {
            "Identity" => node.input.first(),
            "Cast" if int(node, "to") == Some(DataType::Float as i64) => node.input.first(),
            "Mul" if node.input.len() == 2 => {
                let one = |name: &str| graph.constant(name).is_some_and(|(_, v)| v.iter().all(|&x| x == 1.0));
                if one(&node.input[1]) {
                    node.input.first()
                } else if one(&node.input[0]) {
                    node.input.get(1)
                } else {
                    None
                }
            }
            _ => None,
        };
        match next {
            Some(v) => value = v,
            None => break,
        }
    }
    value
}
