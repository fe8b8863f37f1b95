//! `cent images`: image counterfactuals with the PP/PN contrast, as a PNG grid and JSON.

use super::progress::Bars;
use anyhow::Result;
use cent_lab::images::parse_pair;
use cent_lab::images::run::{self, ImageRun};
use cent_lab::images::search::PixelConfig;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ImagesArgs {
    /// Image dataset: mnist or fashion (after `cent fetch mnist fashion`).
    #[arg(long, default_value = "mnist")]
    pub dataset: String,
    /// The binary pair: digits (5,6) or Fashion-MNIST names (dress,shirt; sandal,ankle-boot).
    #[arg(long, default_value = "5,6")]
    pub pair: String,
    /// Test images to explain.
    #[arg(long, default_value_t = 8)]
    pub count: usize,
    /// Output directory of the PNG grid and JSON summary.
    #[arg(long, default_value = "docs/images")]
    pub out: PathBuf,
    /// Training images per class at most (default: every image the fetched data hold, a fifth
    /// of each class, at most 1,000, kept for test).
    #[arg(long)]
    pub per_class: Option<usize>,
    /// CNN training epochs.
    #[arg(long, default_value_t = 3)]
    pub cnn_epochs: usize,
    /// VAE training epochs.
    #[arg(long, default_value_t = 5)]
    pub vae_epochs: usize,
    /// The CNN's probability of the target class a counterfactual needs, in (0.5, 1]: higher
    /// asks for answers deeper in the target class (more changed pixels, more often seen as
    /// the target class by the second CNN).
    #[arg(long, default_value_t = PixelConfig::default().min_probability, value_parser = probability)]
    pub min_probability: f32,
    /// Seed of the split, the training and the search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cache of fetched datasets.
    #[arg(long, default_value = "data/cache", env = "CENT_CACHE")]
    pub cache: PathBuf,
    /// No status messages on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &ImagesArgs) -> Result<ExitCode> {
    let settings = ImageRun {
        dataset: args.dataset.clone(),
        pair: parse_pair(&args.pair)?,
        count: args.count,
        seed: args.seed,
        per_class: args.per_class,
        cnn_epochs: args.cnn_epochs,
        vae_epochs: args.vae_epochs,
        min_probability: args.min_probability,
    };
    let quiet = args.quiet;
    let bars = Bars::new(quiet);
    let summary = run::run(
        &settings,
        &args.cache,
        &args.out,
        &mut |line| {
            if !quiet {
                eprintln!("{line}");
            }
        },
        &bars,
    )?;
    outln!(
        "{} {} vs {}: CNN accuracy {:.4}; flipped {}/{} ({:.0}%), {:.0}% by the tree search ({:.0}% from a leaf's own patches), second CNN agrees on {:.0}%, {:.1} changed pixels on average, {:.0} ms per image; grid {}",
        summary.dataset,
        summary.pair[0],
        summary.pair[1],
        summary.cnn_test_accuracy,
        summary.images.iter().filter(|r| r.flipped).count(),
        summary.explained,
        100.0 * summary.flip_rate,
        100.0 * (summary.tree_share + summary.exemplar_share),
        100.0 * summary.tree_share,
        100.0 * summary.second_agreement,
        summary.mean_changed_pixels,
        summary.mean_latency_ms,
        summary.grid
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A probability above one half (a counterfactual must be the CNN's most probable class) and at
/// most 1.
fn probability(text: &str) -> Result<f32, String> {
    let p: f32 = text.trim().parse().map_err(|_| format!("{text:?} is not a number"))?;
    if p > 0.5 && p <= 1.0 { Ok(p) } else { Err(format!("{p} is not in (0.5, 1]")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_min_probability_must_leave_the_target_most_probable() {
        assert_eq!(probability("0.9"), Ok(0.9));
        assert_eq!(probability(" 1 "), Ok(1.0));
        for bad in ["0.5", "0.2", "1.01", "-1", "NaN", "high"] {
            assert!(probability(bad).is_err(), "{bad} accepted");
        }
    }
}
