//! Post-training quantization of a plain f32 [`layers::Mlp`] into the device's A16W16 or
//! A16W8 form.
//!
//! Weights become symmetric int16 or int8 per output channel ([`WeightWidth`]: `[-32767, 32767]`
//! or `[-127, 127]`, zero point 0); activations are symmetric int16 with one scale per layer
//! output, taken from the float reference's max-abs over calibration rows plus [`HEADROOM`];
//! biases are int32 (int64 with int16 weights) at scale `in_scale · w_scale[o]`, and with int8
//! weights take back the mean shift the rounded weights give the output over the calibration
//! rows (bias correction: `b − Σ (w_q − w) · mean input`); each channel
//! gets a Q31 multiplier + shift for `in_scale · w_scale[o] / out_scale`. A softmax
//! head is exported as identity logits (softmax is monotonic, so argmax is unchanged).
//!
//! The result owns its bytes in exactly the layout [`cent_nostd::encoder::DenseParts`] borrows,
//! so [`QuantizedMlp::view`] runs the very integer code the device runs.

use crate::layers::{self, Activation};
use cent_nostd::capacity::{LAYERS, WIDTH};
use cent_nostd::encoder::{self, DenseParts, EncoderError, WeightWidth};
use cent_nostd::quant::{self, QuantError};
use serde::{Deserialize, Serialize};

/// Calibration max-abs is widened by this factor before it becomes an int16 range, so that
/// rows slightly outside the calibration set do not saturate.
pub const HEADROOM: f64 = 1.1;

/// Why an MLP cannot be quantized for the device.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QuantizeError {
    #[error("mlp has no layers")]
    Empty,
    #[error("mlp has {layers} layers, the device holds at most {LAYERS}")]
    TooManyLayers { layers: usize },
    #[error("layer {layer} has width {width}, expected 1..={WIDTH}")]
    Width { layer: usize, width: usize },
    #[error("layer {layer}: {what} has {found} values, expected {expected}")]
    Shape { layer: usize, what: &'static str, expected: usize, found: usize },
    #[error("layer {layer} takes {inputs} inputs but the previous layer gives {previous}")]
    Chain { layer: usize, inputs: usize, previous: usize },
    #[error("layer {layer}: softmax is only supported as the last layer")]
    Softmax { layer: usize },
    #[error("layer {layer} has a non-finite weight or bias")]
    NonFiniteWeight { layer: usize },
    #[error("calibration has {len} values, expected a non-empty multiple of {inputs}")]
    Calibration { len: usize, inputs: usize },
    #[error("calibration row {row} has a non-finite value")]
    CalibrationValue { row: usize },
    #[error("layer {layer} gives non-finite outputs on the calibration rows")]
    NonFiniteActivation { layer: usize },
    /// The channel's weights are tiny next to its bias: the bias in accumulator steps
    /// (input scale times weight scale) exceeds what the width stores, `limit`.
    #[error("layer {layer} output {output}: bias {bias} does not fit {limit} at scale {scale:e}")]
    BiasRange { layer: usize, output: usize, bias: f32, scale: f64, limit: &'static str },
    #[error("layer {layer} output {output}: requantization multiplier: {source}")]
    Multiplier { layer: usize, output: usize, source: QuantError },
    #[error("quantized mlp rejected by the device encoder: {0}")]
    Encoder(#[from] EncoderError),
}

/// One quantized layer with owned parameter bytes (the layout of [`DenseParts`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantizedLayer {
    pub inputs: u16,
    pub outputs: u16,
    /// [`encoder::Activation::code`].
    pub activation: u8,
    /// [`WeightWidth::code`]: bytes per weight.
    pub weight_width: u8,
    /// Weights as bytes (int16 little-endian or int8), row-major `[outputs][inputs]`.
    pub weights: Vec<u8>,
    /// Little-endian per output: i32 with int8 weights, i64 with int16.
    pub bias: Vec<u8>,
    /// i32 little-endian Q31 multiplier per output.
    pub multiplier: Vec<u8>,
    /// i8 shift per output, as bytes.
    pub shift: Vec<u8>,
    /// Real value of one weight step, per output channel (diagnostics; the device does not need it).
    pub weight_scales: Vec<f32>,
    /// Real value of one step of this layer's int16 output.
    pub output_scale: f32,
}

impl QuantizedLayer {
    /// Borrowed parts for [`encoder::Dense::new`].
    pub fn parts(&self) -> DenseParts<'_> {
        DenseParts {
            inputs: self.inputs,
            outputs: self.outputs,
            activation: self.activation,
            weight_width: self.weight_width,
            weights: &self.weights,
            bias: &self.bias,
            multiplier: &self.multiplier,
            shift: &self.shift,
        }
    }

    fn parameter_bytes(&self) -> usize {
        self.weights.len() + self.bias.len() + self.multiplier.len() + self.shift.len()
    }
}

/// A quantized MLP: its layers and the scales of its float input and int16 output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantizedMlp {
    pub layers: Vec<QuantizedLayer>,
    /// Real value of one int16 input step.
    pub input_scale: f32,
    /// Real value of one int16 output step (the last layer's `output_scale`).
    pub output_scale: f32,
}

impl QuantizedMlp {
    /// Borrowed parts of every layer, in order.
    pub fn parts(&self) -> Vec<DenseParts<'_>> {
        self.layers.iter().map(QuantizedLayer::parts).collect()
    }

    /// The validated device view (the same integer code the device runs).
    ///
    /// # Errors
    /// The device's [`EncoderError`] when the layers or scales are invalid (never for the output
    /// of [`quantize_mlp`]; possible for a hand-edited or deserialized value).
    pub fn view(&self) -> Result<encoder::Mlp<'_>, EncoderError> {
        encoder::Mlp::new(&self.parts(), self.input_scale, self.output_scale)
    }

    /// Runs one row through the device code and dequantizes the outputs.
    ///
    /// # Errors
    /// As [`QuantizedMlp::view`] and [`encoder::Mlp::forward`].
    pub fn forward(&self, x: &[f32]) -> Result<Vec<f32>, EncoderError> {
        let view = self.view()?;
        let mut out = vec![0.0; view.outputs()];
        view.forward_dequantized(x, &mut out)?;
        Ok(out)
    }

    /// Flash bytes of the parameter arrays the device borrows (weights, biases, multipliers,
    /// shifts); shapes, scales and bundle framing are not counted.
    pub fn byte_size(&self) -> usize {
        self.layers.iter().map(QuantizedLayer::parameter_bytes).sum()
    }
}

/// Quantizes `mlp` to weights of `width` with activation ranges calibrated on `calibration`
/// (row-major rows of `mlp.inputs()` values, typically training rows).
///
/// # Errors
/// A [`QuantizeError`] naming the layer (and output channel) that does not fit the device:
/// shape, capacity, softmax placement, non-finite values, or an unrepresentable bias/multiplier.
pub fn quantize_mlp(mlp: &layers::Mlp, calibration: &[f32], width: WeightWidth) -> Result<QuantizedMlp, QuantizeError> {
    check_mlp(mlp)?;
    let inputs = mlp.inputs();
    if calibration.is_empty() || !calibration.len().is_multiple_of(inputs) {
        return Err(QuantizeError::Calibration { len: calibration.len(), inputs });
    }
    let ranges = calibrate(mlp, calibration)?;
    let input_scale = activation_scale(ranges.input);
    let mut in_scale = input_scale;
    let mut layers = Vec::with_capacity(mlp.layers.len());
    for (index, (dense, &max_abs)) in mlp.layers.iter().zip(&ranges.outputs).enumerate() {
        let out_scale = activation_scale(max_abs);
        layers.push(quantize_layer(index, dense, &ranges.input_means[index], in_scale, out_scale, width)?);
        in_scale = out_scale;
    }
    let quantized = QuantizedMlp { layers, input_scale, output_scale: in_scale };
    quantized.view()?;
    Ok(quantized)
}

/// Shapes, capacities, chaining, softmax placement and finiteness of the float model.
fn check_mlp(mlp: &layers::Mlp) -> Result<(), QuantizeError> {
    if mlp.layers.is_empty() {
        return Err(QuantizeError::Empty);
    }
    if mlp.layers.len() > LAYERS {
        return Err(QuantizeError::TooManyLayers { layers: mlp.layers.len() });
    }
    let last = mlp.layers.len() - 1;
    let mut previous = mlp.inputs();
    for (layer, dense) in mlp.layers.iter().enumerate() {
        check_dense(layer, dense)?;
        if dense.inputs != previous {
            return Err(QuantizeError::Chain { layer, inputs: dense.inputs, previous });
        }
        if dense.activation == Activation::Softmax && layer != last {
            return Err(QuantizeError::Softmax { layer });
        }
        previous = dense.outputs;
    }
    Ok(())
}

fn check_dense(layer: usize, dense: &layers::Dense) -> Result<(), QuantizeError> {
    for width in [dense.inputs, dense.outputs] {
        if width == 0 || width > WIDTH {
            return Err(QuantizeError::Width { layer, width });
        }
    }
    let shape = |what, expected: usize, found: usize| {
        if expected == found { Ok(()) } else { Err(QuantizeError::Shape { layer, what, expected, found }) }
    };
    shape("weights", dense.inputs * dense.outputs, dense.weights.len())?;
    shape("bias", dense.outputs, dense.bias.len())?;
    if !dense.weights.iter().chain(&dense.bias).all(|v| v.is_finite()) {
        return Err(QuantizeError::NonFiniteWeight { layer });
    }
    Ok(())
}

/// Max-abs of the input and of every layer's output over the calibration rows, and the mean
/// of every layer's input.
#[derive(Debug)]
struct Ranges {
    input: f32,
    outputs: Vec<f32>,
    input_means: Vec<Vec<f64>>,
}

/// Runs the float reference (softmax replaced by identity logits) over every calibration row.
fn calibrate(mlp: &layers::Mlp, calibration: &[f32]) -> Result<Ranges, QuantizeError> {
    let logits = logits_model(mlp);
    let mut ranges = Ranges {
        input: 0.0,
        outputs: vec![0.0; logits.layers.len()],
        input_means: logits.layers.iter().map(|d| vec![0.0; d.inputs]).collect(),
    };
    let (mut cur, mut next) = (Vec::new(), Vec::new());
    let rows = calibration.len() / mlp.inputs();
    for (row, x) in calibration.chunks_exact(mlp.inputs()).enumerate() {
        if !x.iter().all(|v| v.is_finite()) {
            return Err(QuantizeError::CalibrationValue { row });
        }
        ranges.input = ranges.input.max(max_abs(x));
        cur.clear();
        cur.extend_from_slice(x);
        for ((dense, range), mean) in logits.layers.iter().zip(&mut ranges.outputs).zip(&mut ranges.input_means) {
            for (m, &v) in mean.iter_mut().zip(&cur) {
                *m += f64::from(v) / rows as f64;
            }
            dense.forward_into(&cur, &mut next);
            *range = range.max(max_abs(&next));
            std::mem::swap(&mut cur, &mut next);
        }
    }
    if let Some(layer) = ranges.outputs.iter().position(|r| !r.is_finite()) {
        return Err(QuantizeError::NonFiniteActivation { layer });
    }
    Ok(ranges)
}

/// The same model with a softmax head turned into identity logits.
fn logits_model(mlp: &layers::Mlp) -> layers::Mlp {
    let mut logits = mlp.clone();
    for dense in &mut logits.layers {
        if dense.activation == Activation::Softmax {
            dense.activation = Activation::Identity;
        }
    }
    logits
}

fn max_abs(values: &[f32]) -> f32 {
    values.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// int16 step for a calibrated max-abs (with [`HEADROOM`]); a dead layer (all zeros) gets
/// the step of the range `[-1, 1]`.
fn activation_scale(max_abs: f32) -> f32 {
    let range = if max_abs > 0.0 { max_abs as f64 * HEADROOM } else { 1.0 };
    (range / quant::I16_MAX as f64) as f32
}

/// Quantizes one layer given the mean of its input over the calibration rows and the real steps
/// of its int16 input and output. With int8 weights each channel's bias also takes back the
/// mean its rounded weights move the output by (`Σ (w_q − w) · mean input`), so that rounding
/// does not shift the layer's outputs on average; int16 weights round too finely to need it.
fn quantize_layer(
    layer: usize,
    dense: &layers::Dense,
    input_mean: &[f64],
    in_scale: f32,
    out_scale: f32,
    width: WeightWidth,
) -> Result<QuantizedLayer, QuantizeError> {
    let outputs = dense.outputs;
    let mut q = QuantizedLayer {
        inputs: dense.inputs as u16,
        outputs: outputs as u16,
        activation: device_activation(dense.activation).code(),
        weight_width: width.code(),
        weights: Vec::with_capacity(dense.weights.len() * width.bytes()),
        bias: Vec::with_capacity(4 * outputs),
        multiplier: Vec::with_capacity(4 * outputs),
        shift: Vec::with_capacity(outputs),
        weight_scales: Vec::with_capacity(outputs),
        output_scale: out_scale,
    };
    for (output, (row, &bias)) in dense.weights.chunks_exact(dense.inputs).zip(&dense.bias).enumerate() {
        let w_scale = weight_scale(row, width);
        let mut shift_of_mean = 0.0f64;
        for (&w, &mean) in row.iter().zip(input_mean) {
            let step = quantize_weight(w, w_scale, width);
            shift_of_mean += (f64::from(step) * w_scale - f64::from(w)) * mean;
            match width {
                WeightWidth::I8 => q.weights.push(step as i8 as u8),
                WeightWidth::I16 => q.weights.extend(step.to_le_bytes()),
            }
        }
        let bias = match width {
            WeightWidth::I8 => (f64::from(bias) - shift_of_mean) as f32,
            WeightWidth::I16 => bias,
        };
        let acc_scale = in_scale as f64 * w_scale;
        let bias_q = quantize_bias(bias, acc_scale, width).ok_or(QuantizeError::BiasRange {
            layer,
            output,
            bias,
            scale: acc_scale,
            limit: match width {
                WeightWidth::I8 => "int32 (int8 weights; with int16 weights the bias is int64)",
                WeightWidth::I16 => "int64 (up to 2^53)",
            },
        })?;
        match width {
            WeightWidth::I8 => q.bias.extend((bias_q as i32).to_le_bytes()),
            WeightWidth::I16 => q.bias.extend(bias_q.to_le_bytes()),
        }
        let (m, s) = quant::quantize_multiplier(acc_scale / out_scale as f64)
            .map_err(|source| QuantizeError::Multiplier { layer, output, source })?;
        q.multiplier.extend(m.to_le_bytes());
        q.shift.push(s as u8);
        q.weight_scales.push(w_scale as f32);
    }
    Ok(q)
}

/// Softmax is monotonic: the device keeps identity logits.
fn device_activation(activation: Activation) -> encoder::Activation {
    match activation {
        Activation::Relu => encoder::Activation::Relu,
        Activation::Identity | Activation::Softmax => encoder::Activation::Identity,
    }
}

/// Symmetric per-channel step `max|w| / width.max()` (127 or 32767); an all-zero row gets
/// step 1 (its weights are 0).
fn weight_scale(row: &[f32], width: WeightWidth) -> f64 {
    let max = row.iter().fold(0.0f64, |m, &w| m.max((w as f64).abs()));
    if max > 0.0 { max / width.max() as f64 } else { 1.0 }
}

/// `round(w / scale)` clamped to the width's symmetric range (it fits i16 for both widths).
fn quantize_weight(w: f32, scale: f64, width: WeightWidth) -> i16 {
    let max = width.max() as f64;
    (w as f64 / scale).round().clamp(-max, max) as i16
}

/// `round(b / scale)`, or `None` when it does not fit the width's bias (int32 with int8
/// weights; int64 with int16, of which 2^53 is used so that the f64 is exact).
fn quantize_bias(bias: f32, scale: f64, width: WeightWidth) -> Option<i64> {
    let q = (bias as f64 / scale).round();
    let max = match width {
        WeightWidth::I8 => i32::MAX as f64,
        WeightWidth::I16 => (1u64 << 53) as f64,
    };
    (q.abs() <= max).then_some(q as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn dense(
        inputs: usize,
        outputs: usize,
        weights: Vec<f32>,
        bias: Vec<f32>,
        activation: Activation,
    ) -> layers::Dense {
        layers::Dense { inputs, outputs, weights, bias, activation }
    }

    /// Uniform in `[lo, hi)` from the top 24 bits.
    fn uniform(rng: &mut Xoshiro256PlusPlus, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// Glorot-uniform weights, small uniform biases.
    fn random_dense(
        rng: &mut Xoshiro256PlusPlus,
        inputs: usize,
        outputs: usize,
        activation: Activation,
    ) -> layers::Dense {
        let limit = (6.0 / (inputs + outputs) as f32).sqrt();
        let weights = (0..inputs * outputs).map(|_| uniform(rng, -limit, limit)).collect();
        let bias = (0..outputs).map(|_| uniform(rng, -0.1, 0.1)).collect();
        dense(inputs, outputs, weights, bias, activation)
    }

    fn random_mlp(seed: u64, widths: &[usize], last: Activation) -> layers::Mlp {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n = widths.len() - 1;
        let layers = (0..n)
            .map(|i| {
                let activation = if i + 1 == n { last } else { Activation::Relu };
                random_dense(&mut rng, widths[i], widths[i + 1], activation)
            })
            .collect();
        layers::Mlp { layers }
    }

    /// Rows in `[0, 1]` like min-max encoded features.
    fn random_rows(seed: u64, rows: usize, inputs: usize) -> Vec<f32> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..rows * inputs).map(|_| uniform(&mut rng, 0.0, 1.0)).collect()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
        let norm = |v: &[f32]| v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        dot / (norm(a) * norm(b))
    }

    #[test]
    fn test_quantize_tiny_layer_by_hand() {
        // y = 0.25·x0 − 1.0·x1 + 0.25 on rows (1, 0) and (0, 1): outputs 0.5 and −0.75.
        let mlp = layers::Mlp { layers: vec![dense(2, 1, vec![0.25, -1.0], vec![0.25], Activation::Identity)] };
        let q = quantize_mlp(&mlp, &[1.0, 0.0, 0.0, 1.0], WeightWidth::I8).unwrap();
        let s_in = 1.1 / 32_767.0;
        let s_out = 0.75 * 1.1 / 32_767.0;
        assert!((q.input_scale as f64 / s_in - 1.0).abs() < 1e-6);
        assert!((q.output_scale as f64 / s_out - 1.0).abs() < 1e-6);
        let layer = &q.layers[0];
        assert_eq!(layer.weights, vec![32, (-127i8) as u8]); // 0.25 · 127 = 31.75 -> 32
        assert_eq!(layer.activation, 0);
        // The bias takes back the rounding's mean shift: (32/127 − 0.25) · mean x0 (0.5).
        let bias = i32::from_le_bytes(layer.bias[..4].try_into().unwrap());
        let corrected = 0.25 - (32.0 / 127.0 - 0.25) * 0.5;
        assert!((bias as f64 - corrected / (s_in / 127.0)).abs() <= 1.0, "bias {bias}");
        let m = i32::from_le_bytes(layer.multiplier[..4].try_into().unwrap());
        let real = quant::multiplier_value(m, layer.shift[0] as i8);
        assert!((real / (s_in / 127.0 / s_out) - 1.0).abs() < 1e-6, "multiplier {real}");
        assert_eq!(q.byte_size(), 2 + 4 + 4 + 1);
        let y = q.forward(&[1.0, 0.0]).unwrap();
        assert!((y[0] - 0.5).abs() < 0.01, "{y:?}");
    }

    #[test]
    fn test_random_mlps_track_float_reference() {
        // Bound: 1.5 % of the float output range, for several seeded random 3-layer MLPs.
        for seed in 0..5u64 {
            let mlp = random_mlp(seed, &[10, 24, 16, 6], Activation::Identity);
            let q = quantize_mlp(&mlp, &random_rows(100 + seed, 400, 10), WeightWidth::I8).unwrap();
            let test_rows = random_rows(200 + seed, 100, 10);
            let (mut worst, mut range) = (0.0f32, 0.0f32);
            for x in test_rows.chunks_exact(10) {
                let want = mlp.forward(x);
                let got = q.forward(x).unwrap();
                range = range.max(max_abs(&want));
                worst = want.iter().zip(&got).fold(worst, |m, (a, b)| m.max((a - b).abs()));
            }
            assert!(worst <= 0.015 * range, "seed {seed}: worst {worst} range {range}");
        }
    }

    #[test]
    fn test_int16_weights_track_the_float_model_closer_than_int8() {
        // The same random MLPs at both widths: int16 weights leave the activation rounding as
        // the main error, several times below int8's.
        for seed in 0..5u64 {
            let mlp = random_mlp(seed, &[10, 24, 16, 6], Activation::Identity);
            let calibration = random_rows(100 + seed, 400, 10);
            let narrow = quantize_mlp(&mlp, &calibration, WeightWidth::I8).unwrap();
            let wide = quantize_mlp(&mlp, &calibration, WeightWidth::I16).unwrap();
            assert_eq!(wide.layers[0].weights.len(), 2 * narrow.layers[0].weights.len());
            assert_eq!(wide.layers[0].bias.len(), 2 * narrow.layers[0].bias.len());
            let (mut worst8, mut worst16, mut range) = (0.0f32, 0.0f32, 0.0f32);
            for x in random_rows(200 + seed, 100, 10).chunks_exact(10) {
                let want = mlp.forward(x);
                range = range.max(max_abs(&want));
                let err = |got: Vec<f32>| want.iter().zip(&got).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
                worst8 = worst8.max(err(narrow.forward(x).unwrap()));
                worst16 = worst16.max(err(wide.forward(x).unwrap()));
            }
            assert!(worst16 <= 0.001 * range, "seed {seed}: int16 worst {worst16} range {range}");
            assert!(worst16 * 4.0 <= worst8, "seed {seed}: int16 {worst16} int8 {worst8}");
        }
    }

    #[test]
    fn test_int8_biases_take_back_the_mean_shift_of_rounded_weights() {
        // One identity layer over inputs with a mean far from 0: rounding each weight to int8
        // moves every output by `Σ (w_q − w) · x`, on average by its value at the mean input.
        // The corrected bias takes that back: over the calibration rows the quantized outputs
        // are off by much less on average than the rounding alone would move them.
        for seed in 0..5u64 {
            let mlp = random_mlp(seed, &[12, 6], Activation::Identity);
            let rows = random_rows(300 + seed, 500, 12);
            let q = quantize_mlp(&mlp, &rows, WeightWidth::I8).unwrap();
            let layer = &q.layers[0];
            let dense = &mlp.layers[0];
            let mean_in: Vec<f64> =
                (0..12).map(|i| rows.chunks_exact(12).map(|x| f64::from(x[i])).sum::<f64>() / 500.0).collect();
            let (mut drift, mut shift) = (vec![0.0f64; 6], vec![0.0f64; 6]);
            for x in rows.chunks_exact(12) {
                for (o, (got, want)) in q.forward(x).unwrap().iter().zip(mlp.forward(x)).enumerate() {
                    drift[o] += f64::from(got - want) / 500.0;
                }
            }
            for (o, shift) in shift.iter_mut().enumerate() {
                let scale = f64::from(layer.weight_scales[o]);
                let rounded = layer.weights[o * 12..(o + 1) * 12].iter().map(|&b| f64::from(b as i8) * scale);
                let weights = dense.weights[o * 12..(o + 1) * 12].iter();
                *shift = rounded.zip(weights).zip(&mean_in).map(|((q, &w), m)| (q - f64::from(w)) * m).sum();
            }
            let worst = |v: &[f64]| v.iter().fold(0.0f64, |m, d| m.max(d.abs()));
            assert!(worst(&drift) * 4.0 < worst(&shift), "seed {seed}: drift {drift:?}, shift {shift:?}");
        }
    }

    #[test]
    fn test_encoder_sized_mlp_keeps_cosine() {
        // 12 -> 16 (relu) -> 8 latent, calibration and test rows from the same distribution.
        let mlp = random_mlp(7, &[12, 16, 8], Activation::Identity);
        let q = quantize_mlp(&mlp, &random_rows(8, 500, 12), WeightWidth::I8).unwrap();
        let view = q.view().unwrap();
        let mut latent = [0f32; 8];
        let mut min_cos = f64::INFINITY;
        for x in random_rows(9, 200, 12).chunks_exact(12) {
            view.forward_dequantized(x, &mut latent).unwrap();
            min_cos = min_cos.min(cosine(&mlp.forward(x), &latent));
        }
        assert!(min_cos > 0.999, "min cosine {min_cos}");
    }

    #[test]
    fn test_softmax_head_becomes_logits_with_same_argmax() {
        let mlp = random_mlp(11, &[8, 13, 4, 3], Activation::Softmax);
        let q = quantize_mlp(&mlp, &random_rows(12, 500, 8), WeightWidth::I8).unwrap();
        assert_eq!(q.layers[2].activation, encoder::Activation::Identity.code());
        let view = q.view().unwrap();
        let logits = logits_model(&mlp);
        let mut agree = 0;
        let rows = random_rows(13, 300, 8);
        for x in rows.chunks_exact(8) {
            let want = logits.forward(x);
            let got = q.forward(x).unwrap();
            let class = view.classify(x).unwrap();
            let float_class = want.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i);
            if class == float_class {
                agree += 1;
                continue;
            }
            // A flip needs two logits closer than twice the quantization error.
            let err = want.iter().zip(&got).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(want[float_class] - want[class] <= 2.0 * err, "row {x:?}: {want:?} vs {got:?}");
        }
        assert!(agree >= 294, "argmax agreement {agree}/300");
    }

    #[test]
    fn test_round_trip_through_postcard_keeps_the_view() {
        let mlp = random_mlp(3, &[5, 7, 2], Activation::Identity);
        let q = quantize_mlp(&mlp, &random_rows(4, 50, 5), WeightWidth::I8).unwrap();
        let bytes = postcard::to_allocvec(&q).unwrap();
        let back: QuantizedMlp = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, q);
        let x = [0.1, 0.9, 0.3, 0.0, 0.5];
        assert_eq!(back.forward(&x).unwrap(), q.forward(&x).unwrap());
        assert_eq!(q.byte_size(), (5 * 7 + 9 * 7) + (7 * 2 + 9 * 2));
        assert_eq!(q.parts().len(), 2);
    }

    #[test]
    fn test_rejects_models_the_device_cannot_hold() {
        let ok = || dense(2, 2, vec![1.0; 4], vec![0.0; 2], Activation::Relu);
        let rows = [0.5f32, 0.5];
        let check = |layers: Vec<layers::Dense>| quantize_mlp(&layers::Mlp { layers }, &rows, WeightWidth::I8);
        assert!(matches!(check(vec![]), Err(QuantizeError::Empty)));
        assert!(matches!(check(vec![ok(); LAYERS + 1]), Err(QuantizeError::TooManyLayers { .. })));
        let wide = dense(2, WIDTH + 1, vec![0.0; 2 * (WIDTH + 1)], vec![0.0; WIDTH + 1], Activation::Relu);
        assert!(matches!(check(vec![wide]), Err(QuantizeError::Width { layer: 0, width: 65 })));
        let short = dense(2, 2, vec![1.0; 3], vec![0.0; 2], Activation::Relu);
        assert!(matches!(check(vec![ok(), short]), Err(QuantizeError::Shape { layer: 1, what: "weights", .. })));
        let narrow = dense(1, 2, vec![1.0; 2], vec![0.0; 2], Activation::Relu);
        assert!(matches!(check(vec![ok(), narrow]), Err(QuantizeError::Chain { layer: 1, inputs: 1, previous: 2 })));
        let softmax = dense(2, 2, vec![1.0; 4], vec![0.0; 2], Activation::Softmax);
        assert!(matches!(check(vec![softmax, ok()]), Err(QuantizeError::Softmax { layer: 0 })));
        let nan = dense(2, 2, vec![1.0, f32::NAN, 0.0, 0.0], vec![0.0; 2], Activation::Relu);
        assert!(matches!(check(vec![nan]), Err(QuantizeError::NonFiniteWeight { layer: 0 })));
    }

    #[test]
    fn test_rejects_bad_calibration_and_bias() {
        let mlp = layers::Mlp { layers: vec![dense(2, 1, vec![1.0, 1.0], vec![0.0], Activation::Identity)] };
        assert!(matches!(
            quantize_mlp(&mlp, &[], WeightWidth::I8),
            Err(QuantizeError::Calibration { len: 0, inputs: 2 })
        ));
        assert!(matches!(
            quantize_mlp(&mlp, &[1.0, 2.0, 3.0], WeightWidth::I8),
            Err(QuantizeError::Calibration { len: 3, inputs: 2 })
        ));
        assert!(matches!(
            quantize_mlp(&mlp, &[1.0, 2.0, f32::INFINITY, 0.0], WeightWidth::I8),
            Err(QuantizeError::CalibrationValue { row: 1 })
        ));
        // A bias of 1e6 at step (1.1/32767)·(1/127) needs about 4e12 steps.
        let huge_bias = layers::Mlp { layers: vec![dense(2, 1, vec![1.0, 1.0], vec![1e6], Activation::Identity)] };
        let err = quantize_mlp(&huge_bias, &[1.0, 1.0], WeightWidth::I8).unwrap_err();
        assert!(matches!(err, QuantizeError::BiasRange { layer: 0, output: 0, .. }), "{err}");
        assert!(err.to_string().starts_with("layer 0 output 0: bias 1000000 does not fit int32"), "{err}");
        // With int16 weights the same bias fits (about 1e15 steps of 1e-9); 1e8 does not.
        assert!(quantize_mlp(&huge_bias, &[1.0, 1.0], WeightWidth::I16).is_ok());
        let huger = layers::Mlp { layers: vec![dense(2, 1, vec![1.0, 1.0], vec![1e8], Activation::Identity)] };
        let err = quantize_mlp(&huger, &[1.0, 1.0], WeightWidth::I16).unwrap_err();
        assert!(err.to_string().contains("does not fit int64 (up to 2^53)"), "{err}");
    }

    #[test]
    fn test_dead_channel_and_dead_layer_quantize_to_zero() {
        // Second output has all-zero weights and bias; the relu layer is dead on the calibration rows.
        let mlp = layers::Mlp {
            layers: vec![
                dense(2, 2, vec![-1.0, -1.0, 0.0, 0.0], vec![0.0, 0.0], Activation::Relu),
                dense(2, 1, vec![1.0, 1.0], vec![0.5], Activation::Identity),
            ],
        };
        let q = quantize_mlp(&mlp, &[0.2, 0.4, 1.0, 1.0], WeightWidth::I8).unwrap();
        assert_eq!(q.layers[0].weights[2..], [0, 0]);
        assert_eq!(q.layers[0].weight_scales[1], 1.0);
        let y = q.forward(&[0.3, 0.3]).unwrap();
        assert!((y[0] - 0.5).abs() < 1e-3, "{y:?}");
    }
}
