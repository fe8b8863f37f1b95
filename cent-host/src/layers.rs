//! Plain f32 dense layers: the form in which trained weights leave burn.
//!
//! The host's full-precision inference (VAE encoder, built-in LR/MLP) runs on these, and the
//! exporter quantizes exactly these weights for the device. [`Batched`] is an [`Mlp`] laid out
//! for batches once, for a model asked again and again.

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
    ///
    /// Every output starts at its bias and adds `w·x` input by input, in input order, skipping
    /// zero inputs (one-hot and bag-of-words rows are mostly zeros). [`Mlp::forward_batch`] does
    /// the same additions in the same order, so a row gives the same bits either way.
    pub fn forward_into(&self, x: &[f32], out: &mut Vec<f32>) {
        out.clear();
        out.extend_from_slice(&self.bias[..self.outputs]);
        for (i, &v) in x.iter().enumerate().take(self.inputs) {
            if v != 0.0 {
                for (o, acc) in out.iter_mut().enumerate() {
                    *acc += self.weights[o * self.inputs + i] * v;
                }
            }
        }
        self.activate(out);
    }

    fn activate(&self, out: &mut [f32]) {
        activate(self.activation, out);
    }
}

fn activate(activation: Activation, out: &mut [f32]) {
    match activation {
        Activation::Relu => out.iter_mut().for_each(|v| *v = v.max(0.0)),
        Activation::Identity => {}
        Activation::Softmax => softmax_in_place(out),
    }
}

/// Lanes of one accumulator block: outputs are padded to a multiple of this, so adding one
/// input's contribution is a fixed number of whole-block operations the compiler vectorises.
const LANES: usize = 8;

/// A layer prepared for batches: the weights input-major and padded, `[inputs][blocks]`.
#[derive(Debug, Clone)]
struct Transposed {
    inputs: usize,
    outputs: usize,
    activation: Activation,
    blocks: usize,
    weights: Vec<[f32; LANES]>,
    bias: Vec<[f32; LANES]>,
}

impl Transposed {
    fn new(layer: &Dense) -> Self {
        let blocks = layer.outputs.div_ceil(LANES);
        let mut weights = vec![[0.0; LANES]; layer.inputs * blocks];
        for (o, row) in layer.weights.chunks_exact(layer.inputs.max(1)).enumerate().take(layer.outputs) {
            for (i, &w) in row.iter().enumerate() {
                weights[i * blocks + o / LANES][o % LANES] = w;
            }
        }
        let mut bias = vec![[0.0; LANES]; blocks];
        for (o, &b) in layer.bias.iter().enumerate().take(layer.outputs) {
            bias[o / LANES][o % LANES] = b;
        }
        Transposed { inputs: layer.inputs, outputs: layer.outputs, activation: layer.activation, blocks, weights, bias }
    }

    /// Padded output width: `blocks * LANES`.
    fn width(&self) -> usize {
        self.blocks * LANES
    }

    /// [`Dense::forward_into`] for every row of `input`, same additions in the same order.
    /// Each output row, `width()` values with junk in the padding lanes, is appended to `out`.
    /// `nonzero` is scratch.
    fn forward_rows(&self, input: &Batch<'_>, nonzero: &mut Vec<u32>, out: &mut Vec<f32>) {
        // Small layers keep their accumulators in registers (a block count known at compile
        // time, one dispatch per layer); wider ones accumulate block by block.
        match self.blocks {
            1 => self.rows_into::<1>(input, nonzero, out),
            2 => self.rows_into::<2>(input, nonzero, out),
            3 => self.rows_into::<3>(input, nonzero, out),
            4 => self.rows_into::<4>(input, nonzero, out),
            blocks => {
                for r in 0..input.n {
                    let x = input.row(r, self.inputs);
                    let count = nonzero_inputs(x, nonzero);
                    let start = out.len();
                    for (b, &bias) in self.bias.iter().enumerate() {
                        let a = nonzero[..count].iter().fold(bias, |a, &i| {
                            let i = i as usize;
                            axpy(a, &self.weights[i * blocks + b], x[i])
                        });
                        out.extend_from_slice(&a);
                    }
                    activate(self.activation, &mut out[start..start + self.outputs]);
                }
            }
        }
    }

    fn rows_into<const B: usize>(&self, input: &Batch<'_>, nonzero: &mut Vec<u32>, out: &mut Vec<f32>) {
        out.reserve(input.n * B * LANES);
        for r in 0..input.n {
            let x = input.row(r, self.inputs);
            let count = nonzero_inputs(x, nonzero);
            let mut acc = self.accumulate::<B>(x, &nonzero[..count]);
            if self.activation == Activation::Relu {
                // On the accumulators, padding lanes too (they are junk either way).
                for block in &mut acc {
                    *block = block.map(|v| v.max(0.0));
                }
                out.extend_from_slice(acc.as_flattened());
            } else {
                let start = out.len();
                out.extend_from_slice(acc.as_flattened());
                activate(self.activation, &mut out[start..start + self.outputs]);
            }
        }
    }

    fn accumulate<const B: usize>(&self, x: &[f32], nonzero: &[u32]) -> [[f32; LANES]; B] {
        // Built from the bias directly (a zeroed array first would cost a fill call per row).
        let mut acc: [[f32; LANES]; B] = std::array::from_fn(|b| self.bias[b]);
        // The weights by input, `B` blocks each; `nonzero` indexes `x`, whose width is the
        // layer's inputs (a missing input or weight row is skipped, which never happens, rather
        // than a panic path that keeps the accumulators out of registers).
        let (by_input, _) = self.weights.as_chunks::<B>();
        for &i in nonzero {
            let i = i as usize;
            let (Some(&v), Some(w)) = (x.get(i), by_input.get(i)) else { continue };
            for b in 0..B {
                acc[b] = axpy(acc[b], &w[b], v);
            }
        }
        acc
    }
}

/// `n` rows in a buffer: row `r` starts at `r * stride` and has `valid` values.
struct Batch<'b> {
    data: &'b [f32],
    stride: usize,
    valid: usize,
    n: usize,
}

impl Batch<'_> {
    /// Row `r`'s first `inputs` values (at most its `valid` ones).
    fn row(&self, r: usize, inputs: usize) -> &[f32] {
        &self.data[r * self.stride..r * self.stride + self.valid.min(inputs)]
    }
}

/// For each 8-bit mask, the positions of its set bits in increasing order (then padding).
const SET_BITS: [[u32; 8]; 256] = {
    let mut table = [[0u32; 8]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut bit, mut n) = (0, 0);
        while bit < 8 {
            if mask & (1 << bit) != 0 {
                table[mask][n] = bit as u32;
                n += 1;
            }
            bit += 1;
        }
        mask += 1;
    }
    table
};

/// For each 8-bit mask, how many bits are set (a table: without the `popcnt` instruction in
/// the baseline x86-64 target, `count_ones` is a dozen instructions).
const SET_COUNTS: [u8; 256] = {
    let mut counts = [0u8; 256];
    let mut mask = 0;
    while mask < 256 {
        counts[mask] = (mask as u32).count_ones() as u8;
        mask += 1;
    }
    counts
};

/// Writes the indices of `x`'s non-zero values, in order, to the front of `out` and returns how
/// many there are. Eight values at a time and without a data-dependent branch (which input of
/// a one-hot group is set varies row to row and would defeat branch prediction): the values
/// give an 8-bit mask, and a table lists the mask's set bits.
#[inline]
pub(crate) fn nonzero_inputs(x: &[f32], out: &mut Vec<u32>) -> usize {
    // Every chunk writes 8 slots, of which the next chunk overwrites the unused ones. (Grown,
    // never shrunk: one scratch serves rows of several widths without refilling.)
    if out.len() < x.len() + 8 {
        out.resize(x.len() + 8, 0);
    }
    let (chunks, rest) = x.as_chunks::<8>();
    let mut count = 0;
    for (c, chunk) in chunks.iter().enumerate() {
        count = list_nonzero(chunk, (c * 8) as u32, out, count);
    }
    // The tail, zero-padded to a whole chunk (padding adds nothing to the list).
    if !rest.is_empty() {
        let tail: [f32; 8] = std::array::from_fn(|l| rest.get(l).copied().unwrap_or(0.0));
        count = list_nonzero(&tail, (chunks.len() * 8) as u32, out, count);
    }
    count
}

/// Lists the non-zero positions of one chunk (offset by `base`) at `out[count..]`; returns the
/// new count. `out` has 8 slots past `count`.
#[inline(always)]
fn list_nonzero(chunk: &[f32; 8], base: u32, out: &mut [u32], count: usize) -> usize {
    let mut mask = 0;
    for (l, &v) in chunk.iter().enumerate() {
        mask |= usize::from(v != 0.0) << l;
    }
    if let Some(slots) = out.get_mut(count..count + 8).and_then(|s| s.as_mut_array::<8>()) {
        *slots = SET_BITS[mask].map(|p| base + p);
    }
    count + usize::from(SET_COUNTS[mask])
}

/// `a + w·v`, lane by lane, on values (the accumulator in registers, not behind a pointer
/// that might alias the weights).
#[inline(always)]
fn axpy(mut a: [f32; LANES], w: &[f32; LANES], v: f32) -> [f32; LANES] {
    for l in 0..LANES {
        a[l] += w[l] * v;
    }
    a
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
    ///
    /// The batch goes layer by layer: each layer runs over every row before the next one
    /// starts, from a buffer of padded rows. A single row skips the batch layout (preparing
    /// it would cost more than the row) and goes through [`Dense::forward_into`].
    pub fn forward_batch(&self, rows: &[f32]) -> Vec<f32> {
        let width = self.inputs().max(1);
        let n = rows.len() / width;
        let well_formed =
            |l: &Dense| l.bias.len() >= l.outputs && l.weights.len() >= l.inputs.saturating_mul(l.outputs);
        if n == 1 && !self.layers.is_empty() && self.layers.iter().all(well_formed) {
            let (mut cur, mut next) = (Vec::new(), Vec::new());
            let mut input = &rows[..width];
            for layer in &self.layers {
                layer.forward_into(input, &mut next);
                std::mem::swap(&mut cur, &mut next);
                input = &cur;
            }
            return cur;
        }
        Batched::new(self).forward_batch(rows)
    }
}

/// An [`Mlp`] laid out for batches once ([`Batched::new`]), where [`Mlp::forward_batch`] lays it
/// out on every call: for a model asked many times, each time about a few rows (the built-in
/// classifiers, a dense ONNX export). The same bits as [`Mlp::forward_batch`] and
/// [`Mlp::forward`], row by row.
#[derive(Debug, Clone)]
pub struct Batched {
    inputs: usize,
    layers: Vec<Transposed>,
}

impl Batched {
    /// `mlp`'s layers laid out for batches (each layer's weights input-major, padded to blocks
    /// of eight outputs).
    pub fn new(mlp: &Mlp) -> Self {
        Batched { inputs: mlp.inputs(), layers: mlp.layers.iter().map(Transposed::new).collect() }
    }

    /// The number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// [`Mlp::forward_batch`] on the layers as laid out.
    pub fn forward_batch(&self, rows: &[f32]) -> Vec<f32> {
        let width = self.inputs.max(1);
        let n = rows.len() / width;
        let (mut cur, mut next, mut nonzero) = (Vec::new(), Vec::new(), Vec::new());
        // The first layer reads the rows in place; later ones the previous layer's outputs.
        let mut input = Batch { data: &rows[..n * width], stride: width, valid: width, n };
        for layer in &self.layers {
            next.clear();
            layer.forward_rows(&input, &mut nonzero, &mut next);
            std::mem::swap(&mut cur, &mut next);
            input = Batch { data: &cur, stride: layer.width(), valid: layer.outputs, n };
        }
        let mut out = Vec::with_capacity(n * input.valid);
        for r in 0..n {
            // Value by value (a copy call per row would cost more than the few values it
            // moves), from an iterator of known length: no capacity check per value.
            out.extend(input.row(r, input.valid).iter().copied());
        }
        out
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
    fn test_a_row_gives_the_same_bits_alone_and_in_a_batch() {
        let layer = |inputs, outputs, activation| Dense {
            inputs,
            outputs,
            weights: (0..inputs * outputs).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect(),
            bias: (0..outputs).map(|o| o as f32 / 10.0).collect(),
            activation,
        };
        // Hidden widths that take each accumulation path: one, two and four register blocks,
        // and the block-by-block fallback.
        for width in [5, 13, 32, 45] {
            let mlp = Mlp { layers: vec![layer(19, width, Activation::Relu), layer(width, 2, Activation::Softmax)] };
            // Every fifth value is zero (skipped by both paths).
            let rows: Vec<f32> = (0..19 * 37).map(|i| ((i * 5 % 11) as f32) / 11.0).collect();
            let batch = mlp.forward_batch(&rows);
            // Laid out once and asked again, and asked a row at a time: the same bits.
            let batched = Batched::new(&mlp);
            assert_eq!(batched.forward_batch(&rows), batch, "width {width}");
            assert_eq!(batched.forward_batch(&rows), batch, "width {width}, asked again");
            for (r, row) in rows.chunks_exact(19).enumerate() {
                assert_eq!(batched.forward_batch(row), batch[r * 2..r * 2 + 2].to_vec(), "width {width}");
            }
            let (mut hidden, mut out) = (Vec::new(), Vec::new());
            for (r, row) in rows.chunks_exact(19).enumerate() {
                assert_eq!(mlp.forward(row), batch[r * 2..r * 2 + 2].to_vec());
                // The per-row path, layer by layer, gives the same bits.
                mlp.layers[0].forward_into(row, &mut hidden);
                mlp.layers[1].forward_into(&hidden, &mut out);
                assert_eq!(out, batch[r * 2..r * 2 + 2].to_vec(), "width {width}");
                // And agrees with a plain double-precision evaluation.
                let l = &mlp.layers[0];
                for (o, h) in hidden.iter().enumerate() {
                    let z: f64 = (0..19).map(|i| f64::from(l.weights[o * 19 + i]) * f64::from(row[i])).sum();
                    let plain = (z + f64::from(l.bias[o])).max(0.0);
                    assert!((f64::from(*h) - plain).abs() < 1e-5, "width {width}, output {o}");
                }
            }
        }
    }

    #[test]
    fn test_three_layers_give_the_same_bits_layer_by_layer_and_in_a_batch() {
        // An identity head (its zeros keep their sign in the output). Hidden ReLU outputs are
        // often exactly zero; biases of +0 and -0 and all-zero rows make sums that stay zero,
        // where only the sign would tell two orders of addition apart.
        let mut seed = 11u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..40 {
            let zero_bias = if case % 2 == 0 { 0.0 } else { -0.0 };
            let mut layer = |inputs: usize, outputs: usize, activation| Dense {
                inputs,
                outputs,
                weights: (0..inputs * outputs).map(|_| (next() % 17) as f32 / 8.0 - 1.0).collect(),
                bias: (0..outputs)
                    .map(|o| if o % 3 == 0 { zero_bias } else { (next() % 9) as f32 / 8.0 - 0.5 })
                    .collect(),
                activation,
            };
            let width = [3, 8, 13, 40][case % 4];
            let mlp = Mlp {
                layers: vec![
                    layer(19, width, Activation::Relu),
                    layer(width, 6, Activation::Relu),
                    layer(6, 3, Activation::Identity),
                ],
            };
            let rows: Vec<f32> = (0..19 * 30)
                .map(
                    |i| if i / 19 % 5 == 0 || next() % 3 == 0 { [0.0, -0.0][i % 2] } else { (next() % 7) as f32 / 7.0 },
                )
                .collect();
            let batch = mlp.forward_batch(&rows);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
            assert_eq!(bits(&Batched::new(&mlp).forward_batch(&rows)), bits(&batch), "case {case}");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (r, row) in rows.chunks_exact(19).enumerate() {
                mlp.layers[0].forward_into(row, &mut a);
                mlp.layers[1].forward_into(&a, &mut b);
                mlp.layers[2].forward_into(&b, &mut a);
                assert_eq!(bits(&a), bits(&batch[r * 3..r * 3 + 3]), "case {case}, row {r}");
            }
        }
    }

    #[test]
    fn test_nonzero_inputs_match_a_plain_filter() {
        let specials = [0.0, -0.0, 1.0, -2.5, f32::NAN, f32::INFINITY, f32::MIN_POSITIVE, -f32::MIN_POSITIVE / 2.0];
        let mut out = Vec::new();
        for len in [0, 1, 7, 8, 9, 16, 23, 108] {
            for seed in 0..20usize {
                let x: Vec<f32> =
                    (0..len).map(|i| specials[(i * 7 + seed * 13 + i * i * seed) % specials.len()]).collect();
                let count = nonzero_inputs(&x, &mut out);
                let plain: Vec<u32> = (0..len as u32).filter(|&i| x[i as usize] != 0.0).collect();
                assert_eq!(&out[..count], plain.as_slice(), "len {len}, seed {seed}");
            }
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
