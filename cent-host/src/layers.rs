//! Plain f32 dense layers: the form in which trained weights leave burn.
//!
//! The host's full-precision inference (VAE encoder, built-in LR/MLP) runs on these, and the
//! exporter quantizes exactly these weights for the device.

use serde::{Deserialize, Serialize};

/// Activation applied after a dense layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    Identity,
    Relu,
    /// Softmax over the layer's outputs (classifier heads only; never quantized).
    Softmax,
}

/// One fully connected layer, `y = act(W x + b)`; `weights` is row-major `[outputs][inputs]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dense {
    pub inputs: usize,
    pub outputs: usize,
    pub weights: Vec<f32>,
    pub bias: Vec<f32>,
    pub activation: Activation,
}

impl Dense {
    /// Applies the layer to one input row, writing `outputs` values into `out`.
    pub fn forward_into(&self, x: &[f32], out: &mut Vec<f32>) {
        out.clear();
        for o in 0..self.outputs {
            let row = &self.weights[o * self.inputs..(o + 1) * self.inputs];
            let acc = row.iter().zip(x).fold(self.bias[o], |acc, (w, v)| acc + w * v);
            out.push(match self.activation {
                Activation::Relu => acc.max(0.0),
                Activation::Identity | Activation::Softmax => acc,
            });
        }
        if self.activation == Activation::Softmax {
            softmax_in_place(out);
        }
    }
}

/// A stack of dense layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mlp {
    pub layers: Vec<Dense>,
}

impl Mlp {
    pub fn inputs(&self) -> usize {
        self.layers.first().map_or(0, |l| l.inputs)
    }

    pub fn outputs(&self) -> usize {
        self.layers.last().map_or(0, |l| l.outputs)
    }

    /// Runs one row through every layer.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let mut cur = x.to_vec();
        let mut next = Vec::new();
        for layer in &self.layers {
            layer.forward_into(&cur, &mut next);
            std::mem::swap(&mut cur, &mut next);
        }
        cur
    }

    /// Runs a row-major batch (`rows.len() == n * inputs`) and returns `n * outputs` values.
    pub fn forward_batch(&self, rows: &[f32]) -> Vec<f32> {
        let width = self.inputs().max(1);
        rows.chunks_exact(width).flat_map(|r| self.forward(r)).collect()
    }
}

fn softmax_in_place(v: &mut [f32]) {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for e in v.iter_mut() {
        *e = (*e - max).exp();
        sum += *e;
    }
    for e in v.iter_mut() {
        *e /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_forward_relu_then_softmax() {
        let mlp = Mlp {
            layers: vec![
                Dense {
                    inputs: 2,
                    outputs: 2,
                    weights: vec![1.0, 0.0, 0.0, -1.0],
                    bias: vec![0.0, 0.0],
                    activation: Activation::Relu,
                },
                Dense {
                    inputs: 2,
                    outputs: 2,
                    weights: vec![1.0, 0.0, 0.0, 1.0],
                    bias: vec![0.0, 0.0],
                    activation: Activation::Softmax,
                },
            ],
        };
        let y = mlp.forward(&[2.0, 3.0]);
        // hidden = [2, 0]; softmax([2, 0])
        let e = (2.0f32).exp();
        assert!((y[0] - e / (e + 1.0)).abs() < 1e-6);
        assert!((y[0] + y[1] - 1.0).abs() < 1e-6);
    }
}
