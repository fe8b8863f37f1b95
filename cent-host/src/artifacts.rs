//! The trained artifacts of one dataset — prepared data, black box and VAE — trained on first
//! use and cached as files, so every command after the first starts in seconds.

use crate::blackbox::{self, BlackBox, ModelKind, TrainConfig};
use crate::data::{self, Prepared, Table};
use crate::vae::{self, Vae, VaeConfig};
use indicatif::{ProgressBar, ProgressStyle};
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
    pub model: ModelKind,
    /// Cache of fetched datasets and trained models.
    pub cache: PathBuf,
    /// Seed of the split and of training.
    pub seed: u64,
    /// Show progress bars and messages on stderr.
    pub progress: bool,
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
    #[error("training the {what}: {message}")]
    Train { what: String, message: String },
    #[error("cannot create the cache directory {path}: {source}")]
    Cache { path: String, source: std::io::Error },
    #[error(transparent)]
    Onnx(#[from] crate::onnx::OnnxError),
}

/// Data, black box and VAE of one dataset.
#[derive(Debug, Clone)]
pub struct Artifacts {
    pub name: String,
    pub prepared: Prepared,
    pub model: blackbox::Model,
    pub vae: Vae,
    /// Test accuracy of the black box.
    pub accuracy: f64,
}

impl Artifacts {
    /// The black box to explain: the ONNX model at `onnx` when given (checked against this
    /// dataset's encoded width and class count), else the built-in model.
    ///
    /// # Errors
    /// [`ArtifactError::Onnx`] when the ONNX model cannot be loaded or does not fit the data.
    pub fn black_box(&self, onnx: Option<&Path>) -> Result<Box<dyn BlackBox>, ArtifactError> {
        let enc = &self.prepared.encoding;
        Ok(match onnx {
            Some(path) => Box::new(crate::onnx::OnnxModel::load(path, enc.n_cols(), enc.classes().len())?),
            None => Box::new(self.model.clone()),
        })
    }
}

impl Setup {
    /// Loads the dataset and the cached models, training whatever is missing.
    ///
    /// # Errors
    /// [`ArtifactError`] naming the file, row or setting at fault.
    pub fn load(&self) -> Result<Artifacts, ArtifactError> {
        let table = self.table()?;
        let name = table.name().to_string();
        let prepared = data::prepare(table, data::TEST_FRACTION, self.seed)?;
        let dir = self.cache.join("models");
        std::fs::create_dir_all(&dir)
            .map_err(|source| ArtifactError::Cache { path: dir.display().to_string(), source })?;
        let model = self.model(&dir, &name, &prepared)?;
        let vae = self.vae(&dir, &name, &prepared)?;
        let accuracy = blackbox::accuracy(&model, &prepared.test.data, &prepared.test_labels)
            .map_err(|e| ArtifactError::Train { what: "model".into(), message: e.to_string() })?;
        Ok(Artifacts { name, prepared, model, vae, accuracy })
    }

    fn table(&self) -> Result<Table, ArtifactError> {
        Ok(match &self.source {
            Source::Builtin(name) => data::load_builtin(name, &self.cache)?,
            Source::Custom { csv, schema } => data::load_custom(schema, csv.as_deref())?,
        })
    }

    fn model(&self, dir: &Path, name: &str, p: &Prepared) -> Result<blackbox::Model, ArtifactError> {
        let kind = match self.model {
            ModelKind::Lr => "lr",
            ModelKind::Mlp => "mlp",
        };
        let path = dir.join(format!("{name}-{kind}-seed{}.json", self.seed));
        let classes = p.encoding.classes().len();
        if let Ok(m) = blackbox::Model::load_checked(&path, p.encoding.n_cols(), classes) {
            return Ok(m);
        }
        let bar = self.bar(&format!("training {kind} on {name}"));
        let config = TrainConfig { seed: self.seed, ..TrainConfig::for_kind(self.model) };
        let start = Instant::now();
        let fail = |e: String| ArtifactError::Train { what: format!("{kind} model"), message: e };
        let m = blackbox::train(
            self.model,
            &p.train.data,
            p.encoding.n_cols(),
            &p.train_labels,
            classes,
            &config,
            bar.as_ref(),
        )
        .map_err(|e| fail(e.to_string()))?;
        self.finish(bar, &format!("trained {kind} on {name} in {:.1} s", start.elapsed().as_secs_f64()));
        m.save(&path).map_err(|e| fail(e.to_string()))?;
        Ok(m)
    }

    fn vae(&self, dir: &Path, name: &str, p: &Prepared) -> Result<Vae, ArtifactError> {
        let path = dir.join(format!("{name}-vae-seed{}.json", self.seed));
        if let Ok(v) = Vae::load_checked(&path, p.encoding.n_cols()) {
            return Ok(v);
        }
        let fail = |e: String| ArtifactError::Train { what: "VAE".into(), message: e };
        let config = VaeConfig::for_dataset(name).unwrap_or_else(|_| VaeConfig::new(vec![16], 7));
        let config = VaeConfig { seed: self.seed, ..config };
        let bar = self.bar(&format!("training VAE on {name}"));
        let start = Instant::now();
        let v =
            vae::train(&p.train.data, p.encoding.n_cols(), &config, bar.as_ref()).map_err(|e| fail(e.to_string()))?;
        self.finish(bar, &format!("trained VAE on {name} in {:.1} s", start.elapsed().as_secs_f64()));
        v.save(&path).map_err(|e| fail(e.to_string()))?;
        Ok(v)
    }

    fn bar(&self, message: &str) -> Option<ProgressBar> {
        if !self.progress {
            return None;
        }
        let bar = ProgressBar::new(0);
        let style = ProgressStyle::with_template("{msg:28} [{bar:30}] {pos}/{len} epochs ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(message.to_string());
        Some(bar)
    }

    fn finish(&self, bar: Option<ProgressBar>, message: &str) {
        if let Some(b) = bar {
            b.finish_and_clear();
            eprintln!("{message}");
        }
    }
}
