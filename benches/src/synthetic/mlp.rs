//! Random float MLPs and their A16W8 quantization into the bytes the core reads.
//!
//! Weights are quantized per output channel (scale `max |w| / 127`); each layer's output scale
//! is its worst-case output magnitude over inputs bounded by the previous layer's, divided by
//! 32767, so no activation saturates; biases are i32 at the accumulator scale and the
//! accumulator-to-output ratio is a Q31 multiplier and shift from [`quant::quantize_multiplier`].

use super::{SpecError, signed};
use cent_nostd::bundle::{LayerParts, MlpParts};
use cent_nostd::capacity::{LAYERS, WIDTH};
use cent_nostd::encoder::{Activation, DenseParts, EncoderError, Mlp, WeightWidth};
use cent_nostd::quant;
use rand_core::Rng;

/// Largest int16 activation magnitude a layer's worst-case output is mapped to.
const I16_RANGE: f64 = quant::I16_MAX as f64;
/// Largest int8 weight magnitude.
const I8_RANGE: f64 = quant::I8_MAX as f64;

/// One dense layer in f32: the reference the quantized bytes approximate.
#[derive(Debug, Clone, PartialEq)]
struct FloatLayer {
    inputs: usize,
    outputs: usize,
    activation: Activation,
    /// Row-major `[outputs][inputs]`.
    weights: Vec<f32>,
    bias: Vec<f32>,
}

impl FloatLayer {
    /// Uniform He-style weights (`±sqrt(6 / inputs)`) and small biases (`±0.1`).
    fn random<R: Rng + ?Sized>(rng: &mut R, inputs: usize, outputs: usize, activation: Activation) -> Self {
        let bound = (6.0 / inputs as f64).sqrt();
        let weights = (0..inputs * outputs).map(|_| (bound * signed(rng)) as f32).collect();
        let bias = (0..outputs).map(|_| (0.1 * signed(rng)) as f32).collect();
        FloatLayer { inputs, outputs, activation, weights, bias }
    }

    fn rows(&self) -> impl Iterator<Item = &[f32]> {
        self.weights.chunks_exact(self.inputs)
    }

    /// The largest `|y|` over inputs with `|x| <= x_max`.
    fn bound(&self, x_max: f64) -> f64 {
        let row_bound =
            |(row, b): (&[f32], &f32)| row.iter().map(|w| w.abs() as f64).sum::<f64>() * x_max + b.abs() as f64;
        self.rows().zip(&self.bias).map(row_bound).fold(0.0, f64::max)
    }

    /// The layer on the first `inputs` values of `x`, into the first `outputs` of `out`.
    fn forward(&self, x: &[f32], out: &mut [f32]) {
        for ((y, row), b) in out.iter_mut().zip(self.rows()).zip(&self.bias) {
            let v = row.iter().zip(x).fold(*b, |acc, (w, v)| acc + w * v);
            *y = match self.activation {
                Activation::Identity => v,
                Activation::Relu => v.max(0.0),
            };
        }
    }
}

/// The quantized bytes of one layer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct QuantLayer {
    inputs: u16,
    outputs: u16,
    activation: u8,
    weights: Vec<u8>,
    bias: Vec<u8>,
    multiplier: Vec<u8>,
    shift: Vec<u8>,
}

impl QuantLayer {
    /// Quantizes `layer` for int16 inputs at `in_scale` and outputs at `out_scale` per step.
    fn of(layer: &FloatLayer, in_scale: f64, out_scale: f64) -> Result<Self, SpecError> {
        let mut q = QuantLayer {
            inputs: layer.inputs as u16,
            outputs: layer.outputs as u16,
            activation: layer.activation.code(),
            weights: Vec::with_capacity(layer.weights.len()),
            bias: Vec::new(),
            multiplier: Vec::new(),
            shift: Vec::new(),
        };
        for (row, bias) in layer.rows().zip(&layer.bias) {
            q.push_channel(row, *bias as f64, in_scale, out_scale)?;
        }
        Ok(q)
    }

    /// One output channel with its own weight scale `max |w| / 127`.
    fn push_channel(&mut self, row: &[f32], bias: f64, in_scale: f64, out_scale: f64) -> Result<(), SpecError> {
        let w_max = row.iter().fold(0.0, |m: f64, v| m.max(v.abs() as f64));
        let w_scale = if w_max > 0.0 { w_max / I8_RANGE } else { 1.0 };
        self.weights.extend(row.iter().map(|v| (*v as f64 / w_scale).round() as i8 as u8));
        let acc_scale = in_scale * w_scale;
        self.bias.extend(((bias / acc_scale).round() as i32).to_le_bytes());
        let (m, s) = quant::quantize_multiplier(acc_scale / out_scale).map_err(SpecError::Quant)?;
        self.multiplier.extend(m.to_le_bytes());
        self.shift.push(s as u8);
        Ok(())
    }

    fn wire(&self) -> LayerParts<'_> {
        LayerParts {
            inputs: self.inputs,
            outputs: self.outputs,
            activation: self.activation,
            weight_width: WeightWidth::I8.code(),
            weights: &self.weights,
            bias: &self.bias,
            multiplier: &self.multiplier,
            shift: &self.shift,
        }
    }

    fn dense(&self) -> DenseParts<'_> {
        DenseParts {
            inputs: self.inputs,
            outputs: self.outputs,
            activation: self.activation,
            weight_width: WeightWidth::I8.code(),
            weights: &self.weights,
            bias: &self.bias,
            multiplier: &self.multiplier,
            shift: &self.shift,
        }
    }
}

/// A random MLP kept both as float weights (the reference) and as quantized bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedMlp {
    float: Vec<FloatLayer>,
    quant: Vec<QuantLayer>,
    input_scale: f32,
    output_scale: f32,
}

impl OwnedMlp {
    /// An MLP with the given widths (`[inputs, hidden.., outputs]`): ReLU on every hidden layer,
    /// identity on the last, for inputs in `[-input_max, input_max]`.
    ///
    /// # Errors
    /// [`SpecError::Shape`] for widths outside the capacities or a bad `input_max`;
    /// [`SpecError::Quant`] or [`SpecError::Encoder`] if quantizing fails (a generator bug).
    pub fn random<R: Rng + ?Sized>(rng: &mut R, widths: &[usize], input_max: f32) -> Result<OwnedMlp, SpecError> {
        Self::quantize(random_layers(rng, widths, input_max)?, input_max)
    }

    /// As [`OwnedMlp::random`], with the last layer's biases shifted so that every output
    /// averages 0 over `samples`: a classifier built so predicts each class on part of them,
    /// instead of one class everywhere.
    ///
    /// # Errors
    /// As [`OwnedMlp::random`].
    pub fn random_centered<R: Rng + ?Sized>(
        rng: &mut R,
        widths: &[usize],
        input_max: f32,
        samples: &[Vec<f32>],
    ) -> Result<OwnedMlp, SpecError> {
        let mut layers = random_layers(rng, widths, input_max)?;
        let mean = mean_output(&layers, samples);
        if let Some(last) = layers.last_mut() {
            for (b, m) in last.bias.iter_mut().zip(mean) {
                *b -= m;
            }
        }
        Self::quantize(layers, input_max)
    }

    /// Quantizes float layers, each output scale covering the worst case of its input bound.
    fn quantize(float: Vec<FloatLayer>, input_max: f32) -> Result<OwnedMlp, SpecError> {
        let input_scale = input_max as f64 / I16_RANGE;
        let (mut scale, mut x_max) = (input_scale, input_max as f64);
        let mut quant = Vec::with_capacity(float.len());
        for layer in &float {
            let y_max = layer.bound(x_max).max(f64::MIN_POSITIVE);
            quant.push(QuantLayer::of(layer, scale, y_max / I16_RANGE)?);
            (scale, x_max) = (y_max / I16_RANGE, y_max);
        }
        let mlp = OwnedMlp { float, quant, input_scale: input_scale as f32, output_scale: scale as f32 };
        mlp.view().map_err(SpecError::Encoder)?;
        Ok(mlp)
    }

    pub fn inputs(&self) -> usize {
        self.float.first().map_or(0, |l| l.inputs)
    }

    pub fn outputs(&self) -> usize {
        self.float.last().map_or(0, |l| l.outputs)
    }

    /// The wire form for a bundle.
    pub fn parts(&self) -> MlpParts<'_> {
        // At most LAYERS layers (checked in `random_layers`), so every push fits.
        let layers = self.quant.iter().map(QuantLayer::wire).collect();
        MlpParts { input_scale: self.input_scale, output_scale: self.output_scale, layers }
    }

    /// The core's validated quantized view.
    ///
    /// # Errors
    /// An [`EncoderError`] if the bytes are rejected (a generator bug).
    pub fn view(&self) -> Result<Mlp<'_>, EncoderError> {
        let parts: Vec<DenseParts<'_>> = self.quant.iter().map(QuantLayer::dense).collect();
        Mlp::new(&parts, self.input_scale, self.output_scale)
    }

    /// The float reference forward pass into the first `outputs()` values of `out`, on two
    /// stack buffers like the quantized one (no allocation, so it can be benchmarked).
    pub fn forward_f32(&self, x: &[f32], out: &mut [f32]) {
        forward(&self.float, x, out);
    }
}

/// Float layers of the given widths, checked against the core's capacities.
fn random_layers<R: Rng + ?Sized>(rng: &mut R, widths: &[usize], input_max: f32) -> Result<Vec<FloatLayer>, SpecError> {
    let bad_width = widths.iter().any(|w| !(1..=WIDTH).contains(w));
    let bad_range = !(input_max > 0.0 && input_max.is_finite());
    if widths.len() < 2 || widths.len() > LAYERS + 1 || bad_width || bad_range {
        return Err(SpecError::Shape);
    }
    let last = widths.len() - 2;
    let activation = |k: usize| if k == last { Activation::Identity } else { Activation::Relu };
    Ok(widths.windows(2).enumerate().map(|(k, w)| FloatLayer::random(rng, w[0], w[1], activation(k))).collect())
}

fn forward(layers: &[FloatLayer], x: &[f32], out: &mut [f32]) {
    let mut front = [0.0f32; WIDTH];
    let mut back = [0.0f32; WIDTH];
    for (f, v) in front.iter_mut().zip(x) {
        *f = *v;
    }
    let (mut cur, mut next) = (&mut front, &mut back);
    for layer in layers {
        layer.forward(cur.as_slice(), next.as_mut_slice());
        core::mem::swap(&mut cur, &mut next);
    }
    let outputs = layers.last().map_or(0, |l| l.outputs);
    for (o, v) in out.iter_mut().zip(cur.iter().take(outputs)) {
        *o = *v;
    }
}

/// Per output, the mean of the float network's output over `samples` (zeros for none).
fn mean_output(layers: &[FloatLayer], samples: &[Vec<f32>]) -> Vec<f32> {
    let outputs = layers.last().map_or(0, |l| l.outputs);
    let mut sum = vec![0.0f64; outputs];
    let mut y = [0.0f32; WIDTH];
    for x in samples {
        forward(layers, x, &mut y);
        for (s, v) in sum.iter_mut().zip(&y) {
            *s += *v as f64;
        }
    }
    sum.iter().map(|s| (s / samples.len().max(1) as f64) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::unit;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    fn rng(seed: u64) -> Xoshiro128PlusPlus {
        Xoshiro128PlusPlus::seed_from_u64(seed)
    }

    fn random_rows(r: &mut Xoshiro128PlusPlus, n: usize, width: usize) -> Vec<Vec<f32>> {
        (0..n).map(|_| (0..width).map(|_| unit(r)).collect()).collect()
    }

    #[test]
    fn test_quantized_mlp_tracks_float_reference() {
        let r = &mut rng(8);
        let mlp = OwnedMlp::random(r, &[46, 25, 8], 1.0).unwrap();
        let view = mlp.view().unwrap();
        let (mut q, mut f) = ([0i16; 8], [0.0f32; 8]);
        let (mut worst, mut peak) = (0.0f32, 0.0f32);
        for x in random_rows(r, 64, 46) {
            view.forward(&x, &mut q).unwrap();
            mlp.forward_f32(&x, &mut f);
            for (qv, fv) in q.iter().zip(&f) {
                worst = worst.max((view.dequantize(*qv) - fv).abs());
                peak = peak.max(fv.abs());
            }
        }
        assert!(peak > 0.1, "outputs collapsed: peak {peak}");
        assert!(worst <= 0.02 * peak, "quantization error {worst} against peak {peak}");
    }

    #[test]
    fn test_centered_classifier_predicts_both_classes() {
        let r = &mut rng(9);
        let samples = random_rows(r, 128, 20);
        let mlp = OwnedMlp::random_centered(r, &[20, 16, 2], 1.0, &samples).unwrap();
        let view = mlp.view().unwrap();
        let ones = samples.iter().filter(|x| view.classify(x) == Ok(1)).count();
        assert!((16..=112).contains(&ones), "class 1 on {ones} of 128 samples");
    }

    #[test]
    fn test_shape_is_checked() {
        let r = &mut rng(10);
        assert_eq!(OwnedMlp::random(r, &[4], 1.0), Err(SpecError::Shape));
        assert_eq!(OwnedMlp::random(r, &[4, 0, 2], 1.0), Err(SpecError::Shape));
        assert_eq!(OwnedMlp::random(r, &[WIDTH + 1, 2], 1.0), Err(SpecError::Shape));
        assert_eq!(OwnedMlp::random(r, &[4, 2], f32::NAN), Err(SpecError::Shape));
        assert_eq!(OwnedMlp::random(r, &[4; LAYERS + 2], 1.0), Err(SpecError::Shape));
        let mlp = OwnedMlp::random(r, &[4; LAYERS + 1], 1.0).unwrap();
        assert_eq!((mlp.inputs(), mlp.outputs(), mlp.parts().layers.len()), (4, 4, LAYERS));
    }
}
