//! `cent images`: train the CNN and the VAE on a binary pair, explain `count` test images and
//! write the PNG grid plus a JSON summary.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::cnn::{Arch, CnnConfig, PlainCnn, train_cnn};
use super::search::{self, PixelConfig, Pool};
use super::{ImageError, ImageSet, PIXELS, class_name, load, render};
use cent_host::blackbox::{self, BlackBox, TrainError};
use cent_host::progress::Progress;
use cent_host::train::SeededRng;
use cent_host::vae::{self, VaeConfig, VaeError};

/// Settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRun {
    pub dataset: String,
    pub pair: [usize; 2],
    pub count: usize,
    pub seed: u64,
    /// Training images per class at most; `None`: every image the fetched data hold (test
    /// images aside).
    pub per_class: Option<usize>,
    pub cnn_epochs: usize,
    pub vae_epochs: usize,
    /// The CNN's probability of the target class a counterfactual needs
    /// ([`PixelConfig::min_probability`]).
    pub min_probability: f32,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageRunError {
    #[error(transparent)]
    Data(#[from] ImageError),
    #[error("CNN: {0}")]
    Train(#[from] TrainError),
    #[error("VAE: {0}")]
    Vae(#[from] VaeError),
    #[error("pair {0:?} has too few images")]
    TooFew([usize; 2]),
    #[error("{0}")]
    Write(String),
}

/// One explained image.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageResult {
    pub index: usize,
    pub from: String,
    pub to: String,
    /// The target class's label in the pair (0 or 1).
    #[serde(skip)]
    pub to_index: usize,
    pub flipped: bool,
    /// Which search step found it (none when nothing flipped).
    pub found: Option<search::PixelFound>,
    /// The second, independently trained CNN also puts the counterfactual in the target class.
    pub second_agrees: bool,
    /// The image VAE's reconstruction error of the counterfactual (binary cross-entropy).
    pub reconstruction: f64,
    pub changed_pixels: usize,
    pub l1: f32,
    pub latency_ms: f64,
}

/// The JSON summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageSummary {
    pub dataset: String,
    pub pair: [String; 2],
    pub seed: u64,
    pub train_images: usize,
    pub test_images: usize,
    pub cnn_test_accuracy: f64,
    /// The second judge: its shape and test accuracy.
    pub second_cnn: Arch,
    pub second_cnn_test_accuracy: f64,
    /// Seconds to train the CNN, the second CNN and the VAE.
    pub training_seconds: [f64; 3],
    pub vae_latent: usize,
    /// The CNN's probability of the target class each counterfactual was held to.
    pub min_probability: f32,
    pub explained: usize,
    pub flip_rate: f64,
    /// Share of the counterfactuals the tree search found: from a leaf's own patches
    /// (`tree`), and with its exemplar's further patches (`exemplar`); the rest came from the
    /// fallback.
    pub tree_share: f64,
    pub exemplar_share: f64,
    /// Share of the counterfactuals the second CNN also puts in the target class.
    pub second_agreement: f64,
    /// Mean VAE reconstruction error of the counterfactuals, and of real test images of their
    /// target classes (the same measure: closer means more like a real image of that class).
    pub reconstruction_cf: f64,
    pub reconstruction_target: f64,
    pub mean_changed_pixels: f64,
    pub mean_latency_ms: f64,
    pub grid: String,
    pub images: Vec<ImageResult>,
}

/// Test images per class at most (a fifth of a class up to this).
const TEST_PER_CLASS: usize = 1000;

/// Train/test images of the pair, labels 0/1, seeded split: a fifth of each class (at most
/// [`TEST_PER_CLASS`]) for test, the rest (at most `per_class`) for training.
fn pair_split(set: &ImageSet, pair: [usize; 2], per_class: usize, seed: u64) -> (ImageSet, ImageSet) {
    let mut rng = SeededRng::new(seed);
    let mut train = ImageSet { pixels: Vec::new(), labels: Vec::new() };
    let mut test = ImageSet { pixels: Vec::new(), labels: Vec::new() };
    for (label, &digit) in pair.iter().enumerate() {
        let members: Vec<usize> = (0..set.len()).filter(|&i| set.labels[i] == digit).collect();
        let order = rng.permutation(members.len());
        let n_test = (members.len() / 5).min(TEST_PER_CLASS);
        for (k, &pos) in order.iter().enumerate() {
            let side = if k < n_test {
                &mut test
            } else if k - n_test < per_class {
                &mut train
            } else {
                continue;
            };
            side.pixels.extend_from_slice(set.image(members[pos]));
            side.labels.push(label);
        }
    }
    (train, interleave(test, &mut rng))
}

/// Shuffles the test images so the first `count` mix both classes.
fn interleave(set: ImageSet, rng: &mut SeededRng) -> ImageSet {
    let order = rng.permutation(set.len());
    ImageSet {
        pixels: order.iter().flat_map(|&i| set.image(i).to_vec()).collect(),
        labels: order.iter().map(|&i| set.labels[i]).collect(),
    }
}

/// Runs the whole pipeline and writes `out/<dataset>-<a>-<b>.png` and `.json`.
///
/// # Errors
/// [`ImageRunError`] for missing data, training failures or write errors.
pub fn run(
    settings: &ImageRun,
    cache: &Path,
    out: &Path,
    progress: &mut dyn FnMut(&str),
    bars: &dyn Progress,
) -> Result<ImageSummary, ImageRunError> {
    let set = load(&settings.dataset, cache, usize::MAX)?;
    let (train, test) = pair_split(&set, settings.pair, settings.per_class.unwrap_or(usize::MAX), settings.seed);
    if train.len() < 20 || test.is_empty() {
        return Err(ImageRunError::TooFew(settings.pair));
    }
    let names = settings.pair.map(|l| class_name(&settings.dataset, l));
    progress(&format!(
        "{}: {} vs {}: {} train / {} test images; training the CNN",
        settings.dataset,
        names[0],
        names[1],
        train.len(),
        test.len()
    ));
    let cnn_config = CnnConfig { epochs: settings.cnn_epochs, seed: settings.seed, ..CnnConfig::default() };
    let start = Instant::now();
    let cnn = train_cnn(&train.pixels, &train.labels, &cnn_config, bars)?;
    let cnn_seconds = start.elapsed().as_secs_f64();
    let accuracy = blackbox::accuracy(&cnn, &test.pixels, &test.labels)?;
    // The second judge: another shape and another seed, trained on the same images.
    let second_config = CnnConfig { seed: settings.seed.wrapping_add(1000), arch: Arch::second(), ..cnn_config };
    progress(&format!("CNN test accuracy {accuracy:.4} ({cnn_seconds:.0} s); training the second CNN"));
    let start = Instant::now();
    let second = train_cnn(&train.pixels, &train.labels, &second_config, bars)?;
    let second_seconds = start.elapsed().as_secs_f64();
    let second_accuracy = blackbox::accuracy(&second, &test.pixels, &test.labels)?;
    progress(&format!(
        "second CNN test accuracy {second_accuracy:.4} ({second_seconds:.0} s); training the VAE [500, 250] / 32"
    ));
    let vae_config =
        VaeConfig { epochs: settings.vae_epochs, seed: settings.seed, ..VaeConfig::for_dataset("images")? };
    let start = Instant::now();
    let vae = vae::train(&train.pixels, PIXELS, &vae_config, Some(bars))?;
    let vae_seconds = start.elapsed().as_secs_f64();
    let latents = vae.encode(&train.pixels);
    let predicted = cnn.classify(&train.pixels);
    let pool = Pool { images: &train.pixels, latents: &latents, latent: vae.latent(), predicted: &predicted };
    progress(&format!("VAE trained ({vae_seconds:.0} s); explaining {} test images", settings.count.min(test.len())));
    let judges = Judges { cnn: &cnn, second: &second, vae: &vae };
    let search = PixelConfig { min_probability: settings.min_probability, ..PixelConfig::default() };
    let (results, pairs) = explain_all(&judges, &pool, &test, settings.count, &names, &search);
    std::fs::create_dir_all(out).map_err(|e| ImageRunError::Write(format!("{}: {e}", out.display())))?;
    let stem = format!("{}-{}-{}", settings.dataset, names[0], names[1]);
    let grid_path = out.join(format!("{stem}.png"));
    render::grid(&pairs, 4).save_png(&grid_path).map_err(ImageRunError::Write)?;
    let target_recon = target_reconstruction(&cnn, &vae, &test, &results);
    let trained = Trained {
        accuracy,
        second_accuracy,
        seconds: [cnn_seconds, second_seconds, vae_seconds],
        latent: vae.latent(),
        target_recon,
    };
    let summary = summarise(settings, names, &train, &test, &trained, grid_path.display().to_string(), results);
    let json_path = out.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(&summary).map_err(|e| ImageRunError::Write(e.to_string()))?;
    std::fs::write(&json_path, json).map_err(|e| ImageRunError::Write(format!("{}: {e}", json_path.display())))?;
    Ok(summary)
}

/// An original image and its counterfactual.
type Pair = (Vec<f32>, Vec<f32>);

/// The explained CNN, the second judge and the VAE.
struct Judges<'a> {
    cnn: &'a PlainCnn,
    second: &'a PlainCnn,
    vae: &'a vae::Vae,
}

/// What training gave, for the summary.
struct Trained {
    accuracy: f64,
    second_accuracy: f64,
    seconds: [f64; 3],
    latent: usize,
    target_recon: f64,
}

/// Mean VAE reconstruction error of the test images of the classes the counterfactuals reach
/// (each explained image's target class, the CNN's prediction of the test image).
fn target_reconstruction(cnn: &PlainCnn, vae: &vae::Vae, test: &ImageSet, results: &[ImageResult]) -> f64 {
    let predicted = cnn.classify(&test.pixels);
    let mut errors = [0.0f64; 2];
    for (class, error) in errors.iter_mut().enumerate() {
        let rows: Vec<f32> =
            (0..test.len()).filter(|&i| predicted[i] == class).flat_map(|i| test.image(i).to_vec()).collect();
        *error = vae.reconstruction_error(&rows);
    }
    let flipped: Vec<&ImageResult> = results.iter().filter(|r| r.flipped).collect();
    let targets: Vec<usize> = flipped.iter().map(|r| r.to_index).collect();
    if targets.is_empty() { 0.0 } else { targets.iter().map(|&t| errors[t]).sum::<f64>() / targets.len() as f64 }
}

/// Explains the first `count` test images; returns per-image results and the flipped
/// `(original, counterfactual)` pairs for the grid.
fn explain_all(
    judges: &Judges<'_>,
    pool: &Pool<'_>,
    test: &ImageSet,
    count: usize,
    names: &[String; 2],
    search: &PixelConfig,
) -> (Vec<ImageResult>, Vec<Pair>) {
    let mut results = Vec::new();
    let mut pairs = Vec::new();
    for i in 0..count.min(test.len()) {
        let x = test.image(i);
        let class = judges.cnn.classify(x).first().copied().unwrap_or(0).min(1);
        let start = Instant::now();
        let found = search::explain(judges.cnn, judges.vae, pool, x, search);
        let latency_ms = start.elapsed().as_secs_f64() * 1e3;
        let (changed, l1) = found
            .as_ref()
            .map_or((0, 0.0), |cf| (cf.changed, x.iter().zip(&cf.image).map(|(a, b)| (a - b).abs()).sum()));
        let second_agrees = found
            .as_ref()
            .is_some_and(|cf| judges.second.predict(&cf.image).is_ok_and(|c| c.first() == Some(&(1 - class))));
        let reconstruction = found.as_ref().map_or(0.0, |cf| judges.vae.reconstruction_error(&cf.image));
        results.push(ImageResult {
            index: i,
            from: names[class].clone(),
            to: names[1 - class].clone(),
            to_index: 1 - class,
            flipped: found.is_some(),
            found: found.as_ref().map(|cf| cf.found),
            second_agrees,
            reconstruction,
            changed_pixels: changed,
            l1,
            latency_ms,
        });
        if let Some(cf) = found {
            pairs.push((x.to_vec(), cf.image));
        }
    }
    (results, pairs)
}

fn summarise(
    settings: &ImageRun,
    pair: [String; 2],
    train: &ImageSet,
    test: &ImageSet,
    trained: &Trained,
    grid: String,
    images: Vec<ImageResult>,
) -> ImageSummary {
    let explained = images.len();
    let flipped: Vec<&ImageResult> = images.iter().filter(|r| r.flipped).collect();
    let mean = |v: f64, n: usize| if n == 0 { 0.0 } else { v / n as f64 };
    ImageSummary {
        dataset: settings.dataset.clone(),
        pair,
        seed: settings.seed,
        train_images: train.len(),
        test_images: test.len(),
        cnn_test_accuracy: trained.accuracy,
        second_cnn: Arch::second(),
        second_cnn_test_accuracy: trained.second_accuracy,
        training_seconds: trained.seconds,
        vae_latent: trained.latent,
        min_probability: settings.min_probability,
        explained,
        flip_rate: mean(flipped.len() as f64, explained),
        tree_share: mean(
            flipped.iter().filter(|r| r.found == Some(search::PixelFound::Tree)).count() as f64,
            flipped.len(),
        ),
        exemplar_share: mean(
            flipped.iter().filter(|r| r.found == Some(search::PixelFound::Exemplar)).count() as f64,
            flipped.len(),
        ),
        second_agreement: mean(flipped.iter().filter(|r| r.second_agrees).count() as f64, flipped.len()),
        reconstruction_cf: mean(flipped.iter().map(|r| r.reconstruction).sum(), flipped.len()),
        reconstruction_target: trained.target_recon,
        mean_changed_pixels: mean(flipped.iter().map(|r| r.changed_pixels as f64).sum(), flipped.len()),
        mean_latency_ms: mean(images.iter().map(|r| r.latency_ms).sum(), explained),
        grid,
        images,
    }
}
