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
            let acc = self.bias[o] + dot(row, x);
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
        self.forward_batch(x)
    }

    /// Runs a row-major batch (`rows.len() == n * inputs`; a trailing partial row is ignored)
    /// and returns `n * outputs` values. A row gives the same bits alone or inside any batch.
    pub fn forward_batch(&self, rows: &[f32]) -> Vec<f32> {
        let width = self.inputs().max(1);
        let n = rows.len() / width;
        let mut out = Vec::with_capacity(n * self.outputs());
        let (mut cur, mut next) = (Vec::new(), Vec::new());
        for row in rows.chunks_exact(width) {
            cur.clear();
            cur.extend_from_slice(row);
            for layer in &self.layers {
                layer.forward_into(&cur, &mut next);
                std::mem::swap(&mut cur, &mut next);
            }
            out.extend_from_slice(&cur);
        }
        out
    }
}

/// `Σ w_i x_i` over the shorter of the two slices, in eight interleaved partial sums that the
/// compiler turns into SIMD lanes (a single running sum is one long dependency chain and cannot
/// be vectorised). The order of the additions depends only on the length.
fn dot(w: &[f32], x: &[f32]) -> f32 {
    const LANES: usize = 8;
    let n = w.len().min(x.len());
    let (w_chunks, w_tail) = w[..n].as_chunks::<LANES>();
    let (x_chunks, x_tail) = x[..n].as_chunks::<LANES>();
    let mut acc = [0.0f32; LANES];
    for (a, b) in w_chunks.iter().zip(x_chunks) {
        for l in 0..LANES {
            acc[l] += a[l] * b[l];
        }
    }
    let tail: f32 = w_tail.iter().zip(x_tail).map(|(a, b)| a * b).sum();
    let quads = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
    ((quads[0] + quads[2]) + (quads[1] + quads[3])) + tail
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
    fn test_dot_matches_a_plain_sum_at_every_length() {
        for n in [0, 1, 7, 8, 9, 16, 23, 100] {
            let w: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = w.iter().zip(&x).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum();
            assert!((f64::from(dot(&w, &x)) - plain).abs() < 1e-5, "n = {n}");
        }
    }

    #[test]
    fn test_a_row_gives_the_same_bits_alone_and_in_a_batch() {
        let layer = |inputs, outputs, activation| Dense {
            inputs,
            outputs,
            weights: (0..inputs * outputs).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect(),
            bias: (0..outputs).map(|o| o as f32 / 10.0).collect(),
            activation,
        };
        let mlp = Mlp { layers: vec![layer(19, 5, Activation::Relu), layer(5, 2, Activation::Softmax)] };
        let rows: Vec<f32> = (0..19 * 37).map(|i| ((i * 5 % 11) as f32) / 11.0).collect();
        let batch = mlp.forward_batch(&rows);
        for (r, row) in rows.chunks_exact(19).enumerate() {
            assert_eq!(mlp.forward(row), batch[r * 2..r * 2 + 2].to_vec());
        }
    }

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
