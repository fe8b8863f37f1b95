//! Image counterfactuals on a synthetic slice: 28x28 images of a vertical bar on the left
//! (class 0) or on the right (class 1) with a seeded speckle. Small enough to train the CNN, the
//! second CNN and the VAE in seconds.

use cent_host::blackbox::BlackBox;
use cent_host::progress::Silent;
use cent_host::train::SeededRng;
use cent_host::vae::{self, VaeConfig};
use cent_lab::images::PIXELS;
use cent_lab::images::cnn::{Arch, CnnConfig, PlainCnn, train_cnn};
use cent_lab::images::render;
use cent_lab::images::search::{self, PixelConfig, PixelFound, Pool};

const SIDE: usize = 28;

/// `n` images, alternating classes; the bar is 4 pixels wide at a seeded column of its side.
fn bars(n: usize, seed: u64) -> (Vec<f32>, Vec<usize>) {
    let mut rng = SeededRng::new(seed);
    let mut x = Vec::with_capacity(n * PIXELS);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let label = i % 2;
        let col0 = if label == 0 { 2 } else { 16 } + (rng.uniform() * 8.0) as usize;
        for p in 0..PIXELS {
            let on = (col0..col0 + 4).contains(&(p % SIDE));
            x.push(if on { 0.9 } else { 0.15 * rng.uniform() });
        }
        y.push(label);
    }
    (x, y)
}

struct Fitted {
    x: Vec<f32>,
    cnn: PlainCnn,
    second: PlainCnn,
    vae: vae::Vae,
    latents: Vec<f32>,
    predicted: Vec<usize>,
}

fn fit(seed: u64) -> Fitted {
    let (x, y) = bars(160, seed);
    let config = CnnConfig { epochs: 3, batch_size: 16, learning_rate: 2e-3, seed, arch: Arch::FIRST };
    let cnn = train_cnn(&x, &y, &config, &Silent).expect("the CNN trains");
    let second = train_cnn(&x, &y, &CnnConfig { seed: seed + 1000, arch: Arch::second(), ..config }, &Silent)
        .expect("the second CNN trains");
    let vae_config =
        VaeConfig { hidden: vec![64], latent: 4, kl_weight: 1.0, epochs: 8, batch_size: 16, learning_rate: 2e-3, seed };
    let vae = vae::train(&x, PIXELS, &vae_config, None).expect("the VAE trains");
    let latents = vae.encode(&x);
    let predicted = cnn.classify(&x);
    Fitted { x, cnn, second, vae, latents, predicted }
}

/// Counterfactuals of fresh images (another seed), with the grid they make.
fn explain(f: &Fitted, count: usize, tag: &str) -> (Vec<(Vec<f32>, search::PixelCf)>, Vec<u8>) {
    let pool = Pool { images: &f.x, latents: &f.latents, latent: f.vae.latent(), predicted: &f.predicted };
    let (queries, _) = bars(count, 99);
    let cfg = PixelConfig { k: 40, ..PixelConfig::default() };
    let found: Vec<(Vec<f32>, search::PixelCf)> = queries
        .chunks_exact(PIXELS)
        .filter_map(|q| search::explain(&f.cnn, &f.vae, &pool, q, &cfg).map(|cf| (q.to_vec(), cf)))
        .collect();
    let pairs: Vec<(Vec<f32>, Vec<f32>)> = found.iter().map(|(q, cf)| (q.clone(), cf.image.clone())).collect();
    let path = std::env::temp_dir().join(format!("cent-images-test-{}-{tag}.png", std::process::id()));
    render::grid(&pairs, 2).save_png(&path).expect("PNG written");
    let png = std::fs::read(&path).expect("PNG read");
    let _ = std::fs::remove_file(&path);
    (found, png)
}

#[test]
fn test_tree_search_counterfactuals_flip_the_cnn() {
    let f = fit(1);
    let (found, _) = explain(&f, 6, "flip");
    assert_eq!(found.len(), 6, "every query has a counterfactual");
    let mut from_tree = 0;
    for (q, cf) in &found {
        let class = f.cnn.predict(q).expect("plain arithmetic")[0];
        let p = f.cnn.predict_proba(&cf.image).expect("plain arithmetic");
        let min = PixelConfig::default().min_probability;
        assert!(p[1 - class] >= min, "the CNN must put the counterfactual in the other class at p >= {min}: {p:?}");
        assert_eq!(cf.changed, q.iter().zip(&cf.image).filter(|(a, b)| (*a - *b).abs() > 1e-6).count());
        assert!(cf.image.iter().all(|v| (0.0..=1.0).contains(v)), "pixels stay in [0, 1]");
        from_tree += usize::from(cf.found != PixelFound::Interpolation);
    }
    assert!(from_tree >= 5, "the tree search (not the fallback) found {from_tree} of 6");
    // The second CNN is a real second opinion: it classifies the slice itself.
    let acc = cent_host::blackbox::accuracy(&f.second, &f.x, &bars(160, 1).1).expect("rows");
    assert!(acc > 0.95, "second CNN accuracy {acc}");
}

#[test]
fn test_fixed_seed_gives_the_same_png_bytes() {
    let (a, png_a) = explain(&fit(2), 4, "a");
    let (b, png_b) = explain(&fit(2), 4, "b");
    assert!(!a.is_empty());
    assert_eq!(a.len(), b.len());
    assert_eq!(png_a, png_b, "the same seed must give the same grid, byte for byte");
}
