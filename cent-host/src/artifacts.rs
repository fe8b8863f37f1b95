//! The trained artifacts of one dataset — prepared data, black box and VAE — trained on first
//! use and cached as files, so every command after the first starts in seconds.
//!
//! Architecture invariant: a cached artifact is used only for exactly the inputs that built it.
//! Each cache file (`<cache>/models/{name}-{kind}-seed{seed}.json`, `{name}-vae-seed{seed}.json`)
//! stores a [`CacheKey`]: SHA-256 digests of the encoded training rows (and labels, for the
//! classifier), of the encoding's description, of the training options (model kind, full
//! config, seed) and the cache format version [`CACHE_FORMAT`]. A file whose key differs from
//! the inputs' key, that has no key, or that cannot be read is retrained and overwritten; the
//! returned [`Origin`]s say which artifact was loaded or trained, and why.

use crate::blackbox::{self, BlackBox, ModelKind, Scores, TrainConfig};
use crate::data::{self, Prepared, Table};
use crate::progress::{Progress, Silent};
use crate::train::{self, CacheKey, FileError};
use crate::vae::{self, Vae, VaeConfig};
use std::path::{Path, PathBuf};
use std::time::Instant;
use thiserror::Error;

/// Where a dataset comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `adult` (embedded) or a fetched dataset.
    Builtin(String),
    /// A user's schema file and CSV; without a CSV, the schema's `[[source]] file`s relative
    /// to the schema's directory.
    Custom { csv: Option<PathBuf>, schema: PathBuf },
}

/// What to load or train.
#[derive(Debug, Clone)]
pub struct Setup {
    pub source: Source,
    /// The built-in classifier to load or train; `None` when the caller brings its own black
    /// box (an ONNX file, a Python object), so that no built-in model is trained, read or cached.
    pub model: Option<ModelKind>,
    /// Cache of fetched datasets and trained models.
    pub cache: PathBuf,
    /// Seed of the split and of training.
    pub seed: u64,
}

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ArtifactError {
    #[error(transparent)]
    Data(#[from] data::DataError),
    #[error(transparent)]
    Schema(#[from] data::SchemaError),
    #[error(transparent)]
    Load(#[from] data::LoadError),
    #[error("{dataset}: all {rows} rows hold the class `{class}`; a classifier needs rows of at least two classes")]
    OneClass { dataset: String, class: String, rows: usize },
    #[error("training the {what}: {message}")]
    Train { what: String, message: String },
    #[error("cannot create the cache directory {path}: {source}")]
    Cache { path: String, source: std::io::Error },
    #[error(transparent)]
    Onnx(#[from] crate::onnx::OnnxError),
    #[error("no built-in model (lr or mlp) was loaded: the setup named none")]
    NoModel,
}

/// Version of the cache format, part of every key: raised whenever training changes in a way
/// its options do not show (a new loss, a new initialisation), so that older files retrain.
pub const CACHE_FORMAT: u32 = 2;

/// Data, VAE and (unless the caller brings its own black box) built-in classifier of one dataset.
#[derive(Debug, Clone)]
pub struct Artifacts {
    pub name: String,
    pub prepared: Prepared,
    pub vae: Vae,
    /// Whether the VAE was loaded from the cache or trained, and why.
    pub vae_origin: Origin,
    /// The built-in classifier, when the [`Setup`] named one.
    pub builtin: Option<Builtin>,
}

/// A built-in classifier as a run has it.
#[derive(Debug, Clone)]
pub struct Builtin {
    pub model: blackbox::Model,
    /// Accuracy, balanced accuracy and predicted class shares on the test split.
    pub scores: Scores,
    /// Whether it was loaded from the cache or trained, and why.
    pub origin: Origin,
}

/// Where one trained artifact of a run came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// What it is: `lr model`, `mlp model` or `VAE`.
    pub artifact: String,
    /// Its cache file.
    pub path: PathBuf,
    /// The key of the inputs it was built from.
    pub key: CacheKey,
    pub how: How,
}

/// Loaded or trained.
#[derive(Debug, Clone, PartialEq)]
pub enum How {
    /// Read from the cache file, whose key equals the inputs' key.
    Loaded,
    /// Trained in this run, for `reason`, and saved to the cache file.
    Trained { reason: Retrain, seconds: f64 },
}

/// Why a cached file was not used.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Retrain {
    /// There is no cached file.
    Missing,
    /// The cached file records no key (it was written before keys existed).
    Unkeyed,
    /// The cached file was built from other inputs: `changed` lists which.
    Stale { changed: Vec<KeyPart>, cached: String, wanted: String },
    /// The cached file cannot be read or does not fit the data (the error, naming the file).
    Unreadable(String),
}

/// One input a cache key covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPart {
    /// The cache format version ([`CACHE_FORMAT`]).
    Format,
    /// The encoded training rows (and labels, for a classifier).
    Data,
    /// The encoding: feature names, kinds, columns, ranges, categories in order, class names.
    Schema,
    /// The model kind and the training config, seed included.
    Options,
}

impl KeyPart {
    fn name(self) -> &'static str {
        match self {
            KeyPart::Format => "cache format",
            KeyPart::Data => "data",
            KeyPart::Schema => "schema",
            KeyPart::Options => "options",
        }
    }
}

/// The first 12 hex digits of a key, enough to tell two keys apart in a message.
fn short(key: &str) -> &str {
    key.get(..12).unwrap_or(key)
}

impl std::fmt::Display for Retrain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Retrain::Missing => f.write_str("no cached file"),
            Retrain::Unkeyed => f.write_str("the cached file records no key (written by an earlier version of cent)"),
            Retrain::Stale { changed, cached, wanted } => {
                let parts: Vec<&str> = changed.iter().map(|p| p.name()).collect();
                let parts = match parts.split_last() {
                    Some((last, [])) => last.to_string(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => "inputs".to_string(),
                };
                write!(f, "the cached file was built from other {parts} (key {} ≠ {})", short(cached), short(wanted))
            }
            Retrain::Unreadable(reason) => write!(f, "the cached file is unreadable: {reason}"),
        }
    }
}

/// `mlp model: loaded from …` or `mlp model: trained (reason); saved to …`, without the time.
impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match &self.how {
            How::Loaded => write!(
                f,
                "{}: loaded from {path} (built from the same data, schema and options: key {})",
                self.artifact,
                short(&self.key.key)
            ),
            How::Trained { reason, .. } => write!(f, "{}: trained ({reason}); saved to {path}", self.artifact),
        }
    }
}

impl Artifacts {
    /// The black box to explain: the ONNX model at `onnx` when given (checked against this
    /// dataset's encoded width and class count, and asked once for each distinct row of a batch
    /// where that [pays](crate::distinct::pays)), else the built-in model.
    ///
    /// # Errors
    /// [`ArtifactError::Onnx`] when the ONNX model cannot be loaded or does not fit the data.
    /// [`ArtifactError::NoModel`] when no ONNX file is given and no built-in model was loaded.
    pub fn black_box(&self, onnx: Option<&Path>) -> Result<Box<dyn BlackBox>, ArtifactError> {
        let enc = &self.prepared.encoding;
        Ok(match onnx {
            Some(path) => {
                let model = crate::onnx::OnnxModel::load(path, enc.n_cols(), enc.classes().len())?;
                if crate::distinct::pays(model.runtime(), enc.n_cols()) {
                    Box::new(crate::distinct::Distinct::new(model))
                } else {
                    Box::new(model)
                }
            }
            None => Box::new(self.model()?.clone()),
        })
    }

    /// The built-in classifier.
    ///
    /// # Errors
    /// [`ArtifactError::NoModel`] when the [`Setup`] named none.
    pub fn model(&self) -> Result<&blackbox::Model, ArtifactError> {
        self.builtin.as_ref().map(|b| &b.model).ok_or(ArtifactError::NoModel)
    }

    /// Where the built-in classifier (when there is one) and the VAE came from, in that order.
    pub fn origins(&self) -> impl Iterator<Item = &Origin> {
        self.builtin.iter().map(|b| &b.origin).chain([&self.vae_origin])
    }
}

impl Setup {
    /// Loads the dataset and the cached models, training whatever is missing or was built
    /// from other inputs (see [`Origin`]).
    ///
    /// # Errors
    /// [`ArtifactError`] naming the file, row or setting at fault; [`ArtifactError::OneClass`]
    /// when the rows hold a single class.
    pub fn load(&self) -> Result<Artifacts, ArtifactError> {
        self.load_with(&Silent)
    }

    /// [`Setup::load`], reporting each training (a stage of epochs) to `progress`.
    ///
    /// # Errors
    /// As [`Setup::load`].
    pub fn load_with(&self, progress: &dyn Progress) -> Result<Artifacts, ArtifactError> {
        let (name, prepared) = self.prepare()?;
        let dir = self.cache.join("models");
        std::fs::create_dir_all(&dir)
            .map_err(|source| ArtifactError::Cache { path: dir.display().to_string(), source })?;
        let schema = key::schema(&prepared.encoding);
        let data = key::data(&prepared.train.data, &prepared.train_labels);
        let builtin = match self.model {
            Some(kind) => {
                let (model, origin) = self.model(kind, &dir, &name, &prepared, (&schema, &data), progress)?;
                let scores = blackbox::scores(&model, &prepared.test.data, &prepared.test_labels)
                    .map_err(|e| ArtifactError::Train { what: "model".into(), message: e.to_string() })?;
                Some(Builtin { model, scores, origin })
            }
            None => None,
        };
        let (vae, vae_origin) = self.vae(&dir, &name, &prepared, (&schema, &data), progress)?;
        Ok(Artifacts { name, prepared, vae, vae_origin, builtin })
    }

    /// Loads the dataset and splits it (seeded by `seed`), training nothing: the encoded rows
    /// every model of this setup sees, and the dataset's name.
    ///
    /// # Errors
    /// As [`Setup::load`], without the training errors.
    pub fn prepare(&self) -> Result<(String, Prepared), ArtifactError> {
        let table = self.table()?;
        let name = table.name().to_string();
        self.check_classes(&name, table.labels(), table.classes())?;
        Ok((name, data::prepare(table, data::TEST_FRACTION, self.seed)?))
    }

    /// Refuses data whose rows all hold one class: every model would predict it.
    fn check_classes(&self, name: &str, labels: &[usize], classes: &[String]) -> Result<(), ArtifactError> {
        let Some(&first) = labels.first() else { return Ok(()) };
        if labels.iter().any(|&label| label != first) {
            return Ok(());
        }
        let dataset = match &self.source {
            Source::Builtin(_) => format!("dataset `{name}`"),
            Source::Custom { csv: Some(csv), .. } => format!("{} (dataset `{name}`)", csv.display()),
            Source::Custom { csv: None, schema } => format!("the data of {} (dataset `{name}`)", schema.display()),
        };
        let class = classes.get(first).cloned().unwrap_or_else(|| first.to_string());
        Err(ArtifactError::OneClass { dataset, class, rows: labels.len() })
    }

    fn table(&self) -> Result<Table, ArtifactError> {
        Ok(match &self.source {
            Source::Builtin(name) => data::load_builtin(name, &self.cache)?,
            Source::Custom { csv, schema } => data::load_custom(schema, csv.as_deref())?,
        })
    }

    fn model(
        &self,
        model: ModelKind,
        dir: &Path,
        name: &str,
        p: &Prepared,
        (schema, data): (&str, &key::Data),
        progress: &dyn Progress,
    ) -> Result<(blackbox::Model, Origin), ArtifactError> {
        let kind = match model {
            ModelKind::Lr => "lr",
            ModelKind::Mlp => "mlp",
        };
        let path = dir.join(format!("{name}-{kind}-seed{}.json", self.seed));
        let (n_cols, classes) = (p.encoding.n_cols(), p.encoding.classes().len());
        let config = TrainConfig { seed: self.seed, ..TrainConfig::for_kind(model) };
        let data = data.labelled.clone();
        let key = key::combine(data, schema.to_string(), key::options(&(model, &config)));
        let artifact = format!("{kind} model");
        let load = |path: &Path| {
            let (m, k) = blackbox::Model::load_keyed(path)?;
            train::check_dim(path, "n_cols", m.inputs(), n_cols)?;
            train::check_dim(path, "classes", m.classes(), classes)?;
            Ok((m, k))
        };
        let reason = match cached(&path, &key, load) {
            Ok(m) => return Ok((m, Origin { artifact, path, key, how: How::Loaded })),
            Err(reason) => reason,
        };
        progress.begin(&format!("training {kind} on {name}"), config.epochs as u64, "epochs");
        let start = Instant::now();
        let fail = |e: String| ArtifactError::Train { what: artifact.clone(), message: e };
        let m = blackbox::train(model, &p.train.data, n_cols, &p.train_labels, classes, &config, Some(progress))
            .map_err(|e| fail(e.to_string()))?;
        let seconds = start.elapsed().as_secs_f64();
        progress.end();
        m.save_keyed(&path, Some(&key)).map_err(|e| fail(e.to_string()))?;
        Ok((m, Origin { artifact, path, key, how: How::Trained { reason, seconds } }))
    }

    fn vae(
        &self,
        dir: &Path,
        name: &str,
        p: &Prepared,
        (schema, data): (&str, &key::Data),
        progress: &dyn Progress,
    ) -> Result<(Vae, Origin), ArtifactError> {
        let path = dir.join(format!("{name}-vae-seed{}.json", self.seed));
        let n_cols = p.encoding.n_cols();
        let config = VaeConfig::for_dataset(name).unwrap_or_else(|_| VaeConfig::new(vec![16], 7));
        let config = VaeConfig { seed: self.seed, ..config };
        // The VAE never sees the labels: a relabelled table keeps its VAE.
        let key = key::combine(data.rows.clone(), schema.to_string(), key::options(&config));
        let artifact = "VAE".to_string();
        let load = |path: &Path| {
            let (v, k) = Vae::load_keyed(path)?;
            train::check_dim(path, "n_cols", v.inputs(), n_cols)?;
            Ok((v, k))
        };
        let reason = match cached(&path, &key, load) {
            Ok(v) => return Ok((v, Origin { artifact, path, key, how: How::Loaded })),
            Err(reason) => reason,
        };
        let fail = |e: String| ArtifactError::Train { what: "VAE".into(), message: e };
        progress.begin(&format!("training VAE on {name}"), config.epochs as u64, "epochs");
        let start = Instant::now();
        let v = vae::train(&p.train.data, n_cols, &config, Some(progress)).map_err(|e| fail(e.to_string()))?;
        let seconds = start.elapsed().as_secs_f64();
        progress.end();
        v.save_keyed(&path, Some(&key)).map_err(|e| fail(e.to_string()))?;
        Ok((v, Origin { artifact, path, key, how: How::Trained { reason, seconds } }))
    }
}

/// The artifact cached at `path` when its key is `wanted`, else why not. `load` reads the file
/// and checks it against the data; any failure of it means retraining, with the error as reason.
fn cached<T>(
    path: &Path,
    wanted: &CacheKey,
    load: impl FnOnce(&Path) -> Result<(T, Option<CacheKey>), FileError>,
) -> Result<T, Retrain> {
    let (value, found) = match load(path) {
        Ok(loaded) => loaded,
        Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(Retrain::Missing);
        }
        Err(e) => return Err(Retrain::Unreadable(e.to_string())),
    };
    let found = found.ok_or(Retrain::Unkeyed)?;
    if found.key != wanted.key {
        let changed = [
            (KeyPart::Format, found.format == wanted.format),
            (KeyPart::Data, found.data == wanted.data),
            (KeyPart::Schema, found.schema == wanted.schema),
            (KeyPart::Options, found.options == wanted.options),
        ];
        let changed = changed.iter().filter(|(_, same)| !same).map(|(part, _)| *part).collect();
        return Err(Retrain::Stale { changed, cached: found.key, wanted: wanted.key.clone() });
    }
    Ok(value)
}

/// The digests a [`CacheKey`] is made of: SHA-256 over exactly the inputs an artifact is built
/// from, so that a cached artifact is used only for the inputs that built it.
mod key {
    use super::CACHE_FORMAT;
    use crate::data::Encoding;
    use crate::train::CacheKey;
    use cent_nostd::schema::Kind;
    use serde::Serialize;
    use sha2::{Digest, Sha256};
    use std::fmt::Write;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// Digests of the encoded training rows: without the labels (the VAE's) and with them
    /// (the classifier's).
    pub(super) struct Data {
        pub rows: String,
        pub labelled: String,
    }

    /// The encoded rows (their count, then row-major f32 bits, little-endian) and, for
    /// [`Data::labelled`], then the labels' count and the labels (u64). One pass over the rows,
    /// streamed through the hash: no copy of the data is made.
    pub(super) fn data(rows: &[f32], labels: &[usize]) -> Data {
        let mut hash = Sha256::new();
        hash.update((rows.len() as u64).to_le_bytes());
        let mut buffer = Vec::with_capacity(64 * 1024);
        for chunk in rows.chunks(16 * 1024) {
            buffer.clear();
            chunk.iter().for_each(|v| buffer.extend_from_slice(&v.to_bits().to_le_bytes()));
            hash.update(&buffer);
        }
        let unlabelled = hex(&hash.clone().finalize());
        hash.update((labels.len() as u64).to_le_bytes());
        for chunk in labels.chunks(8 * 1024) {
            buffer.clear();
            chunk.iter().for_each(|&l| buffer.extend_from_slice(&(l as u64).to_le_bytes()));
            hash.update(&buffer);
        }
        Data { rows: unlabelled, labelled: hex(&hash.finalize()) }
    }

    /// What the encoded columns mean: per feature its name, kind, columns, scaling range (f32
    /// bits) and categories in order; then the class names in order. Costs, mutability and
    /// sigma are left out: training never reads them.
    pub(super) fn schema(encoding: &Encoding) -> String {
        let mut text = String::new();
        for (j, a) in encoding.attributes().iter().enumerate() {
            let _ = write!(text, "feature {:?} {:?}", a.name, a.kind);
            if let Some(f) = encoding.feature(j) {
                let _ =
                    write!(text, " cols {}+{} range {:08x} {:08x}", f.col, f.width, f.min.to_bits(), f.max.to_bits());
            }
            if matches!(a.kind, Kind::Categorical | Kind::Binary) {
                let _ = write!(text, " categories {:?}", a.categories);
            }
            text.push('\n');
        }
        let _ = writeln!(text, "classes {:?}", encoding.classes());
        hex(&Sha256::digest(text.as_bytes()))
    }

    /// The training options as JSON (model kind, every hyperparameter, the seed).
    pub(super) fn options<T: Serialize>(options: &T) -> String {
        let text = serde_json::to_string(options).unwrap_or_else(|e| format!("unserializable options: {e}"));
        hex(&Sha256::digest(text.as_bytes()))
    }

    /// The key over the format version and the three digests.
    pub(super) fn combine(data: String, schema: String, options: String) -> CacheKey {
        let text = format!("cent-cache {CACHE_FORMAT}\ndata {data}\nschema {schema}\noptions {options}\n");
        CacheKey { key: hex(&Sha256::digest(text.as_bytes())), format: CACHE_FORMAT, data, schema, options }
    }
}
