//! Quantized dense layers (A16W8 or A16W16) as zero-copy, validated views over parameter bytes.
//!
//! The parameters are borrowed from a bundle that lives in flash: int8 or int16 little-endian
//! weights ([`WeightWidth`], one per layer; row-major `[outputs][inputs]`), little-endian biases
//! at scale `in_scale · w_scale[o]` (int32 with int8 weights, int64 with int16), and a
//! per-output-channel Q31 multiplier + shift (see [`crate::quant`]) that maps the accumulator to
//! the next int16 activation. [`Dense::new`] and [`Mlp::new`] check every length, width, code and
//! scale once; [`Mlp::forward`] then runs integer-only, without re-checks, on two stack buffers of
//! [`WIDTH`] activations, so the device and the host produce bit-identical outputs.
//!
//! The same views serve the VAE encoder (latent `mu` as the last identity layer) and an
//! on-device classifier (identity logits, [`argmax`]).

use crate::capacity::{LAYERS, WIDTH};
use crate::quant::{self, SHIFT_MAX, SHIFT_MIN};
use core::fmt;

// An int8 row accumulates in i32: at most WIDTH products of an i8 (|w| <= 128) and an i16
// (|x| <= 32768) cannot overflow, whatever the parameter bytes are. An int16 row accumulates in
// i64 (WIDTH products of at most 2^30 each).
const _: () = assert!(WIDTH * 128 * 32_768 <= i32::MAX as usize);
const _: () = assert!((WIDTH as u64) << 30 <= i64::MAX as u64);
// Widths are stored as u16 and layer indices reported as u8.
const _: () = assert!(WIDTH <= u16::MAX as usize && LAYERS <= u8::MAX as usize);

/// Activation applied after a quantized layer (a softmax head is exported as identity logits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Activation {
    Identity,
    Relu,
}

impl Activation {
    /// The wire code: 0 identity, 1 relu.
    pub const fn code(self) -> u8 {
        match self {
            Activation::Identity => 0,
            Activation::Relu => 1,
        }
    }

    /// Parses a wire code; `None` for an unknown one.
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Activation::Identity),
            1 => Some(Activation::Relu),
            _ => None,
        }
    }
}

/// How wide one weight is on the wire: int8 (the smallest bundle) or int16 (the closest to the
/// float model: its error is 1/256 of int8's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WeightWidth {
    I8,
    I16,
}

impl WeightWidth {
    /// The wire code: the bytes of one weight (1 or 2).
    pub const fn code(self) -> u8 {
        match self {
            WeightWidth::I8 => 1,
            WeightWidth::I16 => 2,
        }
    }

    /// Parses a wire code; `None` for an unknown one.
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(WeightWidth::I8),
            2 => Some(WeightWidth::I16),
            _ => None,
        }
    }

    /// Bytes of one weight.
    pub const fn bytes(self) -> usize {
        self.code() as usize
    }

    /// Bytes of one bias: int32 with int8 weights, int64 with int16 weights (whose finer
    /// accumulator step puts a bias of a few units beyond int32).
    pub const fn bias_bytes(self) -> usize {
        match self {
            WeightWidth::I8 => 4,
            WeightWidth::I16 => 8,
        }
    }

    /// The largest weight magnitude in steps (symmetric range, zero point 0).
    pub const fn max(self) -> i32 {
        match self {
            WeightWidth::I8 => i8::MAX as i32,
            WeightWidth::I16 => i16::MAX as i32,
        }
    }
}

/// What is wrong with one layer's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LayerFault {
    /// Zero inputs or zero outputs.
    Width,
    /// `weights` is not `inputs · outputs` weights of the layer's width.
    Weights,
    /// Unknown weight width code.
    WeightWidth,
    /// `bias` is not [`WeightWidth::bias_bytes`]` · outputs` bytes.
    Bias,
    /// `multiplier` is not `4 · outputs` bytes.
    Multiplier,
    /// `shift` is not `outputs` bytes.
    Shift,
    /// Unknown activation code.
    Activation,
    /// A negative multiplier or a shift outside `[SHIFT_MIN, SHIFT_MAX]`.
    Requant,
}

impl fmt::Display for LayerFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LayerFault::Width => "zero inputs or outputs",
            LayerFault::Weights => "weights length is not inputs * outputs * weight bytes",
            LayerFault::WeightWidth => "unknown weight width code",
            LayerFault::Bias => "bias length is not outputs * bias bytes",
            LayerFault::Multiplier => "multiplier length is not 4 * outputs",
            LayerFault::Shift => "shift length is not outputs",
            LayerFault::Activation => "unknown activation code",
            LayerFault::Requant => "negative multiplier or shift out of range",
        })
    }
}

/// Why a quantized layer or MLP is rejected, or a forward pass refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum EncoderError {
    /// The input row does not have `expected` values.
    InputLength { expected: u16, found: usize },
    /// The output buffer is shorter than `expected` values.
    OutputLength { expected: u16, found: usize },
    /// Input value `index` is NaN or infinite.
    InputValue { index: u16 },
    /// More than [`LAYERS`] layers, or a layer wider than [`WIDTH`].
    Capacity,
    /// No layers at all.
    Empty,
    /// Layer `layer` has bad parameters ([`Dense::new`] alone reports layer 0).
    Layer { layer: u8, fault: LayerFault },
    /// The inputs of layer `layer` differ from the outputs of the layer before it.
    Chain { layer: u8 },
    /// The input or output scale is not finite and positive.
    Scale,
}

impl fmt::Display for EncoderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncoderError::InputLength { expected, found } => write!(f, "input has {found} values, expected {expected}"),
            EncoderError::OutputLength { expected, found } => {
                write!(f, "output buffer holds {found} values, expected at least {expected}")
            }
            EncoderError::InputValue { index } => write!(f, "input value {index} is not finite"),
            EncoderError::Capacity => write!(f, "mlp exceeds {LAYERS} layers or width {WIDTH}"),
            EncoderError::Empty => write!(f, "mlp has no layers"),
            EncoderError::Layer { layer, fault } => write!(f, "layer {layer}: {fault}"),
            EncoderError::Chain { layer } => {
                write!(f, "layer {layer} inputs do not match the previous layer's outputs")
            }
            EncoderError::Scale => write!(f, "input or output scale is not finite and positive"),
        }
    }
}

impl core::error::Error for EncoderError {}

/// Borrowed, unchecked parameters of one quantized layer (what the bundle hands over).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseParts<'a> {
    pub inputs: u16,
    pub outputs: u16,
    /// [`Activation::code`]: 0 identity, 1 relu.
    pub activation: u8,
    /// [`WeightWidth::code`]: 1 int8, 2 int16.
    pub weight_width: u8,
    /// Weights of that width (int16 little-endian), row-major `[outputs][inputs]`.
    pub weights: &'a [u8],
    /// Little-endian per output ([`WeightWidth::bias_bytes`]: i32 or i64), at scale
    /// `in_scale · w_scale[o]`.
    pub bias: &'a [u8],
    /// i32 little-endian Q31 multiplier per output (`in_scale · w_scale[o] / out_scale`).
    pub multiplier: &'a [u8],
    /// i8 shift per output, in `[SHIFT_MIN, SHIFT_MAX]`.
    pub shift: &'a [u8],
}

/// A validated quantized dense layer: `y = act(requantize(W x + b))`, int16 in and out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dense<'a> {
    inputs: usize,
    outputs: usize,
    activation: Activation,
    width: WeightWidth,
    weights: &'a [u8],
    bias: &'a [u8],
    multiplier: &'a [u8],
    shift: &'a [u8],
}

impl<'a> Dense<'a> {
    /// Validates `parts` once; the returned view is trusted by the hot path.
    ///
    /// # Errors
    /// [`EncoderError::Capacity`] for a width above [`WIDTH`]; otherwise
    /// [`EncoderError::Layer`] (with `layer: 0`) naming the first [`LayerFault`].
    pub fn new(parts: DenseParts<'a>) -> Result<Self, EncoderError> {
        let (inputs, outputs) = (parts.inputs as usize, parts.outputs as usize);
        let fault = |fault| EncoderError::Layer { layer: 0, fault };
        if inputs == 0 || outputs == 0 {
            return Err(fault(LayerFault::Width));
        }
        if inputs > WIDTH || outputs > WIDTH {
            return Err(EncoderError::Capacity);
        }
        let width = WeightWidth::from_code(parts.weight_width).ok_or(fault(LayerFault::WeightWidth))?;
        check_lengths(&parts, width, inputs, outputs).map_err(fault)?;
        let activation = Activation::from_code(parts.activation).ok_or(fault(LayerFault::Activation))?;
        check_requant(parts.multiplier, parts.shift).map_err(fault)?;
        let DenseParts { weights, bias, multiplier, shift, .. } = parts;
        Ok(Dense { inputs, outputs, activation, width, weights, bias, multiplier, shift })
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    pub fn activation(&self) -> Activation {
        self.activation
    }

    pub fn weight_width(&self) -> WeightWidth {
        self.width
    }

    /// Runs the layer on `inputs()` int16 activations, writing `outputs()` values into `out`.
    ///
    /// # Errors
    /// [`EncoderError::InputLength`] / [`EncoderError::OutputLength`] when `x` is not
    /// `inputs()` long or `out` is shorter than `outputs()`.
    pub fn forward(&self, x: &[i16], out: &mut [i16]) -> Result<(), EncoderError> {
        if x.len() != self.inputs {
            return Err(EncoderError::InputLength { expected: self.inputs as u16, found: x.len() });
        }
        if out.len() < self.outputs {
            return Err(EncoderError::OutputLength { expected: self.outputs as u16, found: out.len() });
        }
        self.apply(x, out);
        Ok(())
    }

    /// The hot loop: lengths were validated in [`Dense::new`]; `x` may be longer than
    /// `inputs()` (the extra values are ignored) and only the first `outputs()` of `out` are set.
    fn apply(&self, x: &[i16], out: &mut [i16]) {
        let rows = self.weights.chunks_exact(self.inputs * self.width.bytes());
        let biases = self.bias.chunks_exact(self.width.bias_bytes());
        let requant = biases.zip(self.multiplier.chunks_exact(4)).zip(self.shift);
        for ((y, row), ((bias, multiplier), &shift)) in out.iter_mut().zip(rows).zip(requant) {
            let dot = match self.width {
                WeightWidth::I8 => dot_i8(row, x) as i64,
                WeightWidth::I16 => dot_i16(row, x),
            };
            // Saturating: an int64 bias from arbitrary bytes may sit at the end of the range.
            let acc = dot.saturating_add(read_bias(bias));
            let q = quant::requantize_i16(acc, read_i32(multiplier), shift as i8);
            *y = match self.activation {
                Activation::Identity => q,
                Activation::Relu => q.max(0),
            };
        }
    }
}

/// Checks the four parameter slices against the layer's shape.
fn check_lengths(parts: &DenseParts<'_>, width: WeightWidth, inputs: usize, outputs: usize) -> Result<(), LayerFault> {
    if parts.weights.len() != inputs * outputs * width.bytes() {
        return Err(LayerFault::Weights);
    }
    if parts.bias.len() != width.bias_bytes() * outputs {
        return Err(LayerFault::Bias);
    }
    if parts.multiplier.len() != 4 * outputs {
        return Err(LayerFault::Multiplier);
    }
    if parts.shift.len() != outputs {
        return Err(LayerFault::Shift);
    }
    Ok(())
}

/// Every multiplier is non-negative and every shift inside `[SHIFT_MIN, SHIFT_MAX]`.
fn check_requant(multiplier: &[u8], shift: &[u8]) -> Result<(), LayerFault> {
    let negative = multiplier.chunks_exact(4).any(|m| read_i32(m) < 0);
    let out_of_range = shift.iter().any(|&s| !(SHIFT_MIN..=SHIFT_MAX).contains(&(s as i8)));
    if negative || out_of_range { Err(LayerFault::Requant) } else { Ok(()) }
}

/// Σ w_i · x_i over the row (int8 weights as bytes, int16 activations).
fn dot_i8(row: &[u8], x: &[i16]) -> i32 {
    row.iter().zip(x).fold(0i32, |acc, (&w, &v)| acc + (w as i8 as i32) * (v as i32))
}

/// Σ w_i · x_i over the row (int16 little-endian weights, int16 activations).
fn dot_i16(row: &[u8], x: &[i16]) -> i64 {
    row.chunks_exact(2).zip(x).fold(0i64, |acc, (w, &v)| acc + (read_i16(w) as i32 * v as i32) as i64)
}

/// A little-endian i32 or i64 bias from a 4- or 8-byte chunk.
fn read_bias(bytes: &[u8]) -> i64 {
    match <[u8; 8]>::try_from(bytes) {
        Ok(wide) => i64::from_le_bytes(wide),
        Err(_) => read_i32(bytes) as i64,
    }
}

/// A little-endian i16 from a 2-byte chunk (`chunks_exact(2)` guarantees the length).
fn read_i16(bytes: &[u8]) -> i16 {
    <[u8; 2]>::try_from(bytes).map_or(0, i16::from_le_bytes)
}

/// A little-endian i32 from a 4-byte chunk (`chunks_exact(4)` guarantees the length).
fn read_i32(bytes: &[u8]) -> i32 {
    <[u8; 4]>::try_from(bytes).map_or(0, i32::from_le_bytes)
}

/// Index of the largest value (the first one on ties); `None` for an empty slice.
pub fn argmax(values: &[i16]) -> Option<usize> {
    let mut best: Option<(usize, i16)> = None;
    for (i, &v) in values.iter().enumerate() {
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// A validated stack of quantized layers with the scales of its float input and output.
#[derive(Debug, Clone, PartialEq)]
pub struct Mlp<'a> {
    layers: heapless::Vec<Dense<'a>, LAYERS>,
    input_scale: f32,
    output_scale: f32,
}

impl<'a> Mlp<'a> {
    /// Validates every layer, the chaining of widths and both scales.
    ///
    /// # Errors
    /// [`EncoderError::Scale`], [`EncoderError::Empty`], [`EncoderError::Capacity`],
    /// [`EncoderError::Layer`] (with the layer's position) or [`EncoderError::Chain`].
    pub fn new(layers: &[DenseParts<'a>], input_scale: f32, output_scale: f32) -> Result<Self, EncoderError> {
        if !valid_scale(input_scale) || !valid_scale(output_scale) {
            return Err(EncoderError::Scale);
        }
        if layers.is_empty() {
            return Err(EncoderError::Empty);
        }
        if layers.len() > LAYERS {
            return Err(EncoderError::Capacity);
        }
        let mut views = heapless::Vec::new();
        for (i, parts) in layers.iter().enumerate() {
            let layer = i as u8;
            let dense = Dense::new(*parts).map_err(|e| at_layer(e, layer))?;
            if views.last().is_some_and(|prev: &Dense<'a>| prev.outputs != dense.inputs) {
                return Err(EncoderError::Chain { layer });
            }
            views.push(dense).map_err(|_| EncoderError::Capacity)?;
        }
        Ok(Mlp { layers: views, input_scale, output_scale })
    }

    /// Width of the float input row.
    pub fn inputs(&self) -> usize {
        self.layers.first().map_or(0, Dense::inputs)
    }

    /// Number of int16 outputs.
    pub fn outputs(&self) -> usize {
        self.layers.last().map_or(0, Dense::outputs)
    }

    pub fn layers(&self) -> &[Dense<'a>] {
        &self.layers
    }

    /// Real value of one input step.
    pub fn input_scale(&self) -> f32 {
        self.input_scale
    }

    /// Real value of one output step.
    pub fn output_scale(&self) -> f32 {
        self.output_scale
    }

    /// Quantizes `x` with the input scale and runs every layer, writing `outputs()` int16
    /// values into the front of `out`.
    ///
    /// # Errors
    /// [`EncoderError::InputLength`], [`EncoderError::InputValue`] (NaN or infinite input) or
    /// [`EncoderError::OutputLength`] (`out` shorter than `outputs()`).
    pub fn forward(&self, x: &[f32], out: &mut [i16]) -> Result<(), EncoderError> {
        self.check_input(x)?;
        let expected = self.outputs();
        let found = out.len();
        let out = out.get_mut(..expected).ok_or(EncoderError::OutputLength { expected: expected as u16, found })?;
        let mut front = [0i16; WIDTH];
        let mut back = [0i16; WIDTH];
        for (q, &v) in front.iter_mut().zip(x) {
            *q = quant::quantize_i16(v, self.input_scale);
        }
        let (mut cur, mut next) = (&mut front, &mut back);
        for layer in &self.layers {
            layer.apply(cur.as_slice(), next.as_mut_slice());
            core::mem::swap(&mut cur, &mut next);
        }
        for (o, &v) in out.iter_mut().zip(cur.iter()) {
            *o = v;
        }
        Ok(())
    }

    /// [`Mlp::forward`] followed by [`Mlp::dequantize`] (e.g. the latent `mu` as f32).
    ///
    /// # Errors
    /// As [`Mlp::forward`].
    pub fn forward_dequantized(&self, x: &[f32], out: &mut [f32]) -> Result<(), EncoderError> {
        let expected = self.outputs();
        if out.len() < expected {
            return Err(EncoderError::OutputLength { expected: expected as u16, found: out.len() });
        }
        let mut q = [0i16; WIDTH];
        self.forward(x, &mut q)?;
        for (o, &v) in out.iter_mut().zip(q.iter().take(expected)) {
            *o = self.dequantize(v);
        }
        Ok(())
    }

    /// Real value of an output, `q · output_scale`.
    pub fn dequantize(&self, q: i16) -> f32 {
        quant::dequantize_i16(q, self.output_scale)
    }

    /// The predicted class of a classifier whose last layer gives identity logits.
    ///
    /// # Errors
    /// As [`Mlp::forward`].
    pub fn classify(&self, x: &[f32]) -> Result<usize, EncoderError> {
        self.classify_with_lead(x).map(|(class, _)| class)
    }

    /// The predicted class and its lead over the runner-up, `logit[top] - logit[second]` in
    /// real logit units (`f32::INFINITY` with a single output). A small lead means the decision
    /// sits within the quantization error of the boundary.
    ///
    /// # Errors
    /// As [`Mlp::forward`].
    pub fn classify_with_lead(&self, x: &[f32]) -> Result<(usize, f32), EncoderError> {
        let mut buf = [0i16; WIDTH];
        self.forward(x, &mut buf)?;
        let logits = buf.get(..self.outputs()).unwrap_or(&[]);
        // `outputs()` >= 1 for a validated MLP, so argmax always has a value.
        let top = argmax(logits).unwrap_or(0);
        let second = logits.iter().enumerate().filter(|&(i, _)| i != top).map(|(_, &v)| v).max();
        let lead = match (logits.get(top), second) {
            (Some(&t), Some(s)) => (i32::from(t) - i32::from(s)) as f32 * self.output_scale,
            _ => f32::INFINITY,
        };
        Ok((top, lead))
    }

    fn check_input(&self, x: &[f32]) -> Result<(), EncoderError> {
        let expected = self.inputs();
        if x.len() != expected {
            return Err(EncoderError::InputLength { expected: expected as u16, found: x.len() });
        }
        match x.iter().position(|v| !v.is_finite()) {
            Some(index) => Err(EncoderError::InputValue { index: index as u16 }),
            None => Ok(()),
        }
    }
}

fn valid_scale(scale: f32) -> bool {
    scale.is_finite() && scale > 0.0
}

/// Re-labels a [`Dense::new`] error with the layer's position in the MLP.
fn at_layer(error: EncoderError, layer: u8) -> EncoderError {
    match error {
        EncoderError::Layer { fault, .. } => EncoderError::Layer { layer, fault },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Q31 multiplier 2^30 with shift 0 is exactly 0.5.
    const HALF_LE: [u8; 4] = (1i32 << 30).to_le_bytes();

    fn le(values: &[i32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn bytes(values: &[i8]) -> Vec<u8> {
        values.iter().map(|&v| v as u8).collect()
    }

    fn words(values: &[i16]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// Owned parameter bytes of one layer, for building [`DenseParts`] in tests.
    #[derive(Debug, Clone)]
    struct Owned {
        inputs: u16,
        outputs: u16,
        activation: u8,
        weight_width: u8,
        weights: Vec<u8>,
        bias: Vec<u8>,
        multiplier: Vec<u8>,
        shift: Vec<u8>,
    }

    impl Owned {
        fn parts(&self) -> DenseParts<'_> {
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
    }

    /// 2 -> 2 layer: W = [[1, 2], [-3, 4]], b = [10, -1], every multiplier 0.5.
    fn tiny(activation: u8) -> Owned {
        Owned {
            inputs: 2,
            outputs: 2,
            activation,
            weight_width: 1,
            weights: bytes(&[1, 2, -3, 4]),
            bias: le(&[10, -1]),
            multiplier: [HALF_LE, HALF_LE].concat(),
            shift: vec![0, 0],
        }
    }

    fn le64(values: &[i64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// [`tiny`] with the same weights stored as int16 (and its biases as int64).
    fn tiny16(activation: u8) -> Owned {
        Owned { weight_width: 2, weights: words(&[1, 2, -3, 4]), bias: le64(&[10, -1]), ..tiny(activation) }
    }

    fn layer_fault(owned: &Owned) -> Result<Dense<'_>, EncoderError> {
        Dense::new(owned.parts())
    }

    #[test]
    fn test_dense_new_accepts_tiny_layer() {
        let owned = tiny(1);
        let dense = layer_fault(&owned).unwrap();
        assert_eq!((dense.inputs(), dense.outputs(), dense.activation()), (2, 2, Activation::Relu));
    }

    #[test]
    fn test_dense_new_rejects_every_bad_length() {
        let fault = |fault| Err(EncoderError::Layer { layer: 0, fault });
        let mut o = tiny(0);
        o.weights.pop();
        assert_eq!(layer_fault(&o), fault(LayerFault::Weights));
        let mut o = tiny(0);
        o.weights.push(0);
        assert_eq!(layer_fault(&o), fault(LayerFault::Weights));
        let mut o = tiny(0);
        o.bias.pop();
        assert_eq!(layer_fault(&o), fault(LayerFault::Bias));
        let mut o = tiny(0);
        o.bias.extend([0; 4]);
        assert_eq!(layer_fault(&o), fault(LayerFault::Bias));
        let mut o = tiny(0);
        o.multiplier.truncate(4);
        assert_eq!(layer_fault(&o), fault(LayerFault::Multiplier));
        let mut o = tiny(0);
        o.multiplier.push(0);
        assert_eq!(layer_fault(&o), fault(LayerFault::Multiplier));
        let mut o = tiny(0);
        o.shift.pop();
        assert_eq!(layer_fault(&o), fault(LayerFault::Shift));
        let mut o = tiny(0);
        o.shift.push(0);
        assert_eq!(layer_fault(&o), fault(LayerFault::Shift));
        // int16 weights take two bytes each: the int8 length is wrong for them, and vice versa.
        let mut o = tiny16(0);
        o.weights.truncate(4);
        assert_eq!(layer_fault(&o), fault(LayerFault::Weights));
        let mut o = tiny16(0);
        o.weights.pop();
        assert_eq!(layer_fault(&o), fault(LayerFault::Weights));
        let mut o = tiny(0);
        o.weight_width = 2;
        assert_eq!(layer_fault(&o), fault(LayerFault::Weights));
        let mut o = tiny16(0);
        o.bias = le(&[10, -1]);
        assert_eq!(layer_fault(&o), fault(LayerFault::Bias));
        for code in [0, 3, 255] {
            let mut o = tiny(0);
            o.weight_width = code;
            assert_eq!(layer_fault(&o), fault(LayerFault::WeightWidth));
        }
    }

    #[test]
    fn test_dense_new_rejects_widths_codes_and_requant() {
        let fault = |fault| Err(EncoderError::Layer { layer: 0, fault });
        let mut o = tiny(0);
        o.inputs = 0;
        assert_eq!(layer_fault(&o), fault(LayerFault::Width));
        let mut o = tiny(0);
        o.outputs = 0;
        assert_eq!(layer_fault(&o), fault(LayerFault::Width));
        let mut o = tiny(0);
        o.inputs = WIDTH as u16 + 1;
        assert_eq!(layer_fault(&o), Err(EncoderError::Capacity));
        let mut o = tiny(0);
        o.outputs = u16::MAX;
        assert_eq!(layer_fault(&o), Err(EncoderError::Capacity));
        assert_eq!(layer_fault(&tiny(2)), fault(LayerFault::Activation));
        let mut o = tiny(0);
        o.shift[1] = (SHIFT_MAX + 1) as u8;
        assert_eq!(layer_fault(&o), fault(LayerFault::Requant));
        let mut o = tiny(0);
        o.shift[0] = (SHIFT_MIN - 1) as u8;
        assert_eq!(layer_fault(&o), fault(LayerFault::Requant));
        let mut o = tiny(0);
        o.multiplier = le(&[1 << 30, -1]);
        assert_eq!(layer_fault(&o), fault(LayerFault::Requant));
    }

    #[test]
    fn test_forward_tiny_layer_by_hand() {
        // x = [1.0, -1.5] at scale 0.5 -> [2, -3].
        // acc0 = 1*2 + 2*(-3) + 10 = 6 -> 3; acc1 = -3*2 + 4*(-3) - 1 = -19 -> -9.5 -> -10.
        let identity = tiny(0);
        let mlp = Mlp::new(&[identity.parts()], 0.5, 0.25).unwrap();
        let mut out = [0i16; 3];
        mlp.forward(&[1.0, -1.5], &mut out).unwrap();
        assert_eq!(out, [3, -10, 0]);
        assert!((mlp.dequantize(out[0]) - 0.75).abs() < 1e-7);
        let relu = tiny(1);
        let mlp = Mlp::new(&[relu.parts()], 0.5, 0.25).unwrap();
        mlp.forward(&[1.0, -1.5], &mut out[..2]).unwrap();
        assert_eq!(out[..2], [3, 0]);
        // The same weights as int16 give the same integers.
        for (owned, want) in [(tiny16(0), [3, -10]), (tiny16(1), [3, 0])] {
            let dense = layer_fault(&owned).unwrap();
            assert_eq!(dense.weight_width(), WeightWidth::I16);
            let mut out = [0i16; 2];
            dense.forward(&[2, -3], &mut out).unwrap();
            assert_eq!(out, want);
        }
    }

    #[test]
    fn test_int16_weights_use_their_full_range() {
        // W = [[-32767, 32000]], x = [1, 1] steps: both bytes of each weight count.
        let owned = Owned {
            inputs: 2,
            outputs: 1,
            activation: 0,
            weight_width: 2,
            weights: words(&[-32_767, 32_000]),
            bias: le64(&[0]),
            multiplier: (1i32 << 30).to_le_bytes().to_vec(),
            shift: vec![0],
        };
        let dense = layer_fault(&owned).unwrap();
        let mut out = [0i16; 1];
        dense.forward(&[1, 1], &mut out).unwrap();
        assert_eq!(out, [-384]); // (-32767 + 32000) / 2 = -383.5 -> -384 (half away from zero)
    }

    #[test]
    fn test_forward_two_layers_by_hand() {
        // Layer 1 (relu) gives [3, 0]; layer 2: W = [[2, -1]], b = [1], multiplier 0.5:
        // acc = 6 + 0 + 1 = 7 -> 3.5 -> 4.
        let first = tiny(1);
        let second = Owned {
            inputs: 2,
            outputs: 1,
            activation: 0,
            weight_width: 1,
            weights: bytes(&[2, -1]),
            bias: le(&[1]),
            multiplier: HALF_LE.to_vec(),
            shift: vec![0],
        };
        let mlp = Mlp::new(&[first.parts(), second.parts()], 0.5, 1.0).unwrap();
        assert_eq!((mlp.inputs(), mlp.outputs()), (2, 1));
        let mut out = [0i16; 1];
        mlp.forward(&[1.0, -1.5], &mut out).unwrap();
        assert_eq!(out, [4]);
        let mut real = [0f32; 1];
        mlp.forward_dequantized(&[1.0, -1.5], &mut real).unwrap();
        assert!((real[0] - 4.0).abs() < 1e-7);
    }

    #[test]
    fn test_dense_forward_checks_lengths() {
        let owned = tiny(0);
        let dense = layer_fault(&owned).unwrap();
        let mut out = [0i16; 2];
        assert_eq!(dense.forward(&[2, -3], &mut out), Ok(()));
        assert_eq!(out, [3, -10]);
        assert_eq!(dense.forward(&[2], &mut out), Err(EncoderError::InputLength { expected: 2, found: 1 }));
        assert_eq!(dense.forward(&[2, -3], &mut out[..1]), Err(EncoderError::OutputLength { expected: 2, found: 1 }));
    }

    #[test]
    fn test_mlp_forward_rejects_bad_input() {
        let owned = tiny(0);
        let mlp = Mlp::new(&[owned.parts()], 0.5, 1.0).unwrap();
        let mut out = [0i16; 2];
        assert_eq!(mlp.forward(&[1.0], &mut out), Err(EncoderError::InputLength { expected: 2, found: 1 }));
        assert_eq!(mlp.forward(&[1.0, f32::NAN], &mut out), Err(EncoderError::InputValue { index: 1 }));
        assert_eq!(mlp.forward(&[1.0, 2.0], &mut out[..1]), Err(EncoderError::OutputLength { expected: 2, found: 1 }));
        let mut real = [0f32; 1];
        assert_eq!(
            mlp.forward_dequantized(&[1.0, 2.0], &mut real),
            Err(EncoderError::OutputLength { expected: 2, found: 1 })
        );
    }

    #[test]
    fn test_mlp_new_rejects_scales_counts_and_chaining() {
        let a = tiny(1);
        let p = a.parts();
        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert_eq!(Mlp::new(&[p], bad, 1.0), Err(EncoderError::Scale));
            assert_eq!(Mlp::new(&[p], 1.0, bad), Err(EncoderError::Scale));
        }
        assert_eq!(Mlp::new(&[], 1.0, 1.0), Err(EncoderError::Empty));
        assert_eq!(Mlp::new(&[p; LAYERS + 1], 1.0, 1.0), Err(EncoderError::Capacity));
        assert!(Mlp::new(&[p; LAYERS], 1.0, 1.0).is_ok());
        let mut narrow = tiny(0);
        narrow.inputs = 1;
        narrow.weights.truncate(2);
        assert!(Dense::new(narrow.parts()).is_ok());
        assert_eq!(Mlp::new(&[p, narrow.parts()], 1.0, 1.0), Err(EncoderError::Chain { layer: 1 }));
        let mut broken = tiny(0);
        broken.bias.clear();
        let err = Mlp::new(&[p, p, broken.parts()], 1.0, 1.0);
        assert_eq!(err, Err(EncoderError::Layer { layer: 2, fault: LayerFault::Bias }));
    }

    #[test]
    fn test_argmax_first_of_ties_and_classify() {
        assert_eq!(argmax(&[]), None);
        assert_eq!(argmax(&[-5]), Some(0));
        assert_eq!(argmax(&[1, 7, 7, -2]), Some(1));
        assert_eq!(argmax(&[i16::MIN, i16::MIN]), Some(0));
        let owned = tiny(0);
        let mlp = Mlp::new(&[owned.parts()], 0.5, 1.0).unwrap();
        assert_eq!(mlp.classify(&[1.0, -1.5]), Ok(0)); // logits [3, -10]
        assert_eq!(mlp.classify(&[-1.0, 2.0]), Ok(1)); // q = [-2, 4]: logits [8, 10.5 -> 11]
    }

    #[test]
    fn test_error_display_is_lowercase_without_period() {
        let errors = [
            EncoderError::InputLength { expected: 2, found: 1 },
            EncoderError::Capacity,
            EncoderError::Layer { layer: 3, fault: LayerFault::Requant },
            EncoderError::Chain { layer: 1 },
            EncoderError::Scale,
        ];
        for e in errors {
            let text = e.to_string();
            assert!(text.chars().next().is_some_and(|c| c.is_lowercase() || c.is_ascii_digit()), "{text}");
            assert!(!text.ends_with('.'), "{text}");
        }
        assert_eq!(
            EncoderError::Layer { layer: 3, fault: LayerFault::Bias }.to_string(),
            "layer 3: bias length is not outputs * bias bytes"
        );
    }

    // ---- Accuracy against a float reference ----------------------------------------------------

    /// A float layer in f64 (the reference) with its test-only quantization.
    #[derive(Debug, Clone)]
    struct FloatLayer {
        inputs: usize,
        outputs: usize,
        weights: Vec<f64>,
        bias: Vec<f64>,
        relu: bool,
    }

    impl FloatLayer {
        fn forward(&self, x: &[f64]) -> Vec<f64> {
            let rows = self.weights.chunks_exact(self.inputs);
            let pre = rows.zip(&self.bias).map(|(row, b)| row.iter().zip(x).map(|(w, v)| w * v).sum::<f64>() + b);
            pre.map(|y| if self.relu { y.max(0.0) } else { y }).collect()
        }

        /// Per-channel weight scales `max|w_o| / width.max()` (1 for an all-zero row).
        fn weight_scales(&self, width: WeightWidth) -> Vec<f64> {
            let rows = self.weights.chunks_exact(self.inputs);
            rows.map(|row| row.iter().fold(0.0f64, |m, w| m.max(w.abs())) / width.max() as f64)
                .map(|s| if s > 0.0 { s } else { 1.0 })
                .collect()
        }

        /// Symmetric per-channel weights of `width`, int32 (int64) bias and Q31 multipliers for
        /// scales `s_x`, `s_y`; `None` when a bias does not fit int32 at its accumulator step
        /// (a layer the host exporter refuses with `BiasRange`).
        fn quantize(&self, s_x: f64, s_y: f64, width: WeightWidth) -> Option<Owned> {
            let s_w = self.weight_scales(width);
            let rows = self.weights.chunks_exact(self.inputs);
            let steps: Vec<i16> =
                rows.zip(&s_w).flat_map(|(row, s)| row.iter().map(move |w| libm::round(w / s) as i16)).collect();
            let weights = match width {
                WeightWidth::I8 => steps.iter().map(|&w| w as i8 as u8).collect(),
                WeightWidth::I16 => words(&steps),
            };
            let bias: Vec<i64> = self.bias.iter().zip(&s_w).map(|(b, s)| libm::round(b / (s_x * s)) as i64).collect();
            let narrow: Option<Vec<i32>> = bias.iter().map(|&b| i32::try_from(b).ok()).collect();
            let requant: Vec<(i32, i8)> =
                s_w.iter().map(|s| quant::quantize_multiplier(s_x * s / s_y).unwrap()).collect();
            Some(Owned {
                inputs: self.inputs as u16,
                outputs: self.outputs as u16,
                activation: u8::from(self.relu),
                weight_width: width.code(),
                weights,
                bias: match width {
                    WeightWidth::I8 => le(&narrow?),
                    WeightWidth::I16 => le64(&bias),
                },
                multiplier: le(&requant.iter().map(|r| r.0).collect::<Vec<_>>()),
                shift: requant.iter().map(|r| r.1 as u8).collect(),
            })
        }
    }

    /// Worst-case error of one quantized output channel against the float reference.
    ///
    /// With `x̂ = s_x·x_q` the quantized input, `ŵ = s_w·w_q` the quantized weights and `â` the
    /// real value of the integer accumulator, `w·x − ŵ·x̂ = w·(x − x̂) + x̂·(w − ŵ)`, so
    ///
    /// `|y_q − y_f| <= (s_x/2 + s_x·2^-9)·Σ|w_i| + (s_w/2)·Σ|x̂_i| + s_x·s_w/2 + s_y/2 + 2^-30·|â|`
    ///
    /// (input rounding, with one f32 ulp of `x/s_x <= 2^15` for the division; weight rounding;
    /// bias rounding; the final requantize rounding; the Q31 multiplier's relative error
    /// `<= 2^-31`). ReLU is 1-Lipschitz, so the bound holds after it too, and it assumes no
    /// saturation (the test picks `s_y` with headroom).
    fn error_bound(row: &[f64], x_hat: &[f64], s_x: f64, s_w: f64, s_y: f64, acc_real: f64) -> f64 {
        let w_l1: f64 = row.iter().map(|w| w.abs()).sum();
        let x_l1: f64 = x_hat.iter().map(|v| v.abs()).sum();
        (s_x / 2.0 + s_x * libm::exp2(-9.0)) * w_l1
            + s_w / 2.0 * x_l1
            + s_x * s_w / 2.0
            + s_y / 2.0
            + libm::exp2(-30.0) * acc_real.abs()
    }

    fn layer_strategy() -> impl Strategy<Value = (FloatLayer, Vec<f32>, f64, f64)> {
        (1usize..=16, 1usize..=8, any::<bool>(), 0.05f64..4.0, 1.05f64..4.0).prop_flat_map(
            |(n, m, relu, x_max, headroom)| {
                let weights = prop::collection::vec(-2.0f64..2.0, n * m);
                let row_gain = prop::collection::vec(0.01f64..10.0, m);
                let bias = prop::collection::vec(-1.0f64..1.0, m);
                let x = prop::collection::vec(-1.0f32..1.0, n);
                (weights, row_gain, bias, x).prop_map(move |(w, gain, bias, x)| {
                    let weights =
                        w.chunks_exact(n).zip(&gain).flat_map(|(row, g)| row.iter().map(move |v| v * g)).collect();
                    let layer = FloatLayer { inputs: n, outputs: m, weights, bias, relu };
                    let x = x.iter().map(|v| v * x_max as f32).collect();
                    (layer, x, x_max, headroom)
                })
            },
        )
    }

    proptest! {
        /// A random dense layer stays within [`error_bound`] of its f64 reference.
        #[test]
        fn prop_dense_within_stated_bound((layer, x, x_max, headroom) in layer_strategy(), wide in any::<bool>()) {
            let width = if wide { WeightWidth::I16 } else { WeightWidth::I8 };
            let s_x = (x_max / 32_000.0) as f32;
            let rows = layer.weights.chunks_exact(layer.inputs).zip(&layer.bias);
            let l1 = |row: &[f64]| row.iter().map(|w| w.abs()).sum::<f64>();
            let y_max = rows.map(|(row, b)| l1(row) * x_max + b.abs()).fold(0.0, f64::max);
            let s_y = (headroom * y_max / 32_767.0) as f32;
            // A tiny input step times a tiny weight step can put a bias beyond int32: such a
            // layer is refused at export, so the bound is not stated for it.
            let owned = layer.quantize(s_x as f64, s_y as f64, width);
            prop_assume!(owned.is_some(), "bias beyond int32");
            let owned = owned.unwrap();
            let mlp = Mlp::new(&[owned.parts()], s_x, s_y).unwrap();
            let mut out = [0i16; WIDTH];
            mlp.forward(&x, &mut out).unwrap();

            let x_f: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let reference = layer.forward(&x_f);
            let x_hat: Vec<f64> = x.iter().map(|&v| quant::quantize_i16(v, s_x) as f64 * s_x as f64).collect();
            let s_w = layer.weight_scales(width);
            for (o, row) in layer.weights.chunks_exact(layer.inputs).enumerate() {
                let acc_real = row.iter().zip(&x_hat).map(|(w, v)| w * v).sum::<f64>() + layer.bias[o];
                let bound = error_bound(row, &x_hat, s_x as f64, s_w[o], s_y as f64, acc_real) * (1.0 + 1e-6) + 1e-12;
                let got = mlp.dequantize(out[o]) as f64;
                let err = (got - reference[o]).abs();
                prop_assert!(err <= bound, "channel {} got {} want {} bound {}", o, got, reference[o], bound);
            }
        }

        /// Arbitrary (unvalidated) parameter bytes are either rejected or run without panicking;
        /// lengths are drawn around the valid ones so that both outcomes occur.
        #[test]
        fn prop_arbitrary_parts_never_panic(
            inputs in 0u16..6, outputs in 0u16..6, activation in 0u8..3, weight_width in 0u8..4,
            skew in prop::array::uniform4(0usize..3),
            seed_bytes in prop::collection::vec(any::<u8>(), 200), x in prop::collection::vec(any::<f32>(), 0..7),
        ) {
            let (n, m) = (inputs as usize, outputs as usize);
            let len = |valid: usize, k: usize| (valid + skew[k]).saturating_sub(1);
            let weights = &seed_bytes[..len(n * m * weight_width.max(1) as usize, 0)];
            let bias = &seed_bytes[40..40 + len(if weight_width == 2 { 8 * m } else { 4 * m }, 1)];
            let multiplier = &seed_bytes[80..80 + len(4 * m, 2)];
            let shift = &seed_bytes[120..120 + len(m, 3)];
            let parts = DenseParts { inputs, outputs, activation, weight_width, weights, bias, multiplier, shift };
            if let Ok(mlp) = Mlp::new(&[parts], 1e-3, 1e-3) {
                let mut out = [0i16; WIDTH];
                let _ = mlp.forward(&x, &mut out);
                let _ = mlp.classify(&x);
            }
        }
    }
}
