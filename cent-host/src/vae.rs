//! The variational autoencoder whose latent space defines "neighbour" (design §3.2).
//!
//! Gaussian encoder q(z|x) = N(mu, diag sigma^2) with ReLU hidden layers, decoder mirrored with
//! a sigmoid output (encoded features lie in [0, 1]), trained on the ELBO with binary
//! cross-entropy reconstruction (summed over features) plus a KL term weighted 2.5e-4 (the
//! paper's weight). Trained with burn, then exported as two plain [`Mlp`]s; the encoder keeps
//! only the mean head, because every encoding uses mu, never a sample.

use std::path::Path;

use crate::progress::Progress;
use burn::module::Module;
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_sigmoid;
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::layers::{Activation, Mlp};
use crate::train::{self, CacheKey, FileError, SeededRng};

/// Architecture and training hyperparameters of a [`Vae`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VaeConfig {
    /// Encoder hidden widths, input side first; the decoder uses them in reverse.
    pub hidden: Vec<usize>,
    pub latent: usize,
    /// Weight of the KL term in the ELBO.
    pub kl_weight: f64,
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub seed: u64,
}

impl VaeConfig {
    /// A config with the given shape and the default training hyperparameters (sized for Adult:
    /// 8 epochs of batch 256, about 1100 Adam steps).
    pub fn new(hidden: Vec<usize>, latent: usize) -> Self {
        Self { hidden, latent, kl_weight: 2.5e-4, epochs: 8, batch_size: 256, learning_rate: 2e-2, seed: 0 }
    }

    /// The paper's per-dataset shape: `adult`, `compas`, `credit`, `heloc`, or `mnist` /
    /// `fashion-mnist` / `images` (case-insensitive).
    ///
    /// Epochs scale inversely with the dataset's training rows so that each tabular preset gets
    /// roughly Adult's number of Adam steps; only Adult's schedule has been measured. The image
    /// preset uses a smaller learning rate for its much wider layers.
    ///
    /// # Errors
    /// [`VaeError::UnknownDataset`] for any other name.
    pub fn for_dataset(name: &str) -> Result<Self, VaeError> {
        let with_epochs = |config: Self, epochs| Self { epochs, ..config };
        let config = match name.to_ascii_lowercase().as_str() {
            "adult" => Self::new(vec![25], 8),
            "compas" => with_epochs(Self::new(vec![16], 7), 40),
            "credit" => with_epochs(Self::new(vec![16], 7), 12),
            "heloc" => with_epochs(Self::new(vec![25, 16], 12), 30),
            "mnist" | "fashion-mnist" | "images" => {
                Self { epochs: 5, batch_size: 128, learning_rate: 1e-3, ..Self::new(vec![500, 250], 32) }
            }
            _ => return Err(VaeError::UnknownDataset(name.to_string())),
        };
        Ok(config)
    }

    fn check(&self) -> Result<(), VaeError> {
        let bad = |reason: &str| Err(VaeError::Config(reason.to_string()));
        if self.latent == 0 || self.hidden.contains(&0) {
            return bad("layer widths must be at least 1");
        }
        if self.epochs == 0 || self.batch_size == 0 {
            return bad("epochs and batch_size must be at least 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return bad("learning_rate must be positive");
        }
        if !(self.kl_weight.is_finite() && self.kl_weight >= 0.0) {
            return bad("kl_weight must be non-negative");
        }
        Ok(())
    }
}

/// Why a VAE could not be configured or trained.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VaeError {
    #[error("no training rows")]
    Empty,
    #[error("{len} values do not form rows of {n_cols} columns")]
    Shape { len: usize, n_cols: usize },
    #[error("no VAE preset for dataset {0:?} (known: adult, compas, credit, heloc, mnist, fashion-mnist, images)")]
    UnknownDataset(String),
    #[error("invalid VAE config: {0}")]
    Config(String),
    #[error("VAE training diverged: mean loss {loss} in epoch {epoch}")]
    Diverged { epoch: usize, loss: f64 },
}

/// A trained VAE as plain layers.
///
/// `encoder` maps a row to mu (ReLU hidden layers, identity output). `decoder` maps a latent
/// vector to reconstruction **logits** (identity output; [`crate::layers`] has no sigmoid), and
/// [`Vae::decode`] applies the sigmoid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vae {
    pub encoder: Mlp,
    pub decoder: Mlp,
    pub config: VaeConfig,
}

/// The saved form of a [`Vae`].
#[derive(Serialize, Deserialize)]
struct VaeFile {
    format: String,
    version: u32,
    n_cols: usize,
    vae: Vae,
    /// What the VAE was trained from, in a cached file (absent in files saved without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_key: Option<CacheKey>,
}

const FILE_FORMAT: &str = "cent-vae";
const FILE_VERSION: u32 = 1;

impl Vae {
    /// Number of encoded input columns.
    pub fn inputs(&self) -> usize {
        self.encoder.inputs()
    }

    /// Latent dimension.
    pub fn latent(&self) -> usize {
        self.encoder.outputs()
    }

    /// Latent means of row-major `rows`: `n * latent()` values.
    pub fn encode(&self, rows: &[f32]) -> Vec<f32> {
        self.encoder.forward_batch(rows)
    }

    /// Reconstructions in [0, 1] of row-major latent vectors: `n * inputs()` values.
    pub fn decode(&self, latents: &[f32]) -> Vec<f32> {
        self.decoder.forward_batch(latents).into_iter().map(sigmoid).collect()
    }

    /// Mean over rows of the reconstruction loss used in training (binary cross-entropy
    /// summed over features), reconstructing from mu.
    pub fn reconstruction_error(&self, rows: &[f32]) -> f64 {
        let logits = self.decoder.forward_batch(&self.encode(rows));
        let total: f64 = rows.iter().zip(&logits).map(|(&x, &l)| f64::from(bce_with_logit(x, l))).sum();
        let n = rows.len() / self.inputs().max(1);
        if n == 0 { 0.0 } else { total / n as f64 }
    }

    /// Saves the VAE as JSON.
    ///
    /// # Errors
    /// [`FileError::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        self.save_keyed(path, None)
    }

    /// Saves the VAE as JSON together with the key of what it was trained from (see
    /// [`crate::artifacts`]); the file is written whole or not at all.
    ///
    /// # Errors
    /// [`FileError::Io`] when the file cannot be written.
    pub fn save_keyed(&self, path: &Path, cache_key: Option<&CacheKey>) -> Result<(), FileError> {
        let file = VaeFile {
            format: FILE_FORMAT.into(),
            version: FILE_VERSION,
            n_cols: self.inputs(),
            vae: self.clone(),
            cache_key: cache_key.cloned(),
        };
        train::write_json(path, FILE_FORMAT, &file)
    }

    /// Loads a VAE saved by [`Vae::save`], checking that both networks are consistent with each
    /// other and with the stored config.
    ///
    /// # Errors
    /// A [`FileError`] naming the file when it cannot be read, is of another kind or version, or
    /// is inconsistent.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        Self::load_keyed(path).map(|(vae, _)| vae)
    }

    /// [`Vae::load`], also returning the key stored by [`Vae::save_keyed`], if any.
    ///
    /// # Errors
    /// As [`Vae::load`].
    pub fn load_keyed(path: &Path) -> Result<(Self, Option<CacheKey>), FileError> {
        let file: VaeFile = train::read_json(path, FILE_FORMAT, FILE_VERSION)?;
        let corrupt = |reason: String| FileError::Corrupt { path: path.to_path_buf(), reason };
        train::check_mlp(&file.vae.encoder).map_err(|r| corrupt(format!("encoder: {r}")))?;
        train::check_mlp(&file.vae.decoder).map_err(|r| corrupt(format!("decoder: {r}")))?;
        check_shape(&file.vae, file.n_cols).map_err(corrupt)?;
        Ok((file.vae, file.cache_key))
    }

    /// [`Vae::load`], then checks the VAE against the data it will encode.
    ///
    /// # Errors
    /// As [`Vae::load`], plus [`FileError::Dims`] when `n_cols` differs.
    pub fn load_checked(path: &Path, n_cols: usize) -> Result<Self, FileError> {
        let vae = Self::load(path)?;
        train::check_dim(path, "n_cols", vae.inputs(), n_cols)?;
        Ok(vae)
    }
}

/// Checks that a loaded VAE's networks have the shape its config describes.
fn check_shape(vae: &Vae, n_cols: usize) -> Result<(), String> {
    let (enc, dec, cfg) = (&vae.encoder, &vae.decoder, &vae.config);
    if enc.inputs() != n_cols || dec.outputs() != n_cols {
        return Err(format!("networks do not map {n_cols} columns"));
    }
    if enc.outputs() != cfg.latent || dec.inputs() != cfg.latent {
        return Err(format!("networks do not match latent = {}", cfg.latent));
    }
    let depth = cfg.hidden.len() + 1;
    if enc.layers.len() != depth || dec.layers.len() != depth {
        return Err(format!("networks do not have {depth} layers"));
    }
    let linear_out = |m: &Mlp| m.layers.last().map(|l| l.activation) == Some(Activation::Identity);
    if !linear_out(enc) || !linear_out(dec) {
        return Err("output layers must be linear".into());
    }
    Ok(())
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

/// `-(x ln s(l) + (1 - x) ln(1 - s(l)))` for the sigmoid `s`, in the overflow-free form.
fn bce_with_logit(x: f32, l: f32) -> f32 {
    l.max(0.0) - x * l + (-l.abs()).exp().ln_1p()
}

/// Trains a VAE on row-major `x` (`n_cols` columns, values in [0, 1]).
///
/// # Errors
/// [`VaeError`] for malformed data or config, or when the loss stops being finite.
pub fn train(x: &[f32], n_cols: usize, config: &VaeConfig, progress: Option<&dyn Progress>) -> Result<Vae, VaeError> {
    train_with_losses(x, n_cols, config, progress).map(|(vae, _)| vae)
}

/// [`train()`], also returning the mean training loss (negative ELBO per row) of every epoch.
///
/// # Errors
/// As [`train()`].
pub fn train_with_losses(
    x: &[f32],
    n_cols: usize,
    config: &VaeConfig,
    progress: Option<&dyn Progress>,
) -> Result<(Vae, Vec<f64>), VaeError> {
    config.check()?;
    if n_cols == 0 || !x.len().is_multiple_of(n_cols) {
        return Err(VaeError::Shape { len: x.len(), n_cols });
    }
    let n = x.len() / n_cols;
    if n == 0 {
        return Err(VaeError::Empty);
    }
    let device = train::device();
    let mut rng = SeededRng::new(config.seed);
    let mut net = Net::new(&mut rng, n_cols, config, &device);
    let mut optim = AdamConfig::new().init();
    let mut losses = Vec::with_capacity(config.epochs);
    for epoch in 0..config.epochs {
        let mut total = 0.0;
        for rows in rng.permutation(n).chunks(config.batch_size) {
            let input = train::batch_tensor(x, n_cols, rows, &device);
            let eps = noise(&mut rng, rows.len(), config.latent, &device);
            let loss = net.loss(input, eps, config.kl_weight);
            total += f64::from(train::scalar(loss.clone())) * rows.len() as f64;
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            net = optim.step(config.learning_rate, net, grads);
        }
        let mean = total / n as f64;
        if !mean.is_finite() {
            return Err(VaeError::Diverged { epoch, loss: mean });
        }
        losses.push(mean);
        train::progress_epoch(progress);
    }
    let (encoder, decoder) = net.export();
    Ok((Vae { encoder, decoder, config: config.clone() }, losses))
}

/// Standard normal noise for the reparameterisation, drawn from the training's own generator.
fn noise(rng: &mut SeededRng, rows: usize, latent: usize, device: &Device) -> Tensor<2> {
    let data: Vec<f32> = (0..rows * latent).map(|_| rng.normal()).collect();
    Tensor::from_data(TensorData::new(data, [rows, latent]), device)
}

/// The burn twin of a [`Vae`], with the log-variance head that only training needs.
#[derive(Module, Debug)]
struct Net {
    trunk: Vec<Linear>,
    mu: Linear,
    log_var: Linear,
    decoder: Vec<Linear>,
}

impl Net {
    fn new(rng: &mut SeededRng, n_cols: usize, config: &VaeConfig, device: &Device) -> Self {
        let enc: Vec<usize> = std::iter::once(n_cols).chain(config.hidden.iter().copied()).collect();
        let dec: Vec<usize> =
            std::iter::once(config.latent).chain(config.hidden.iter().rev().copied()).chain([n_cols]).collect();
        let last = enc[enc.len() - 1];
        Self {
            trunk: train::init_stack(rng, &enc, device),
            mu: train::init_linear(rng, last, config.latent, device),
            log_var: train::init_linear(rng, last, config.latent, device),
            decoder: train::init_stack(rng, &dec, device),
        }
    }

    /// Mean and log-variance of q(z|x).
    fn encode(&self, x: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let h = train::forward_stack(&self.trunk, x, false);
        (self.mu.forward(h.clone()), self.log_var.forward(h))
    }

    fn decode_logits(&self, z: Tensor<2>) -> Tensor<2> {
        train::forward_stack(&self.decoder, z, true)
    }

    /// Batch mean of the negative ELBO: BCE summed over features + `kl_weight` * KL.
    ///
    /// Per value, BCE = -(x ln s(l) + (1 - x) ln s(-l)) = (1 - x) l - ln s(l), because
    /// ln s(-l) = ln s(l) - l: one fused `log_sigmoid` instead of two (a debug build pays per
    /// element op).
    fn loss(&self, x: Tensor<2>, eps: Tensor<2>, kl_weight: f64) -> Tensor<1> {
        let per_row = 1.0 / x.dims()[0] as f64;
        let complement = x.clone().neg().add_scalar(1.0);
        let (mu, log_var) = self.encode(x);
        let z = mu.clone() + log_var.clone().mul_scalar(0.5).exp() * eps;
        let logits = self.decode_logits(z);
        let recon = (complement * logits.clone() - log_sigmoid(logits)).sum();
        let kl_terms = log_var.clone().add_scalar(1.0) - mu.square() - log_var.exp();
        let kl = kl_terms.sum().mul_scalar(-0.5);
        (recon + kl.mul_scalar(kl_weight)).mul_scalar(per_row)
    }

    /// The encoder (trunk + mean head) and decoder as plain layers.
    fn export(&self) -> (Mlp, Mlp) {
        let mut encoder = train::export_stack(&self.trunk, Activation::Relu);
        encoder.push(train::export_linear(&self.mu, Activation::Identity));
        let decoder = train::export_stack(&self.decoder, Activation::Identity);
        (Mlp { layers: encoder }, Mlp { layers: decoder })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 240 rows of 6 columns in [0.1, 0.9] that depend on two latent factors only.
    fn low_rank() -> Vec<f32> {
        const MIX: [[f32; 2]; 6] = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-0.8, 0.2], [0.3, -0.9], [-0.5, -0.5]];
        let mut x = Vec::new();
        for i in 0..16 {
            for j in 0..15 {
                let (a, b) = (i as f32 / 15.0 - 0.5, j as f32 / 14.0 - 0.5);
                x.extend(MIX.iter().map(|m| 0.5 + 0.55 * (m[0] * a + m[1] * b)));
            }
        }
        x
    }

    fn quick(epochs: usize, seed: u64) -> VaeConfig {
        VaeConfig { epochs, batch_size: 32, learning_rate: 2e-2, seed, ..VaeConfig::new(vec![16], 2) }
    }

    /// Mean squared error of reconstructing through mu, and of predicting each column's mean.
    fn mse_and_baseline(vae: &Vae, x: &[f32]) -> (f32, f32) {
        let cols = vae.inputs();
        let n = x.len() / cols;
        let rec = vae.decode(&vae.encode(x));
        let mse = x.iter().zip(&rec).map(|(a, b)| (a - b) * (a - b)).sum::<f32>() / x.len() as f32;
        let means: Vec<f32> = (0..cols).map(|c| x.iter().skip(c).step_by(cols).sum::<f32>() / n as f32).collect();
        let base = x.iter().enumerate().map(|(i, v)| (v - means[i % cols]).powi(2)).sum::<f32>() / x.len() as f32;
        (mse, base)
    }

    #[test]
    fn test_vae_learns_low_rank_data() {
        let x = low_rank();
        let (vae, losses) = train_with_losses(&x, 6, &quick(30, 1), None).expect("trains");
        assert_eq!((vae.inputs(), vae.latent()), (6, 2));
        assert!(losses[losses.len() - 1] < losses[0] - 0.05, "loss did not fall: {losses:?}");
        let (mse, base) = mse_and_baseline(&vae, &x);
        assert!(mse < 0.1 * base, "reconstruction mse {mse} vs column-mean baseline {base}");
    }

    #[test]
    fn test_encode_is_deterministic_mean() {
        let x = low_rank();
        let vae = train(&x, 6, &quick(2, 4), None).expect("trains");
        let first = vae.encode(&x[..12]);
        assert_eq!(first.len(), 2 * 2);
        assert_eq!(first, vae.encode(&x[..12]));
        assert_eq!(vae.encoder.layers.last().map(|l| l.outputs), Some(2));
    }

    #[test]
    fn test_same_seed_same_weights() {
        let x = low_rank();
        let a = train(&x, 6, &quick(3, 9), None).expect("trains");
        let b = train(&x, 6, &quick(3, 9), None).expect("trains");
        let c = train(&x, 6, &quick(3, 10), None).expect("trains");
        assert_eq!(a.encoder, b.encoder);
        assert_eq!(a.decoder, b.decoder);
        assert_ne!(a.encoder, c.encoder);
    }

    #[test]
    fn test_exported_layers_match_burn() {
        let device = train::device();
        let config = VaeConfig::new(vec![5, 4], 3);
        let net = Net::new(&mut SeededRng::new(2), 6, &config, &device);
        let rows = low_rank()[..18].to_vec();
        let (mu, _) = net.encode(Tensor::from_data(TensorData::new(rows.clone(), [3, 6]), &device));
        let logits = net.decode_logits(mu.clone());
        let (encoder, decoder) = net.export();
        let plain_mu = encoder.forward_batch(&rows);
        let plain_logits = decoder.forward_batch(&plain_mu);
        for (plain, burn) in [(plain_mu, mu), (plain_logits, logits)] {
            let burn = burn.into_data().try_to_vec::<f32>().expect("f32 tensor");
            assert_eq!(plain.len(), burn.len());
            assert!(plain.iter().zip(&burn).all(|(a, b)| (a - b).abs() < 1e-5), "{plain:?} vs {burn:?}");
        }
    }

    #[test]
    fn test_save_load_round_trip_and_dims_error() {
        let vae = train(&low_rank(), 6, &quick(1, 0), None).expect("trains");
        let dir = std::env::temp_dir().join(format!("cent-vae-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("adult.vae.json");
        vae.save(&path).expect("saves");
        assert_eq!(Vae::load_checked(&path, 6).expect("loads"), vae);
        let err = Vae::load_checked(&path, 7).expect_err("7 columns do not fit");
        assert!(matches!(err, FileError::Dims { field: "n_cols", found: 6, expected: 7, .. }), "{err}");
        assert!(err.to_string().contains("adult.vae.json"), "{err}");
        std::fs::write(&path, r#"{"format":"cent-classifier","version":1}"#).expect("write");
        assert!(matches!(Vae::load(&path), Err(FileError::Format { .. })));
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn test_presets_and_bad_config() {
        let heloc = VaeConfig::for_dataset("HELOC").expect("known");
        assert_eq!((heloc.hidden, heloc.latent), (vec![25, 16], 12));
        assert!((heloc.kl_weight - 2.5e-4).abs() < 1e-12);
        assert!(matches!(VaeConfig::for_dataset("iris"), Err(VaeError::UnknownDataset(_))));
        let zero = VaeConfig { latent: 0, ..quick(1, 0) };
        assert!(matches!(train(&low_rank(), 6, &zero, None), Err(VaeError::Config(_))));
        assert!(matches!(train(&[0.5; 7], 6, &quick(1, 0), None), Err(VaeError::Shape { len: 7, n_cols: 6 })));
    }

    #[test]
    fn test_bce_with_logit_matches_definition() {
        for (x, l) in [(0.0f32, -3.0f32), (1.0, 2.0), (0.3, 0.5), (0.8, -60.0)] {
            let p = sigmoid(l);
            let direct = -(x * p.max(1e-30).ln() + (1.0 - x) * (1.0 - p).max(1e-30).ln());
            assert!((bce_with_logit(x, l) - direct).abs() < 1e-4 * direct.max(1.0), "x {x} l {l}");
        }
    }
}
