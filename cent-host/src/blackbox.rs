//! Black-box classifiers: the [`BlackBox`] trait every explained model implements, and the two
//! built-in models of the paper (logistic regression and the 13-4 ReLU MLP), trained with burn
//! and served as plain [`Mlp`]s.
//!
//! The explainer only ever queries class probabilities, so any classifier fits behind
//! [`BlackBox`]; the built-ins exist so that the whole pipeline runs without an external model,
//! and so that the device can carry the (quantized) model itself.

use std::path::Path;

use burn::module::Module;
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::layers::{Activation, Mlp};
use crate::train::{self, FileError, SeededRng};

/// Any classifier that can be queried for class probabilities.
///
/// Rows are the schema's encoded feature vectors, row-major: `rows.len() == n * inputs()`.
/// A model may fail at run time (an ONNX runtime fault, a Python model raising): the failure is
/// a [`ModelError`] naming the model and the batch, never a panic.
pub trait BlackBox: Send + Sync {
    /// Number of classes, i.e. probabilities per row.
    fn classes(&self) -> usize;

    /// Number of encoded input columns per row.
    fn inputs(&self) -> usize;

    /// Class probabilities for each row, row-major: `n * classes()` values.
    ///
    /// # Errors
    /// [`ModelError::Failed`] when the model cannot evaluate the batch.
    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError>;

    /// [`BlackBox::predict_proba`], checked: exactly `classes()` finite values per row.
    ///
    /// # Errors
    /// The model's own [`ModelError`], or [`ModelError::Output`] when it returned the wrong
    /// number of values or a value that is not finite.
    fn probabilities(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        let n = rows.len() / self.inputs().max(1);
        let p = self.predict_proba(rows)?;
        let expected = n * self.classes();
        if p.len() != expected || self.classes() == 0 {
            return Err(ModelError::Output {
                rows: n,
                message: format!("{} values returned, {expected} expected ({} per row)", p.len(), self.classes()),
            });
        }
        if let Some(i) = p.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::Output {
                rows: n,
                message: format!("value {} of row {} is {}", i % self.classes(), i / self.classes(), p[i]),
            });
        }
        Ok(p)
    }

    /// The most probable class of each row; ties go to the lowest class index.
    ///
    /// # Errors
    /// As [`BlackBox::probabilities`].
    fn predict(&self, rows: &[f32]) -> Result<Vec<usize>, ModelError> {
        let classes = self.classes().max(1);
        Ok(self.probabilities(rows)?.chunks_exact(classes).map(argmax).collect())
    }
}

/// A classifier that failed at run time.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model could not evaluate a batch.
    #[error("the model {model} failed on a batch of {rows} row(s): {message}")]
    Failed { model: String, rows: usize, message: String },
    /// The model answered, but not with one probability per class and row.
    #[error("the model returned unusable probabilities for a batch of {rows} row(s): {message}")]
    Output { rows: usize, message: String },
}

/// Index of the largest value, the lowest index on ties (and 0 for an empty slice).
fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

/// The built-in model families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum ModelKind {
    /// Logistic regression: one dense layer and a softmax.
    Lr,
    /// The paper's MLP: hidden layers of 13 and 4 ReLU units, softmax output.
    Mlp,
}

impl ModelKind {
    /// Hidden layer widths of this family.
    pub fn hidden(self) -> &'static [usize] {
        match self {
            ModelKind::Lr => &[],
            ModelKind::Mlp => &[13, 4],
        }
    }
}

/// Hyperparameters of [`train()`]: cross-entropy, Adam, shuffled mini-batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub seed: u64,
}

impl TrainConfig {
    /// Defaults per family. On Adult (36k rows) the training loss has flattened by then, and
    /// each trains in well under a minute in an unoptimised build.
    pub fn for_kind(kind: ModelKind) -> Self {
        match kind {
            ModelKind::Lr => Self { epochs: 15, batch_size: 256, learning_rate: 1e-2, seed: 0 },
            ModelKind::Mlp => Self { epochs: 10, batch_size: 128, learning_rate: 1e-2, seed: 0 },
        }
    }

    fn check(&self) -> Result<(), TrainError> {
        let bad = |reason: &str| Err(TrainError::Config(reason.to_string()));
        if self.epochs == 0 {
            return bad("epochs must be at least 1");
        }
        if self.batch_size == 0 {
            return bad("batch_size must be at least 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return bad("learning_rate must be positive");
        }
        Ok(())
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self::for_kind(ModelKind::Mlp)
    }
}

/// Why a classifier could not be trained or evaluated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    #[error("no training rows")]
    Empty,
    #[error("{len} values do not form rows of {n_cols} columns")]
    Shape { len: usize, n_cols: usize },
    #[error("{rows} rows but {labels} labels")]
    LabelCount { rows: usize, labels: usize },
    #[error("label {label} of row {row} is not below the class count {classes}")]
    Label { row: usize, label: usize, classes: usize },
    #[error("at least 2 classes are needed, got {0}")]
    Classes(usize),
    #[error("invalid training config: {0}")]
    Config(String),
    #[error("training diverged: mean loss {loss} in epoch {epoch}")]
    Diverged { epoch: usize, loss: f64 },
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// A built-in classifier: a trained network served by the plain [`Mlp`] (softmax output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub kind: ModelKind,
    pub mlp: Mlp,
}

impl BlackBox for Model {
    fn classes(&self) -> usize {
        self.mlp.outputs()
    }

    fn inputs(&self) -> usize {
        self.mlp.inputs()
    }

    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        Ok(self.mlp.forward_batch(rows))
    }
}

impl Model {
    /// The most probable class of each row (ties to the lowest index). A built-in model is
    /// plain arithmetic on validated layers and cannot fail, unlike [`BlackBox::predict`].
    pub fn classify(&self, rows: &[f32]) -> Vec<usize> {
        let classes = self.mlp.outputs().max(1);
        self.mlp.forward_batch(rows).chunks_exact(classes).map(argmax).collect()
    }
}

/// The saved form of a [`Model`]: header, dimensions, weights.
#[derive(Serialize, Deserialize)]
struct ModelFile {
    format: String,
    version: u32,
    kind: ModelKind,
    n_cols: usize,
    classes: usize,
    mlp: Mlp,
}

const FILE_FORMAT: &str = "cent-classifier";
const FILE_VERSION: u32 = 1;

impl Model {
    /// Saves the model as JSON.
    ///
    /// # Errors
    /// [`FileError::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        let file = ModelFile {
            format: FILE_FORMAT.into(),
            version: FILE_VERSION,
            kind: self.kind,
            n_cols: self.inputs(),
            classes: self.classes(),
            mlp: self.mlp.clone(),
        };
        train::write_json(path, FILE_FORMAT, &file)
    }

    /// Loads a model saved by [`Model::save`], checking that its weights are consistent.
    ///
    /// # Errors
    /// A [`FileError`] naming the file when it cannot be read, is of another kind or version, or
    /// its weights do not match its declared shape.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        let file: ModelFile = train::read_json(path, FILE_FORMAT, FILE_VERSION)?;
        let corrupt = |reason: String| FileError::Corrupt { path: path.to_path_buf(), reason };
        train::check_mlp(&file.mlp).map_err(corrupt)?;
        if file.mlp.inputs() != file.n_cols || file.mlp.outputs() != file.classes {
            return Err(corrupt("declared n_cols/classes differ from the weights".into()));
        }
        if file.mlp.layers.len() != file.kind.hidden().len() + 1 {
            return Err(corrupt(format!("layer count does not fit a {:?} model", file.kind)));
        }
        if file.mlp.layers.last().map(|l| l.activation) != Some(Activation::Softmax) {
            return Err(corrupt("the output layer is not a softmax".into()));
        }
        Ok(Self { kind: file.kind, mlp: file.mlp })
    }

    /// [`Model::load`], then checks the model against the data it will classify.
    ///
    /// # Errors
    /// As [`Model::load`], plus [`FileError::Dims`] when `n_cols` or `classes` differ.
    pub fn load_checked(path: &Path, n_cols: usize, classes: usize) -> Result<Self, FileError> {
        let model = Self::load(path)?;
        train::check_dim(path, "n_cols", model.inputs(), n_cols)?;
        train::check_dim(path, "classes", model.classes(), classes)?;
        Ok(model)
    }
}

/// Trains a built-in classifier on row-major `x` (`n_cols` columns) with labels `y < classes`.
///
/// # Errors
/// [`TrainError`] for malformed data or config, or when the loss stops being finite.
pub fn train(
    kind: ModelKind,
    x: &[f32],
    n_cols: usize,
    y: &[usize],
    classes: usize,
    config: &TrainConfig,
    progress: Option<&ProgressBar>,
) -> Result<Model, TrainError> {
    train_with_losses(kind, x, n_cols, y, classes, config, progress).map(|(model, _)| model)
}

/// [`train()`], also returning the mean training loss of every epoch.
///
/// # Errors
/// As [`train()`].
pub fn train_with_losses(
    kind: ModelKind,
    x: &[f32],
    n_cols: usize,
    y: &[usize],
    classes: usize,
    config: &TrainConfig,
    progress: Option<&ProgressBar>,
) -> Result<(Model, Vec<f64>), TrainError> {
    config.check()?;
    check_data(x, n_cols, y, classes)?;
    let device = train::device();
    let mut rng = SeededRng::new(config.seed);
    let mut net = Net::new(&mut rng, kind, n_cols, classes, &device);
    let mut optim = AdamConfig::new().init();
    let mut losses = Vec::with_capacity(config.epochs);
    train::progress_start(progress, config.epochs);
    for epoch in 0..config.epochs {
        let mut total = 0.0;
        for rows in rng.permutation(y.len()).chunks(config.batch_size) {
            let input = train::batch_tensor(x, n_cols, rows, &device);
            let loss = net.loss(input, one_hot(y, rows, classes, &device));
            total += f64::from(train::scalar(loss.clone())) * rows.len() as f64;
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            net = optim.step(config.learning_rate, net, grads);
        }
        let mean = total / y.len() as f64;
        if !mean.is_finite() {
            return Err(TrainError::Diverged { epoch, loss: mean });
        }
        losses.push(mean);
        train::progress_epoch(progress);
    }
    Ok((Model { kind, mlp: net.export() }, losses))
}

/// Fraction of rows of `x` that `model` assigns to their label in `y`.
///
/// # Errors
/// [`TrainError::Shape`], [`TrainError::LabelCount`] or [`TrainError::Empty`] when `x` and `y`
/// do not describe the same non-empty set of rows.
pub fn accuracy<B: BlackBox + ?Sized>(model: &B, x: &[f32], y: &[usize]) -> Result<f64, TrainError> {
    let n_cols = model.inputs();
    check_rows(x, n_cols, y)?;
    let hits = model.predict(x)?.iter().zip(y).filter(|(p, t)| p == t).count();
    Ok(hits as f64 / y.len() as f64)
}

fn check_rows(x: &[f32], n_cols: usize, y: &[usize]) -> Result<(), TrainError> {
    if n_cols == 0 || !x.len().is_multiple_of(n_cols) {
        return Err(TrainError::Shape { len: x.len(), n_cols });
    }
    if x.len() / n_cols != y.len() {
        return Err(TrainError::LabelCount { rows: x.len() / n_cols, labels: y.len() });
    }
    if y.is_empty() {
        return Err(TrainError::Empty);
    }
    Ok(())
}

fn check_data(x: &[f32], n_cols: usize, y: &[usize], classes: usize) -> Result<(), TrainError> {
    check_rows(x, n_cols, y)?;
    if classes < 2 {
        return Err(TrainError::Classes(classes));
    }
    match y.iter().position(|&label| label >= classes) {
        Some(row) => Err(TrainError::Label { row, label: y[row], classes }),
        None => Ok(()),
    }
}

/// Labels of `rows` as a `[rows.len(), classes]` one-hot tensor.
fn one_hot(y: &[usize], rows: &[usize], classes: usize, device: &Device) -> Tensor<2> {
    let mut data = vec![0.0f32; rows.len() * classes];
    for (i, &r) in rows.iter().enumerate() {
        data[i * classes + y[r]] = 1.0;
    }
    Tensor::from_data(TensorData::new(data, [rows.len(), classes]), device)
}

/// The burn twin of a built-in classifier: ReLU hidden layers, linear logits.
#[derive(Module, Debug)]
struct Net {
    layers: Vec<Linear>,
}

impl Net {
    fn new(rng: &mut SeededRng, kind: ModelKind, n_cols: usize, classes: usize, device: &Device) -> Self {
        let sizes: Vec<usize> = std::iter::once(n_cols).chain(kind.hidden().iter().copied()).chain([classes]).collect();
        Self { layers: train::init_stack(rng, &sizes, device) }
    }

    fn logits(&self, x: Tensor<2>) -> Tensor<2> {
        train::forward_stack(&self.layers, x, true)
    }

    /// Mean cross-entropy of the batch against one-hot targets.
    fn loss(&self, x: Tensor<2>, targets: Tensor<2>) -> Tensor<1> {
        let log_p = log_softmax(self.logits(x), 1);
        (log_p * targets).sum_dim(1).mean().neg()
    }

    fn export(&self) -> Mlp {
        Mlp { layers: train::export_stack(&self.layers, Activation::Softmax) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::activation::softmax;

    /// Two Gaussian-free blobs: class 1 iff `2 a - b > 0.2`, on a small grid.
    fn separable() -> (Vec<f32>, Vec<usize>) {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..20 {
            for j in 0..20 {
                let (a, b) = (i as f32 / 19.0, j as f32 / 19.0);
                let margin = 2.0 * a - b - 0.2;
                if margin.abs() < 0.05 {
                    continue;
                }
                x.extend([a, b]);
                y.push(usize::from(margin > 0.0));
            }
        }
        (x, y)
    }

    /// XOR of the two coordinates' halves, with a gap around the centre lines.
    fn xor() -> (Vec<f32>, Vec<usize>) {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..16 {
            for j in 0..16 {
                let (a, b) = (i as f32 / 15.0, j as f32 / 15.0);
                if (a - 0.5).abs() < 0.1 || (b - 0.5).abs() < 0.1 {
                    continue;
                }
                x.extend([a, b]);
                y.push(usize::from((a > 0.5) != (b > 0.5)));
            }
        }
        (x, y)
    }

    fn quick(epochs: usize, learning_rate: f64) -> TrainConfig {
        TrainConfig { epochs, batch_size: 32, learning_rate, seed: 11 }
    }

    #[test]
    fn test_lr_learns_separable() {
        let (x, y) = separable();
        let model = train(ModelKind::Lr, &x, 2, &y, 2, &quick(10, 0.1), None).expect("trains");
        assert_eq!(model.mlp.layers.len(), 1);
        let acc = accuracy(&model, &x, &y).expect("same rows");
        assert!(acc > 0.95, "accuracy {acc}");
    }

    #[test]
    fn test_lr_cannot_learn_xor_but_mlp_can() {
        let (x, y) = xor();
        let lr = train(ModelKind::Lr, &x, 2, &y, 2, &quick(10, 0.1), None).expect("trains");
        let mlp = train(ModelKind::Mlp, &x, 2, &y, 2, &quick(60, 0.03), None).expect("trains");
        let acc_lr = accuracy(&lr, &x, &y).expect("same rows");
        let acc_mlp = accuracy(&mlp, &x, &y).expect("same rows");
        assert!(acc_lr < 0.8, "a linear model should fail XOR, got {acc_lr}");
        assert!(acc_mlp > 0.95, "mlp accuracy {acc_mlp}");
    }

    #[test]
    fn test_exported_forward_matches_burn() {
        let device = train::device();
        let mut rng = SeededRng::new(5);
        let net = Net::new(&mut rng, ModelKind::Mlp, 3, 3, &device);
        let rows = [0.1f32, 0.9, 0.4, 1.0, 0.0, 0.5, 0.3, 0.3, 0.7];
        let burn_p = softmax(net.logits(Tensor::from_data(TensorData::new(rows.to_vec(), [3, 3]), &device)), 1);
        let burn_p = burn_p.into_data().try_to_vec::<f32>().expect("f32 tensor");
        let plain = net.export().forward_batch(&rows);
        assert_eq!(plain.len(), burn_p.len());
        for (a, b) in plain.iter().zip(&burn_p) {
            assert!((a - b).abs() < 1e-5, "{plain:?} vs {burn_p:?}");
        }
    }

    #[test]
    fn test_predict_ties_pick_lowest_class() {
        assert_eq!(argmax(&[0.25, 0.5, 0.5]), 1);
        assert_eq!(argmax(&[0.5, 0.5]), 0);
        assert_eq!(argmax(&[0.1, 0.2, 0.7]), 2);
    }

    #[test]
    fn test_save_load_round_trip_and_dims_error() {
        let (x, y) = separable();
        let model = train(ModelKind::Lr, &x, 2, &y, 2, &quick(2, 0.1), None).expect("trains");
        let dir = std::env::temp_dir().join(format!("cent-blackbox-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("lr.json");
        model.save(&path).expect("saves");
        assert_eq!(Model::load(&path).expect("loads"), model);
        let err = Model::load_checked(&path, 5, 2).expect_err("5 columns do not fit");
        assert!(matches!(err, FileError::Dims { field: "n_cols", found: 2, expected: 5, .. }), "{err}");
        assert!(err.to_string().contains("lr.json"), "{err}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn test_load_rejects_inconsistent_weights() {
        let dir = std::env::temp_dir().join(format!("cent-blackbox-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("bad.json");
        let text = r#"{"format":"cent-classifier","version":1,"kind":"Lr","n_cols":2,"classes":2,
            "mlp":{"layers":[{"inputs":2,"outputs":2,"weights":[1.0],"bias":[0.0,0.0],"activation":"Softmax"}]}}"#;
        std::fs::write(&path, text).expect("write");
        let err = Model::load(&path).expect_err("weights too short");
        assert!(matches!(err, FileError::Corrupt { .. }), "{err}");
        std::fs::write(&path, text.replace("\"version\":1", "\"version\":9")).expect("write");
        assert!(matches!(Model::load(&path), Err(FileError::Version { found: 9, .. })));
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn test_train_rejects_bad_labels() {
        let err = train(ModelKind::Lr, &[0.0, 1.0], 1, &[0, 2], 2, &TrainConfig::default(), None);
        assert!(matches!(err, Err(TrainError::Label { row: 1, label: 2, classes: 2 })));
        let err = train(ModelKind::Lr, &[0.0, 1.0, 2.0], 2, &[0], 2, &TrainConfig::default(), None);
        assert!(matches!(err, Err(TrainError::Shape { len: 3, n_cols: 2 })));
    }
}
