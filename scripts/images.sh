#!/usr/bin/env bash
# Regenerates the six image galleries of docs/images (the paper's pairs): each pair's CNN, second
# CNN and VAE trained on every image the fetched data hold, 8 test images explained per pair.
#   bash scripts/images.sh [out-dir]        (default docs/images; needs `cent fetch mnist fashion`)
# Into docs/images, it then rewrites the table of README.md and docs/evaluation.md from the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/images}"
cent="${CENT:-target/debug/cent}"
for pair in 5,6 3,8 1,9; do
  "$cent" images --dataset mnist --pair "$pair" --count 8 --cnn-epochs 2 --out "$out"
done
for pair in dress,shirt sandal,ankle-boot t-shirt,pullover; do
  "$cent" images --dataset fashion --pair "$pair" --count 8 --cnn-epochs 2 --out "$out"
done
if [ "$out" = docs/images ]; then
  python3 scripts/images_table.py "$out"
fi
