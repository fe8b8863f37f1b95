//! Black-box classifiers: the [`BlackBox`] trait every explained model implements, and the two
//! built-in models of the paper (logistic regression and the 13-4 ReLU MLP), trained with burn
//! and served as plain [`Mlp`]s.
//!
//! The explainer only ever queries class probabilities, so any classifier fits behind
//! [`BlackBox`]; the built-ins exist so that the whole pipeline runs without an external model,
//! and so that the device can carry the (quantized) model itself.

use std::path::Path;
use std::sync::OnceLock;

use crate::progress::Progress;
use burn::module::Module;
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::layers::{Activation, Batched, Mlp};
use crate::train::{self, CacheKey, FileError, SeededRng};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// How much each training row's cross-entropy counts, by its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClassWeight {
    /// Every row counts once: a rare class can be ignored at little cost, and on a 3 % minority
    /// the model may predict the majority class for every row.
    Uniform,
    /// Weights inverse to each class's frequency in the training rows, scaled so that the mean
    /// weight over the rows is 1: every class weighs as much in the loss as every other (the
    /// CEnt paper trains its network with a weighted binary cross-entropy).
    Balanced,
}

impl ClassWeight {
    /// The weight of each class for the labels `y` (`classes` entries; 0 for a class with no
    /// rows).
    pub fn weights(self, y: &[usize], classes: usize) -> Vec<f32> {
        if self == ClassWeight::Uniform {
            return vec![1.0; classes];
        }
        let counts = class_counts(y, classes);
        let present = counts.iter().filter(|&&c| c > 0).count().max(1);
        let n = y.len() as f64;
        counts.iter().map(|&c| if c == 0 { 0.0 } else { (n / (present as f64 * c as f64)) as f32 }).collect()
    }
}

/// Hyperparameters of [`train()`]: class-weighted cross-entropy, Adam, shuffled mini-batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub class_weight: ClassWeight,
    pub seed: u64,
}

impl TrainConfig {
    /// Defaults per family, both with [`ClassWeight::Balanced`]. On Adult (36k rows) the
    /// training loss has flattened by then, and each trains in well under a minute in an
    /// unoptimised build.
    pub fn for_kind(kind: ModelKind) -> Self {
        let class_weight = ClassWeight::Balanced;
        match kind {
            ModelKind::Lr => Self { epochs: 15, batch_size: 256, learning_rate: 1e-2, class_weight, seed: 0 },
            ModelKind::Mlp => Self { epochs: 10, batch_size: 128, learning_rate: 1e-2, class_weight, seed: 0 },
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
    #[error("all {rows} training rows hold class {class}: a classifier needs at least two classes")]
    OneClass { class: usize, rows: usize },
    #[error("invalid training config: {0}")]
    Config(String),
    #[error("training diverged: mean loss {loss} in epoch {epoch}")]
    Diverged { epoch: usize, loss: f64 },
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// A built-in classifier: a trained network served by the plain [`Mlp`] (softmax output).
///
/// Its weights are read-only once built ([`Model::mlp`]): the batch layout of them that every
/// call reads is made on the first call and kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Model {
    pub kind: ModelKind,
    mlp: Mlp,
    #[serde(skip)]
    batched: OnceLock<Batched>,
}

impl PartialEq for Model {
    /// The same kind and the same weights (whether either has been asked yet does not count).
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.mlp == other.mlp
    }
}

impl BlackBox for Model {
    fn classes(&self) -> usize {
        self.mlp.outputs()
    }

    fn inputs(&self) -> usize {
        self.mlp.inputs()
    }

    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        Ok(self.forward(rows))
    }
}

impl Model {
    /// A model of `kind` with these layers; their batch layout is made on the first call.
    pub fn new(kind: ModelKind, mlp: Mlp) -> Self {
        Model { kind, mlp, batched: OnceLock::new() }
    }

    /// The network's layers.
    pub fn mlp(&self) -> &Mlp {
        &self.mlp
    }

    /// The class probabilities of each row (row-major, as [`Mlp::forward_batch`] gives them).
    pub fn forward(&self, rows: &[f32]) -> Vec<f32> {
        self.batched.get_or_init(|| Batched::new(&self.mlp)).forward_batch(rows)
    }

    /// The most probable class of each row (ties to the lowest index). A built-in model is
    /// plain arithmetic on validated layers and cannot fail, unlike [`BlackBox::predict`].
    pub fn classify(&self, rows: &[f32]) -> Vec<usize> {
        let classes = self.mlp.outputs().max(1);
        self.forward(rows).chunks_exact(classes).map(argmax).collect()
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
    /// What the model was trained from, in a cached file (absent in files saved without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_key: Option<CacheKey>,
}

const FILE_FORMAT: &str = "cent-classifier";
const FILE_VERSION: u32 = 1;

impl Model {
    /// Saves the model as JSON.
    ///
    /// # Errors
    /// [`FileError::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        self.save_keyed(path, None)
    }

    /// Saves the model as JSON together with the key of what it was trained from (see
    /// [`crate::artifacts`]); the file is written whole or not at all.
    ///
    /// # Errors
    /// [`FileError::Io`] when the file cannot be written.
    pub fn save_keyed(&self, path: &Path, cache_key: Option<&CacheKey>) -> Result<(), FileError> {
        let file = ModelFile {
            format: FILE_FORMAT.into(),
            version: FILE_VERSION,
            kind: self.kind,
            n_cols: self.inputs(),
            classes: self.classes(),
            mlp: self.mlp.clone(),
            cache_key: cache_key.cloned(),
        };
        train::write_json(path, FILE_FORMAT, &file)
    }

    /// Loads a model saved by [`Model::save`], checking that its weights are consistent.
    ///
    /// # Errors
    /// A [`FileError`] naming the file when it cannot be read, is of another kind or version, or
    /// its weights do not match its declared shape.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        Self::load_keyed(path).map(|(model, _)| model)
    }

    /// [`Model::load`], also returning the key stored by [`Model::save_keyed`], if any.
    ///
    /// # Errors
    /// As [`Model::load`].
    pub fn load_keyed(path: &Path) -> Result<(Self, Option<CacheKey>), FileError> {
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
        Ok((Self::new(file.kind, file.mlp), file.cache_key))
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
    progress: Option<&dyn Progress>,
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
    progress: Option<&dyn Progress>,
) -> Result<(Model, Vec<f64>), TrainError> {
    config.check()?;
    check_data(x, n_cols, y, classes)?;
    let device = train::device();
    let mut rng = SeededRng::new(config.seed);
    let mut net = Net::new(&mut rng, kind, n_cols, classes, &device);
    let mut optim = AdamConfig::new().init();
    let mut losses = Vec::with_capacity(config.epochs);
    let weights = config.class_weight.weights(y, classes);
    for epoch in 0..config.epochs {
        let mut total = 0.0;
        for rows in rng.permutation(y.len()).chunks(config.batch_size) {
            let input = train::batch_tensor(x, n_cols, rows, &device);
            let loss = net.loss(input, weighted_one_hot(y, rows, &weights, &device));
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
    Ok((Model::new(kind, net.export()), losses))
}

/// Fraction of rows of `x` that `model` assigns to their label in `y`.
///
/// # Errors
/// [`TrainError::Shape`], [`TrainError::LabelCount`] or [`TrainError::Empty`] when `x` and `y`
/// do not describe the same non-empty set of rows.
pub fn accuracy<B: BlackBox + ?Sized>(model: &B, x: &[f32], y: &[usize]) -> Result<f64, TrainError> {
    scores(model, x, y).map(|s| s.accuracy)
}

/// Share of the rows a model gives one class from which [`Scores::dominant`] reports it: at
/// that point accuracy mostly measures how common the class is.
pub const DOMINANT_SHARE: f64 = 0.99;

/// How a classifier does on labelled rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scores {
    /// Share of rows predicted as their label.
    pub accuracy: f64,
    /// Mean, over the classes that occur in the labels, of the share of that class's rows
    /// predicted as it (0.5 for a constant binary classifier, whatever the class balance).
    pub balanced_accuracy: f64,
    /// Share of the rows predicted as each class.
    pub predicted_share: Vec<f64>,
}

/// A class the model gives to at least [`DOMINANT_SHARE`] of the rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dominance {
    pub class: usize,
    /// Share of the rows predicted as `class`.
    pub share: f64,
}

impl Scores {
    /// The class given to at least [`DOMINANT_SHARE`] of the rows, if there is one.
    pub fn dominant(&self) -> Option<Dominance> {
        let (class, &share) = self.predicted_share.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
        (share >= DOMINANT_SHARE).then_some(Dominance { class, share })
    }
}

/// `accuracy, balanced accuracy`, each with the formatter's precision (3 by default):
/// `0.853, balanced accuracy 0.760`.
impl std::fmt::Display for Scores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = f.precision().unwrap_or(3);
        write!(f, "{:.p$}, balanced accuracy {:.p$}", self.accuracy, self.balanced_accuracy)
    }
}

/// Accuracy, balanced accuracy and the share of each predicted class of `model` on the rows of
/// `x` labelled `y`.
///
/// # Errors
/// As [`accuracy`], plus [`TrainError::Label`] for a label not below the model's class count.
pub fn scores<B: BlackBox + ?Sized>(model: &B, x: &[f32], y: &[usize]) -> Result<Scores, TrainError> {
    let classes = model.classes();
    check_rows(x, model.inputs(), y)?;
    if let Some(row) = y.iter().position(|&label| label >= classes) {
        return Err(TrainError::Label { row, label: y[row], classes });
    }
    let predicted = model.predict(x)?;
    let n = y.len() as f64;
    let mut hits = vec![0usize; classes];
    let mut given = vec![0usize; classes];
    for (&p, &t) in predicted.iter().zip(y) {
        given[p.min(classes - 1)] += 1;
        hits[t] += usize::from(p == t);
    }
    let counts = class_counts(y, classes);
    let recalls: Vec<f64> =
        counts.iter().zip(&hits).filter(|(c, _)| **c > 0).map(|(&c, &h)| h as f64 / c as f64).collect();
    Ok(Scores {
        accuracy: hits.iter().sum::<usize>() as f64 / n,
        balanced_accuracy: recalls.iter().sum::<f64>() / recalls.len() as f64,
        predicted_share: given.iter().map(|&g| g as f64 / n).collect(),
    })
}

/// Rows per class among the labels `y` (labels at or above `classes` are not counted).
fn class_counts(y: &[usize], classes: usize) -> Vec<usize> {
    let mut counts = vec![0usize; classes];
    for &label in y {
        if let Some(c) = counts.get_mut(label) {
            *c += 1;
        }
    }
    counts
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
    if let Some(row) = y.iter().position(|&label| label >= classes) {
        return Err(TrainError::Label { row, label: y[row], classes });
    }
    if y.iter().all(|&label| label == y[0]) {
        return Err(TrainError::OneClass { class: y[0], rows: y.len() });
    }
    Ok(())
}

/// Labels of `rows` as a `[rows.len(), classes]` one-hot tensor whose ones are the class
/// weights: the cross-entropy against it weighs each row by its class.
fn weighted_one_hot(y: &[usize], rows: &[usize], weights: &[f32], device: &Device) -> Tensor<2> {
    let classes = weights.len();
    let mut data = vec![0.0f32; rows.len() * classes];
    for (i, &r) in rows.iter().enumerate() {
        data[i * classes + y[r]] = weights[y[r]];
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

    /// Mean cross-entropy of the batch against one-hot targets scaled by the class weights.
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
        TrainConfig { epochs, batch_size: 32, learning_rate, class_weight: ClassWeight::Balanced, seed: 11 }
    }

    #[test]
    fn test_lr_learns_separable() {
        let (x, y) = separable();
        let model = train(ModelKind::Lr, &x, 2, &y, 2, &quick(10, 0.1), None).expect("trains");
        assert_eq!(model.mlp().layers.len(), 1);
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
    fn test_a_model_asked_gives_its_layers_bits_and_equals_one_not_asked() {
        let (x, y) = xor();
        let model = train(ModelKind::Mlp, &x, 2, &y, 2, &quick(5, 0.03), None).expect("trains");
        let fresh = Model::new(model.kind, model.mlp().clone());
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<u32>>();
        let plain = bits(model.mlp().forward_batch(&x));
        // Asked twice (the layout made, then kept), and a row at a time.
        assert_eq!(bits(model.forward(&x)), plain);
        assert_eq!(bits(model.predict_proba(&x).expect("built-in")), plain);
        for (r, row) in x.chunks_exact(2).enumerate() {
            assert_eq!(bits(model.forward(row)), plain[r * 2..r * 2 + 2].to_vec());
        }
        // Its layout kept or not, a model equals one with the same weights, and a copy of
        // it answers the same.
        assert_eq!(model, fresh);
        assert_eq!(bits(model.clone().forward(&x)), plain);
        assert_eq!(bits(fresh.forward(&x)), plain);
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

    /// A classifier that gives every row the same probabilities.
    struct Constant(Vec<f32>);

    impl BlackBox for Constant {
        fn classes(&self) -> usize {
            self.0.len()
        }
        fn inputs(&self) -> usize {
            1
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
            Ok(rows.iter().flat_map(|_| self.0.clone()).collect())
        }
    }

    #[test]
    fn test_scores_of_a_constant_model_on_skewed_labels() {
        let y: Vec<usize> = (0..100).map(|i| usize::from(i < 3)).collect();
        let x = vec![0.0f32; 100];
        let s = scores(&Constant(vec![0.9, 0.1]), &x, &y).expect("same rows");
        assert!((s.accuracy - 0.97).abs() < 1e-12 && (s.balanced_accuracy - 0.5).abs() < 1e-12, "{s:?}");
        assert_eq!(s.predicted_share, vec![1.0, 0.0]);
        assert_eq!(s.dominant(), Some(Dominance { class: 0, share: 1.0 }));
        assert_eq!(format!("{s:.2}"), "0.97, balanced accuracy 0.50");
    }

    #[test]
    fn test_dominance_starts_at_99_percent() {
        let x = [0.0f32, 1.0];
        let share = |given: usize| Scores {
            accuracy: 0.0,
            balanced_accuracy: 0.0,
            predicted_share: vec![given as f64 / 1000.0, 1.0 - given as f64 / 1000.0],
        };
        assert_eq!(share(990).dominant().map(|d| d.class), Some(0));
        assert_eq!(share(989).dominant(), None);
        assert_eq!(share(5).dominant().map(|d| d.class), Some(1));
        let model = Constant(vec![0.5, 0.5]);
        assert!(scores(&model, &x, &[0, 2]).is_err(), "label 2 of 2 classes");
    }

    #[test]
    fn test_balanced_weights_have_mean_one_and_equal_class_mass() {
        let y: Vec<usize> = (0..100).map(|i| usize::from(i % 25 == 0)).collect();
        let w = ClassWeight::Balanced.weights(&y, 3);
        let mean = y.iter().map(|&c| f64::from(w[c])).sum::<f64>() / y.len() as f64;
        assert!((mean - 1.0).abs() < 1e-6, "{w:?}");
        assert!((f64::from(w[0]) * 96.0 - f64::from(w[1]) * 4.0).abs() < 1e-3, "{w:?}");
        assert_eq!(w[2], 0.0, "a class without rows");
        assert_eq!(ClassWeight::Uniform.weights(&y, 2), vec![1.0, 1.0]);
    }

    #[test]
    fn test_train_refuses_a_single_class() {
        let err = train(ModelKind::Lr, &[0.0, 1.0, 2.0], 1, &[1, 1, 1], 2, &TrainConfig::default(), None);
        assert!(matches!(err, Err(TrainError::OneClass { class: 1, rows: 3 })), "{err:?}");
    }

    #[test]
    fn test_train_rejects_bad_labels() {
        let err = train(ModelKind::Lr, &[0.0, 1.0], 1, &[0, 2], 2, &TrainConfig::default(), None);
        assert!(matches!(err, Err(TrainError::Label { row: 1, label: 2, classes: 2 })));
        let err = train(ModelKind::Lr, &[0.0, 1.0, 2.0], 2, &[0], 2, &TrainConfig::default(), None);
        assert!(matches!(err, Err(TrainError::Shape { len: 3, n_cols: 2 })));
    }
}
