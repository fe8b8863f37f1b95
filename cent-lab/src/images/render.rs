//! Drawing image counterfactuals: the original, the counterfactual and the visual contrast,
//! as one PNG grid (one row per explained image).
//!
//! The contrast spreads a Gaussian kernel around every changed pixel, weighted by the size of
//! the change, on a dimmed copy of the original: **red** where intensity was reduced (the
//! pixel is a *pertinent positive*: ink the decision relied on) and **green** where intensity
//! was added (a *pertinent negative*: ink whose absence the decision relied on).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Side of the square images.
pub const SIDE: usize = 28;

/// An RGB image, row-major, 3 bytes per pixel.
#[derive(Debug, Clone, PartialEq)]
pub struct Rgb {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

impl Rgb {
    /// A white canvas.
    pub fn white(width: usize, height: usize) -> Self {
        Self { width, height, pixels: vec![255; width * height * 3] }
    }

    pub fn get(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    fn set(&mut self, x: usize, y: usize, c: [u8; 3]) {
        let i = (y * self.width + x) * 3;
        self.pixels[i..i + 3].copy_from_slice(&c);
    }

    /// Pastes `tile` with its top-left corner at `(x0, y0)`, each pixel repeated `scale` times.
    pub fn blit(&mut self, tile: &Rgb, x0: usize, y0: usize, scale: usize) {
        for y in 0..tile.height * scale {
            for x in 0..tile.width * scale {
                if x0 + x < self.width && y0 + y < self.height {
                    self.set(x0 + x, y0 + y, tile.get(x / scale, y / scale));
                }
            }
        }
    }

    /// Writes the image as an 8-bit RGB PNG.
    ///
    /// # Errors
    /// I/O or encoder errors, as text.
    pub fn save_png(&self, path: &Path) -> Result<(), String> {
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut encoder = png::Encoder::new(BufWriter::new(file), self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| format!("{}: {e}", path.display()))?;
        writer.write_image_data(&self.pixels).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// A grey-scale tile of one `[0, 1]` image (ink dark on white, as printed digits).
pub fn grey(image: &[f32]) -> Rgb {
    let mut tile = Rgb::white(SIDE, SIDE);
    for (i, v) in image.iter().enumerate().take(SIDE * SIDE) {
        let g = (255.0 * (1.0 - v.clamp(0.0, 1.0))).round() as u8;
        tile.set(i % SIDE, i / SIDE, [g, g, g]);
    }
    tile
}

/// Width of the Gaussian kernel in pixels.
const SIGMA: f32 = 1.0;

/// The contrast tile: for each pixel, the Gaussian-spread sum of reductions (red) and additions
/// (green) over a faint copy of the original.
pub fn contrast(original: &[f32], counterfactual: &[f32]) -> Rgb {
    let (reduced, added) = spread(original, counterfactual);
    let mut tile = Rgb::white(SIDE, SIDE);
    for i in 0..SIDE * SIDE {
        let base = 255.0 - 60.0 * original.get(i).copied().unwrap_or(0.0).clamp(0.0, 1.0);
        let (r, g) = (reduced[i].min(1.0), added[i].min(1.0));
        // Red keeps its red channel and loses green/blue; green the other way round.
        let red = base * (1.0 - g);
        let green = base * (1.0 - r);
        let blue = base * (1.0 - r.max(g));
        tile.set(i % SIDE, i / SIDE, [red.round() as u8, green.round() as u8, blue.round() as u8]);
    }
    tile
}

/// Per pixel, the kernel-weighted sums of intensity reductions and additions.
pub fn spread(original: &[f32], counterfactual: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut reduced = vec![0.0f32; SIDE * SIDE];
    let mut added = vec![0.0f32; SIDE * SIDE];
    let radius = (3.0 * SIGMA).ceil() as isize;
    for (i, (a, b)) in original.iter().zip(counterfactual).enumerate().take(SIDE * SIDE) {
        let delta = b - a;
        if delta.abs() < 1e-3 {
            continue;
        }
        let target = if delta < 0.0 { &mut reduced } else { &mut added };
        let (cx, cy) = ((i % SIDE) as isize, (i / SIDE) as isize);
        for dy in -radius..=radius {
            for dx in -radius..=radius {
                let (x, y) = (cx + dx, cy + dy);
                if x < 0 || y < 0 || x >= SIDE as isize || y >= SIDE as isize {
                    continue;
                }
                let w = (-((dx * dx + dy * dy) as f32) / (2.0 * SIGMA * SIGMA)).exp();
                target[y as usize * SIDE + x as usize] += w * delta.abs();
            }
        }
    }
    (reduced, added)
}

/// The grid: one row per `(original, counterfactual)` pair, three tiles wide, `scale`x enlarged,
/// with a 4-pixel white gutter.
pub fn grid(pairs: &[(Vec<f32>, Vec<f32>)], scale: usize) -> Rgb {
    let cell = SIDE * scale + 4;
    let mut canvas = Rgb::white(3 * cell + 4, pairs.len().max(1) * cell + 4);
    for (row, (original, cf)) in pairs.iter().enumerate() {
        let y = 4 + row * cell;
        canvas.blit(&grey(original), 4, y, scale);
        canvas.blit(&grey(cf), 4 + cell, y, scale);
        canvas.blit(&contrast(original, cf), 4 + 2 * cell, y, scale);
    }
    canvas
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blank image with one pixel of ink at (5, 5) that the counterfactual removes, and ink
    /// added at (20, 20).
    fn hand_made() -> (Vec<f32>, Vec<f32>) {
        let mut original = vec![0.0; SIDE * SIDE];
        original[5 * SIDE + 5] = 1.0;
        let mut cf = original.clone();
        cf[5 * SIDE + 5] = 0.0;
        cf[20 * SIDE + 20] = 0.8;
        (original, cf)
    }

    #[test]
    fn test_reduced_pixel_is_red_and_added_pixel_is_green() {
        let (original, cf) = hand_made();
        let tile = contrast(&original, &cf);
        let [r, g, b] = tile.get(5, 5);
        assert!(r > 150 && g < 60 && b < 60, "reduced pixel must be red, got {:?}", [r, g, b]);
        let [r, g, b] = tile.get(20, 20);
        assert!(g > 150 && r < 100 && b < 100, "added pixel must be green, got {:?}", [r, g, b]);
        let [r, g, b] = tile.get(12, 12);
        assert_eq!([r, g, b], [255, 255, 255], "unchanged, far pixels stay white");
    }

    #[test]
    fn test_kernel_spreads_and_decays() {
        let (original, cf) = hand_made();
        let (reduced, added) = spread(&original, &cf);
        let at = |v: &Vec<f32>, x: usize, y: usize| v[y * SIDE + x];
        assert!((at(&reduced, 5, 5) - 1.0).abs() < 1e-6);
        assert!(at(&reduced, 6, 5) > 0.5 && at(&reduced, 6, 5) < 0.7, "exp(-1/2) ~ 0.61");
        assert!(at(&reduced, 7, 5) < at(&reduced, 6, 5));
        assert!(at(&added, 5, 5).abs() < 1e-6, "no addition near the removed pixel");
        assert!((at(&added, 20, 20) - 0.8).abs() < 1e-6);
    }

    #[test]
    fn test_grid_size_and_png_round_trip() {
        let pairs = vec![hand_made(), hand_made()];
        let canvas = grid(&pairs, 2);
        assert_eq!(canvas.width, 3 * (SIDE * 2 + 4) + 4);
        assert_eq!(canvas.height, 2 * (SIDE * 2 + 4) + 4);
        let path = std::env::temp_dir().join(format!("cent-grid-{}.png", std::process::id()));
        canvas.save_png(&path).expect("writes");
        let bytes = std::fs::read(&path).expect("reads");
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_file(&path).expect("cleanup");
    }
}
