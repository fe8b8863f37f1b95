//! Pieces shared by the burn training loops of [`crate::blackbox`] and [`crate::vae`]: a seeded
//! RNG, layer initialisation and export to [`crate::layers`], mini-batching, progress reporting
//! and the JSON files trained weights are saved in.
//!
//! Architecture invariant: burn types stay inside this module and the two training modules.
//! Every trained network leaves as a plain [`Mlp`], and all inference runs on that.
//!
//! Determinism: all randomness (initial weights, batch order, VAE noise) is drawn from our own
//! seeded `SeededRng`, never from burn's process-global generator. Runs with the same seed are
//! therefore identical even when several trainings run in parallel threads.

use std::fs;
use std::path::{Path, PathBuf};

use crate::progress::Progress;
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::layers::{Activation, Dense, Mlp};

/// The device every training runs on: burn's pure-Rust CPU backend with autodiff.
pub fn device() -> Device {
    Device::flex().autodiff()
}

/// A seeded generator for everything random in training.
#[derive(Debug)]
pub struct SeededRng(Xoshiro256PlusPlus);

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        Self(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// Uniform in `[0, 1)`, from the top 24 bits (exactly representable in f32).
    pub fn uniform(&mut self) -> f32 {
        (self.0.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// Uniform in `[-bound, bound)`.
    pub fn symmetric(&mut self, bound: f32) -> f32 {
        (2.0 * self.uniform() - 1.0) * bound
    }

    /// Standard normal draw (Box-Muller; `1 - u` keeps the logarithm finite).
    pub fn normal(&mut self) -> f32 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }

    /// Uniform index in `0..n` (`n > 0`); the modulo bias is negligible for `n` far below 2^64.
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    /// A uniformly random permutation of `0..n` (Fisher-Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, self.below(i + 1));
        }
        order
    }
}

/// A fresh linear layer with weights and bias drawn from `U(-1/sqrt(d_in), 1/sqrt(d_in))`
/// (burn's and PyTorch's default scale), but from our seeded generator.
pub fn init_linear(rng: &mut SeededRng, d_in: usize, d_out: usize, device: &Device) -> Linear {
    let bound = 1.0 / (d_in.max(1) as f32).sqrt();
    let weight: Vec<f32> = (0..d_in * d_out).map(|_| rng.symmetric(bound)).collect();
    let bias: Vec<f32> = (0..d_out).map(|_| rng.symmetric(bound)).collect();
    Linear {
        weight: Param::from_tensor(Tensor::from_data(TensorData::new(weight, [d_in, d_out]), device)),
        bias: Some(Param::from_tensor(Tensor::from_data(TensorData::new(bias, [d_out]), device))),
    }
}

/// Fresh layers `sizes[0] -> sizes[1] -> ... -> sizes[last]`.
pub fn init_stack(rng: &mut SeededRng, sizes: &[usize], device: &Device) -> Vec<Linear> {
    sizes.windows(2).map(|w| init_linear(rng, w[0], w[1], device)).collect()
}

/// Applies `layers` with ReLU after each one; when `last_identity` the final layer stays linear.
pub fn forward_stack(layers: &[Linear], mut x: Tensor<2>, last_identity: bool) -> Tensor<2> {
    for (i, layer) in layers.iter().enumerate() {
        x = layer.forward(x);
        if !(last_identity && i + 1 == layers.len()) {
            x = relu(x);
        }
    }
    x
}

/// Reads a tensor back as a flat `Vec<f32>`.
///
/// Flex stores f32 tensors as f32, so the conversion cannot fail for tensors built here; an
/// empty vector would make [`check_mlp`] reject the export rather than panic.
fn tensor_values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.into_data().try_to_vec::<f32>().unwrap_or_default()
}

/// Copies a burn layer into a plain [`Dense`]. burn stores the weight as `[d_in, d_out]`
/// row-major and computes `x W + b`; [`Dense`] wants `[outputs][inputs]`, hence the transpose.
pub fn export_linear(linear: &Linear, activation: Activation) -> Dense {
    let [inputs, outputs] = linear.weight.dims();
    let w = tensor_values(linear.weight.val());
    let mut weights = vec![0.0; inputs * outputs];
    for i in 0..inputs {
        for o in 0..outputs {
            weights[o * inputs + i] = w[i * outputs + o];
        }
    }
    let bias = linear.bias.as_ref().map_or_else(|| vec![0.0; outputs], |b| tensor_values(b.val()));
    Dense { inputs, outputs, weights, bias, activation }
}

/// Exports a stack run by [`forward_stack`]: ReLU everywhere, `last` on the final layer.
pub fn export_stack(layers: &[Linear], last: Activation) -> Vec<Dense> {
    let n = layers.len();
    layers.iter().enumerate().map(|(i, l)| export_linear(l, if i + 1 == n { last } else { Activation::Relu })).collect()
}

/// The rows `rows` of the row-major matrix `x` (width `n_cols`) as a `[rows.len(), n_cols]` tensor.
pub fn batch_tensor(x: &[f32], n_cols: usize, rows: &[usize], device: &Device) -> Tensor<2> {
    let mut data = Vec::with_capacity(rows.len() * n_cols);
    for &r in rows {
        data.extend_from_slice(&x[r * n_cols..(r + 1) * n_cols]);
    }
    Tensor::from_data(TensorData::new(data, [rows.len(), n_cols]), device)
}

/// Reads a one-element loss tensor.
pub fn scalar(loss: Tensor<1>) -> f32 {
    loss.into_scalar::<f32>()
}

/// Reports one finished epoch. The stage (its label and total) is the caller's; the per-epoch
/// losses are returned by the `train_with_losses` functions instead.
pub fn progress_epoch(progress: Option<&dyn Progress>) {
    if let Some(p) = progress {
        p.advance(1);
    }
}

/// Checks that a network is internally consistent, so that [`Mlp::forward`] cannot index out of
/// bounds: every layer's vectors have the declared lengths and consecutive layers chain.
pub fn check_mlp(mlp: &Mlp) -> Result<(), String> {
    if mlp.layers.is_empty() {
        return Err("network has no layers".into());
    }
    for (i, l) in mlp.layers.iter().enumerate() {
        if l.inputs == 0 || l.outputs == 0 {
            return Err(format!("layer {i} has a zero dimension"));
        }
        if l.weights.len() != l.inputs * l.outputs || l.bias.len() != l.outputs {
            return Err(format!("layer {i} has weight/bias lengths that do not match {}x{}", l.outputs, l.inputs));
        }
        if l.weights.iter().chain(&l.bias).any(|v| !v.is_finite()) {
            return Err(format!("layer {i} has a non-finite weight"));
        }
    }
    for (i, pair) in mlp.layers.windows(2).enumerate() {
        if pair[0].outputs != pair[1].inputs {
            return Err(format!(
                "layer {i} outputs {} values but layer {} takes {}",
                pair[0].outputs,
                i + 1,
                pair[1].inputs
            ));
        }
    }
    Ok(())
}

/// Failure to save or load a file of trained weights. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    #[error("cannot access {}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is not a valid {what} file: {source}", .path.display())]
    Json { path: PathBuf, what: &'static str, source: serde_json::Error },
    #[error("{} holds a {found:?} file, expected {expected:?}", .path.display())]
    Format { path: PathBuf, found: String, expected: &'static str },
    #[error("{} has format version {found}, this build reads version {expected}", .path.display())]
    Version { path: PathBuf, found: u32, expected: u32 },
    #[error("{} is inconsistent: {reason}", .path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("{} was trained with {field} = {found}, but the data has {expected}", .path.display())]
    Dims { path: PathBuf, field: &'static str, found: usize, expected: usize },
}

/// The leading fields of every weights file, read first so that a file of another kind or
/// version is reported as such rather than as a confusing structural parse error.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

/// What a cached weights file was built from, as hex SHA-256 digests. [`crate::artifacts`]
/// computes it from the inputs at hand and reuses a cached file only when the `key`s are equal;
/// the parts say which input changed when they are not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// Digest of `format` and the three parts below.
    pub key: String,
    /// Version of the cache format the key was computed under.
    pub format: u32,
    /// The encoded training rows (and their labels, for a classifier), as bytes.
    pub data: String,
    /// The encoding: feature names, kinds, columns, ranges, categories in order, class names.
    pub schema: String,
    /// The training options: model kind and the whole config, seed included.
    pub options: String,
}

/// Writes `value` as pretty JSON to `path`, through a temporary file renamed into place, so
/// that a reader never sees half a file.
pub fn write_json<T: Serialize>(path: &Path, what: &'static str, value: &T) -> Result<(), FileError> {
    let text = serde_json::to_string_pretty(value).map_err(|source| FileError::Json {
        path: path.to_path_buf(),
        what,
        source,
    })?;
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}-{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let io = |source| FileError::Io { path: path.to_path_buf(), source };
    fs::write(&tmp, text).map_err(io)?;
    fs::rename(&tmp, path).map_err(|source| {
        let _ = fs::remove_file(&tmp);
        io(source)
    })
}

/// Reads a JSON weights file whose header must say `format` (also used as the file kind in
/// messages) and `version`.
pub fn read_json<T: DeserializeOwned>(path: &Path, format: &'static str, version: u32) -> Result<T, FileError> {
    let owned = || path.to_path_buf();
    let text = fs::read_to_string(path).map_err(|source| FileError::Io { path: owned(), source })?;
    let header: Header =
        serde_json::from_str(&text).map_err(|source| FileError::Json { path: owned(), what: format, source })?;
    if header.format != format {
        return Err(FileError::Format { path: owned(), found: header.format, expected: format });
    }
    if header.version != version {
        return Err(FileError::Version { path: owned(), found: header.version, expected: version });
    }
    serde_json::from_str(&text).map_err(|source| FileError::Json { path: owned(), what: format, source })
}

/// Checks one dimension of a loaded file against the data it is about to be used with.
pub fn check_dim(path: &Path, field: &'static str, found: usize, expected: usize) -> Result<(), FileError> {
    if found == expected { Ok(()) } else { Err(FileError::Dims { path: path.to_path_buf(), field, found, expected }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_permutation_is_seeded_and_complete() {
        let a = SeededRng::new(7).permutation(50);
        let b = SeededRng::new(7).permutation(50);
        let c = SeededRng::new(8).permutation(50);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn test_normal_moments() {
        let mut rng = SeededRng::new(3);
        let draws: Vec<f32> = (0..20_000).map(|_| rng.normal()).collect();
        let mean = draws.iter().sum::<f32>() / draws.len() as f32;
        let var = draws.iter().map(|d| (d - mean) * (d - mean)).sum::<f32>() / draws.len() as f32;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "variance {var}");
    }

    #[test]
    fn test_export_linear_transposes() {
        let device = Device::flex();
        // burn layout [d_in = 2, d_out = 3]: W = [[1, 2, 3], [4, 5, 6]]
        let linear = Linear {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]),
                &device,
            )),
            bias: Some(Param::from_tensor(Tensor::from_data(TensorData::new(vec![0.5f32, 0.0, -0.5], [3]), &device))),
        };
        let dense = export_linear(&linear, Activation::Identity);
        assert_eq!((dense.inputs, dense.outputs), (2, 3));
        assert_eq!(dense.weights, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let mut out = Vec::new();
        dense.forward_into(&[1.0, -1.0], &mut out);
        let expected = [1.0 - 4.0 + 0.5, 2.0 - 5.0, 3.0 - 6.0 - 0.5];
        assert!(out.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6), "{out:?}");
    }

    #[test]
    fn test_check_mlp_rejects_broken_chain() {
        let layer = |inputs, outputs| Dense {
            inputs,
            outputs,
            weights: vec![0.0; inputs * outputs],
            bias: vec![0.0; outputs],
            activation: Activation::Identity,
        };
        assert!(check_mlp(&Mlp { layers: vec![layer(3, 2), layer(2, 1)] }).is_ok());
        assert!(check_mlp(&Mlp { layers: vec![layer(3, 2), layer(4, 1)] }).is_err());
        let mut short = layer(3, 2);
        short.bias.pop();
        assert!(check_mlp(&Mlp { layers: vec![short] }).is_err());
        assert!(check_mlp(&Mlp { layers: vec![] }).is_err());
    }
}
