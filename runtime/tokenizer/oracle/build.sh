#!/usr/bin/env bash
# Rebuilds testdata/oracle: trains the SentencePiece models (Debian's
# python3-sentencepiece) and the tokenizers-library vocabularies on SST-2
# (../shared) plus a multilingual sample, then writes the tokenizer.json
# files. Needs `npm ci` here first. The outputs are committed; the tests
# only need node and the npm package.
set -euo pipefail
cd "$(dirname "$0")"
out=../testdata/oracle
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node traintext.js ../../../../shared/data/glue-sst2/train.tsv "$tmp/train.txt" 2000
/usr/bin/python3 spm_train.py "$tmp/train.txt" "$tmp"
mkdir -p "$out"
node build.js "$tmp/train.txt" "$tmp" "$out" 2>/dev/null
cp "$tmp/unigram-nmt.model" "$out/sentencepiece.bpe.model"
cp "$tmp/unigram-bytes.model" "$out/spiece.model"
cp "$tmp/unigram-deberta.model" "$out/spm.model"
