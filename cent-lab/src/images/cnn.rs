//! The image black box: conv (28 filters, 3x3) -> ReLU -> max-pool 2x2 -> dense 128 ReLU ->
//! dropout 0.2 -> dense 2 -> softmax, trained with burn on the CPU and exported to a
//! plain-Rust forward ([`PlainCnn`]) that the search queries thousands of times. The shape is
//! an [`Arch`]: the second, independent judge of a counterfactual ([`Arch::second`]) has
//! 16 filters of 5x5 and 64 hidden units.
//!
//! Weights are drawn from the project's seeded generator and the dropout masks too, so a run
//! is deterministic for a seed.

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::MaxPool2dConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::{Device, Tensor, TensorData};

use cent_host::blackbox::{BlackBox, TrainError};
use cent_host::layers::{Activation, Dense};
use cent_host::progress::Progress;
use cent_host::train::{self, SeededRng};

const SIDE: usize = 28;
const DROPOUT: f32 = 0.2;

/// The network's shape: `filters` convolutions of `kernel` x `kernel` (valid padding), a 2x2
/// max-pool, `hidden` dense units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Arch {
    pub filters: usize,
    pub kernel: usize,
    pub hidden: usize,
}

impl Arch {
    /// The explained CNN: 28 filters of 3x3, 128 hidden units.
    pub const FIRST: Arch = Arch { filters: 28, kernel: 3, hidden: 128 };

    /// The second judge: another shape (16 filters of 5x5, 64 hidden units).
    pub const fn second() -> Arch {
        Arch { filters: 16, kernel: 5, hidden: 64 }
    }

    /// Side of the pooled feature map.
    const fn pooled(&self) -> usize {
        (SIDE + 1 - self.kernel) / 2
    }

    /// Inputs of the dense layer.
    const fn flat(&self) -> usize {
        self.filters * self.pooled() * self.pooled()
    }
}

/// Training schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CnnConfig {
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub seed: u64,
    pub arch: Arch,
}

impl Default for CnnConfig {
    fn default() -> Self {
        Self { epochs: 3, batch_size: 64, learning_rate: 1e-3, seed: 1, arch: Arch::FIRST }
    }
}

/// The exported CNN: plain `f32` weights.
#[derive(Debug, Clone, PartialEq)]
pub struct PlainCnn {
    pub arch: Arch,
    /// `[filters][kernel][kernel]`.
    pub conv_weight: Vec<f32>,
    pub conv_bias: Vec<f32>,
    pub hidden: Dense,
    pub out: Dense,
}

impl PlainCnn {
    /// Conv + ReLU + 2x2 max-pool of one image, flattened channel-major like burn's reshape.
    fn features(&self, image: &[f32]) -> Vec<f32> {
        let Arch { filters, kernel: ks, .. } = self.arch;
        let side = self.arch.pooled();
        let mut pooled = vec![f32::NEG_INFINITY; self.arch.flat()];
        for f in 0..filters {
            let k = &self.conv_weight[f * ks * ks..(f + 1) * ks * ks];
            for y in 0..side * 2 {
                for x in 0..side * 2 {
                    let mut acc = self.conv_bias[f];
                    for dy in 0..ks {
                        let row = &image[(y + dy) * SIDE + x..(y + dy) * SIDE + x + ks];
                        acc += k[dy * ks..(dy + 1) * ks].iter().zip(row).map(|(w, v)| w * v).sum::<f32>();
                    }
                    let slot = &mut pooled[f * side * side + (y / 2) * side + x / 2];
                    *slot = slot.max(acc.max(0.0));
                }
            }
        }
        pooled
    }

    /// Class probabilities of one image.
    pub fn forward(&self, image: &[f32]) -> Vec<f32> {
        let mut hidden = Vec::with_capacity(self.arch.hidden);
        self.hidden.forward_into(&self.features(image), &mut hidden);
        let mut out = Vec::with_capacity(2);
        self.out.forward_into(&hidden, &mut out);
        out
    }
}

impl PlainCnn {
    /// The most probable class of each image (ties to the lowest index); plain arithmetic on
    /// the exported weights, which cannot fail.
    pub fn classify(&self, rows: &[f32]) -> Vec<usize> {
        rows.chunks_exact(SIDE * SIDE)
            .map(|r| {
                let p = self.forward(r);
                (0..p.len()).fold(0, |b, i| if p[i] > p[b] { i } else { b })
            })
            .collect()
    }
}

impl BlackBox for PlainCnn {
    fn classes(&self) -> usize {
        self.out.outputs
    }

    fn inputs(&self) -> usize {
        SIDE * SIDE
    }

    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
        Ok(rows.chunks_exact(SIDE * SIDE).flat_map(|r| self.forward(r)).collect())
    }
}

/// The burn network.
#[derive(Module, Debug)]
struct CnnNet {
    conv: Conv2d,
    hidden: Linear,
    out: Linear,
    #[module(skip)]
    arch: Arch,
}

impl CnnNet {
    fn new(rng: &mut SeededRng, arch: Arch, device: &Device) -> Self {
        let Arch { filters, kernel: k, hidden } = arch;
        let mut conv = Conv2dConfig::new([1, filters], [k, k]).init(device);
        let bound = 1.0 / k as f32;
        let w: Vec<f32> = (0..filters * k * k).map(|_| rng.symmetric(bound)).collect();
        let b: Vec<f32> = (0..filters).map(|_| rng.symmetric(bound)).collect();
        conv.weight = Param::from_tensor(Tensor::from_data(TensorData::new(w, [filters, 1, k, k]), device));
        conv.bias = Some(Param::from_tensor(Tensor::from_data(TensorData::new(b, [filters]), device)));
        Self {
            conv,
            hidden: train::init_linear(rng, arch.flat(), hidden, device),
            out: train::init_linear(rng, hidden, 2, device),
            arch,
        }
    }

    /// Logits; `mask` is the (already scaled) dropout mask of the hidden layer when training.
    fn logits(&self, x: Tensor<4>, mask: Option<Tensor<2>>) -> Tensor<2> {
        let n = x.dims()[0];
        let h = relu(self.conv.forward(x));
        let h = MaxPool2dConfig::new([2, 2]).init().forward(h);
        let h = relu(self.hidden.forward(h.reshape([n, self.arch.flat()])));
        let h = match mask {
            Some(m) => h * m,
            None => h,
        };
        self.out.forward(h)
    }

    fn export(&self) -> PlainCnn {
        let values = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap_or_default();
        let conv_weight = self.conv.weight.val().into_data().try_to_vec::<f32>().unwrap_or_default();
        let conv_bias =
            self.conv.bias.as_ref().map(|b| values(b.val())).unwrap_or_else(|| vec![0.0; self.arch.filters]);
        PlainCnn {
            arch: self.arch,
            conv_weight,
            conv_bias,
            hidden: train::export_linear(&self.hidden, Activation::Relu),
            out: train::export_linear(&self.out, Activation::Softmax),
        }
    }
}

fn image_batch(x: &[f32], rows: &[usize], device: &Device) -> Tensor<4> {
    let mut data = Vec::with_capacity(rows.len() * SIDE * SIDE);
    for &r in rows {
        data.extend_from_slice(&x[r * SIDE * SIDE..(r + 1) * SIDE * SIDE]);
    }
    Tensor::from_data(TensorData::new(data, [rows.len(), 1, SIDE, SIDE]), device)
}

fn dropout_mask(rng: &mut SeededRng, n: usize, hidden: usize, device: &Device) -> Tensor<2> {
    let keep = 1.0 - DROPOUT;
    let data: Vec<f32> = (0..n * hidden).map(|_| if rng.uniform() < keep { 1.0 / keep } else { 0.0 }).collect();
    Tensor::from_data(TensorData::new(data, [n, hidden]), device)
}

/// Trains the CNN on `x` (`n` images of 784 pixels in `[0, 1]`) with labels in `{0, 1}`;
/// `progress` counts the mini-batches of all epochs.
///
/// # Errors
/// [`TrainError`] for malformed data or a diverging loss.
pub fn train_cnn(x: &[f32], y: &[usize], config: &CnnConfig, progress: &dyn Progress) -> Result<PlainCnn, TrainError> {
    if !x.len().is_multiple_of(SIDE * SIDE) || x.len() / (SIDE * SIDE) != y.len() {
        return Err(TrainError::Shape { len: x.len(), n_cols: SIDE * SIDE });
    }
    if let Some(row) = y.iter().position(|&l| l > 1) {
        return Err(TrainError::Label { row, label: y[row], classes: 2 });
    }
    if y.is_empty() {
        return Err(TrainError::Empty);
    }
    let device = train::device();
    let mut rng = SeededRng::new(config.seed);
    let mut net = CnnNet::new(&mut rng, config.arch, &device);
    let mut optim = AdamConfig::new().init();
    let batches = y.len().div_ceil(config.batch_size.max(1));
    let label = format!("training CNN {}x{}x{}", config.arch.filters, config.arch.kernel, config.arch.kernel);
    progress.begin(&label, (config.epochs * batches) as u64, "batches");
    for epoch in 0..config.epochs {
        let mut total = 0.0;
        for rows in rng.permutation(y.len()).chunks(config.batch_size.max(1)) {
            progress.advance(1);
            let mask = dropout_mask(&mut rng, rows.len(), config.arch.hidden, &device);
            let logits = net.logits(image_batch(x, rows, &device), Some(mask));
            let mut onehot = vec![0.0f32; rows.len() * 2];
            rows.iter().enumerate().for_each(|(i, &r)| onehot[i * 2 + y[r]] = 1.0);
            let targets = Tensor::from_data(TensorData::new(onehot, [rows.len(), 2]), &device);
            let loss = (log_softmax(logits, 1) * targets).sum_dim(1).mean().neg();
            total += f64::from(train::scalar(loss.clone())) * rows.len() as f64;
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            net = optim.step(config.learning_rate, net, grads);
        }
        let mean = total / y.len() as f64;
        if !mean.is_finite() {
            return Err(TrainError::Diverged { epoch, loss: mean });
        }
    }
    progress.end();
    Ok(net.export())
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::activation::softmax;

    /// Images with a bar on the left (class 0) or right (class 1) and a seeded speckle.
    fn bars(n: usize) -> (Vec<f32>, Vec<usize>) {
        let mut rng = SeededRng::new(4);
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..n {
            let label = i % 2;
            let col0 = if label == 0 { 4 } else { 20 };
            for p in 0..SIDE * SIDE {
                let on = (col0..col0 + 4).contains(&(p % SIDE));
                x.push(if on { 0.9 } else { 0.2 * rng.uniform() });
            }
            y.push(label);
        }
        (x, y)
    }

    #[test]
    fn test_plain_forward_matches_burn() {
        let device = train::device();
        let mut rng = SeededRng::new(9);
        for arch in [Arch::FIRST, Arch::second()] {
            let net = CnnNet::new(&mut rng, arch, &device);
            let (x, _) = bars(3);
            let burn_p = softmax(net.logits(image_batch(&x, &[0, 1, 2], &device), None), 1);
            let burn_p = burn_p.into_data().try_to_vec::<f32>().expect("f32");
            let plain = net.export().predict_proba(&x).expect("plain arithmetic");
            assert_eq!(plain.len(), burn_p.len());
            for (a, b) in plain.iter().zip(&burn_p) {
                assert!((a - b).abs() < 1e-4, "{arch:?}: {plain:?} vs {burn_p:?}");
            }
        }
    }

    #[test]
    fn test_cnn_learns_bars() {
        let (x, y) = bars(64);
        let config = CnnConfig { epochs: 3, batch_size: 16, learning_rate: 2e-3, seed: 3, arch: Arch::FIRST };
        let model = train_cnn(&x, &y, &config, &cent_host::progress::Silent).expect("trains");
        let acc = cent_host::blackbox::accuracy(&model, &x, &y).expect("rows");
        assert!(acc > 0.95, "accuracy {acc}");
    }
}
