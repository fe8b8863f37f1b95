//! `cent images`: train the CNN and the VAE on a binary pair, explain `count` test images and
//! write the PNG grid plus a JSON summary.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::cnn::{CnnConfig, PlainCnn, train_cnn};
use super::search::{self, PixelConfig, Pool};
use super::{ImageError, ImageSet, PIXELS, class_name, load, render};
use cent_host::blackbox::{self, TrainError};
use cent_host::train::SeededRng;
use cent_host::vae::{self, VaeConfig, VaeError};

/// Settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRun {
    pub dataset: String,
    pub pair: [usize; 2],
    pub count: usize,
    pub seed: u64,
    /// Training images per class at most (keeps CPU training small).
    pub per_class: usize,
    pub cnn_epochs: usize,
    pub vae_epochs: usize,
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
    pub flipped: bool,
    /// Which search step found it (none when nothing flipped).
    pub found: Option<search::PixelFound>,
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
    pub vae_latent: usize,
    pub explained: usize,
    pub flip_rate: f64,
    pub mean_changed_pixels: f64,
    pub mean_latency_ms: f64,
    pub grid: String,
    pub images: Vec<ImageResult>,
}

/// Train/test images of the pair, labels 0/1, seeded split with at most `per_class` training
/// images per class.
fn pair_split(set: &ImageSet, pair: [usize; 2], per_class: usize, seed: u64) -> (ImageSet, ImageSet) {
    let mut rng = SeededRng::new(seed);
    let mut train = ImageSet { pixels: Vec::new(), labels: Vec::new() };
    let mut test = ImageSet { pixels: Vec::new(), labels: Vec::new() };
    for (label, &digit) in pair.iter().enumerate() {
        let members: Vec<usize> = (0..set.len()).filter(|&i| set.labels[i] == digit).collect();
        let order = rng.permutation(members.len());
        let n_test = members.len() / 5;
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
) -> Result<ImageSummary, ImageRunError> {
    let set = load(&settings.dataset, cache, 12_000)?;
    let (train, test) = pair_split(&set, settings.pair, settings.per_class, settings.seed);
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
    let cnn = train_cnn(&train.pixels, &train.labels, &cnn_config)?;
    let accuracy = blackbox::accuracy(&cnn, &test.pixels, &test.labels)?;
    progress(&format!("CNN test accuracy {accuracy:.4}; training the VAE [500, 250] / 32"));
    let vae_config =
        VaeConfig { epochs: settings.vae_epochs, seed: settings.seed, ..VaeConfig::for_dataset("images")? };
    let vae = vae::train(&train.pixels, PIXELS, &vae_config, None)?;
    let latents = vae.encode(&train.pixels);
    let predicted = cnn.classify(&train.pixels);
    let pool = Pool { images: &train.pixels, latents: &latents, latent: vae.latent(), predicted: &predicted };
    let (results, pairs) = explain_all(&cnn, &vae, &pool, &test, settings.count, &names);
    std::fs::create_dir_all(out).map_err(|e| ImageRunError::Write(format!("{}: {e}", out.display())))?;
    let stem = format!("{}-{}-{}", settings.dataset, names[0], names[1]);
    let grid_path = out.join(format!("{stem}.png"));
    render::grid(&pairs, 4).save_png(&grid_path).map_err(ImageRunError::Write)?;
    let summary =
        summarise(settings, names, &train, &test, accuracy, vae.latent(), grid_path.display().to_string(), results);
    let json_path = out.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(&summary).map_err(|e| ImageRunError::Write(e.to_string()))?;
    std::fs::write(&json_path, json).map_err(|e| ImageRunError::Write(format!("{}: {e}", json_path.display())))?;
    Ok(summary)
}

/// An original image and its counterfactual.
type Pair = (Vec<f32>, Vec<f32>);

/// Explains the first `count` test images; returns per-image results and the flipped
/// `(original, counterfactual)` pairs for the grid.
fn explain_all(
    cnn: &PlainCnn,
    vae: &vae::Vae,
    pool: &Pool<'_>,
    test: &ImageSet,
    count: usize,
    names: &[String; 2],
) -> (Vec<ImageResult>, Vec<Pair>) {
    let mut results = Vec::new();
    let mut pairs = Vec::new();
    for i in 0..count.min(test.len()) {
        let x = test.image(i);
        let class = cnn.classify(x).first().copied().unwrap_or(0).min(1);
        let start = Instant::now();
        let found = search::explain(cnn, vae, pool, x, &PixelConfig::default());
        let latency_ms = start.elapsed().as_secs_f64() * 1e3;
        let (changed, l1) = found
            .as_ref()
            .map_or((0, 0.0), |cf| (cf.changed, x.iter().zip(&cf.image).map(|(a, b)| (a - b).abs()).sum()));
        results.push(ImageResult {
            index: i,
            from: names[class].clone(),
            to: names[1 - class].clone(),
            flipped: found.is_some(),
            found: found.as_ref().map(|cf| cf.found),
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

#[allow(clippy::too_many_arguments)]
fn summarise(
    settings: &ImageRun,
    pair: [String; 2],
    train: &ImageSet,
    test: &ImageSet,
    accuracy: f64,
    latent: usize,
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
        cnn_test_accuracy: accuracy,
        vae_latent: latent,
        explained,
        flip_rate: mean(flipped.len() as f64, explained),
        mean_changed_pixels: mean(flipped.iter().map(|r| r.changed_pixels as f64).sum(), flipped.len()),
        mean_latency_ms: mean(images.iter().map(|r| r.latency_ms).sum(), explained),
        grid,
        images,
    }
}
