#!/usr/bin/env python3
"""Writes the image-gallery table of README.md and docs/evaluation.md from docs/images/*.json.

    python3 scripts/images_table.py [images-dir]     (default docs/images)

Replaces everything between `<!-- images:begin ... -->` and `<!-- images:end -->` in both files.
The "before" changed-pixel figures are those of the galleries committed in 9a24922 (the
interpolation search with pixel-by-pixel pruning at p > 0.5), the reference the patch-tree
search is measured against. Standard library only.
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAIRS = [
    "mnist-5-6",
    "mnist-3-8",
    "mnist-1-9",
    "fashion-dress-shirt",
    "fashion-sandal-ankle-boot",
    "fashion-t-shirt-pullover",
]
BEFORE = {
    "mnist-5-6": 72.75,
    "mnist-3-8": 56.375,
    "mnist-1-9": 51.75,
    "fashion-dress-shirt": 94.0,
    "fashion-sandal-ankle-boot": 130.75,
    "fashion-t-shirt-pullover": 96.25,
}
HEADER = (
    "| pair | train images | CNN acc. (second) | training s (CNN / second / VAE) | flipped "
    "| tree search (leaf's own patches) | fallback | second CNN agrees | changed pixels (earlier gallery) "
    "| VAE recon. x' / real target | ms per image |\n"
    "|---|---:|---|---|---:|---|---:|---:|---|---|---:|\n"
)


def pct(x):
    return f"{round(100 * x)} %"


def block(images_dir):
    rows, totals = [], {"n": 0, "flipped": 0, "tree": 0, "own": 0, "fallback": 0, "agree": 0}
    fewer = 0
    for name in PAIRS:
        path = images_dir / f"{name}.json"
        if not path.exists():
            sys.exit(f"{path}: missing; run `bash scripts/images.sh` first")
        d = json.loads(path.read_text())
        imgs = d["images"]
        n = len(imgs)
        flipped = sum(i["flipped"] for i in imgs)
        own = sum(i["found"] == "tree" for i in imgs)
        tree = own + sum(i["found"] == "exemplar" for i in imgs)
        fallback = sum(i["found"] == "interpolation" for i in imgs)
        agree = sum(i["second_agrees"] for i in imgs)
        before = BEFORE[name]
        fewer += d["mean_changed_pixels"] <= before
        for k, v in [("n", n), ("flipped", flipped), ("tree", tree), ("own", own), ("fallback", fallback), ("agree", agree)]:
            totals[k] += v
        secs = " / ".join(str(round(s)) for s in d["training_seconds"])
        rows.append(
            f"| {d['dataset']} {d['pair'][0]} vs {d['pair'][1]} | {d['train_images']:,} "
            f"| {d['cnn_test_accuracy']:.3f} ({d['second_cnn_test_accuracy']:.3f}) | {secs} "
            f"| {flipped}/{n} | {pct(tree / n)} ({pct(own / n)}) | {fallback} | {pct(agree / n)} "
            f"| {d['mean_changed_pixels']:.1f} ({before:.1f}) "
            f"| {d['reconstruction_cf']:.0f} / {d['reconstruction_target']:.0f} | {d['mean_latency_ms']:.0f} |\n"
        )
    t = totals
    summary = (
        f"Over the {len(PAIRS)} pairs: {t['flipped']} of {t['n']} images flipped, {t['tree']} by the tree "
        f"search and {t['fallback']} by the fallback; a leaf's own patches sufficed for {t['own']} of them, "
        f"the others needed their exemplar's further patches; the second CNN agrees on {t['agree']} of "
        f"{t['n']} ({pct(t['agree'] / t['n'])}); mean changed pixels at or below the earlier gallery's on "
        f"{fewer} of {len(PAIRS)} pairs.\n"
    )
    return HEADER + "".join(rows) + "\n" + summary


def main():
    images_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images"
    text = block(images_dir)
    pattern = re.compile(r"(<!-- images:begin[^>]*-->\n).*?(<!-- images:end -->)", re.S)
    for doc in [ROOT / "README.md", ROOT / "docs" / "evaluation.md"]:
        old = doc.read_text()
        new, n = pattern.subn(lambda m: m.group(1) + text + m.group(2), old)
        if n != 1:
            sys.exit(f"{doc}: expected one images:begin/images:end block, found {n}")
        doc.write_text(new)
        print(f"{doc.relative_to(ROOT)}: table written from {images_dir}")


if __name__ == "__main__":
    main()
