// encode.js is the oracle of runtime/tokenizer's tests: it encodes every
// input of a JSON-lines corpus ({"text": ..., "text_pair": ...}) with the
// HuggingFace tokenizers library and writes one line per input:
// {"ids": [...], "type_ids": [...], "offsets": [[start, end], ...]}.
// Special tokens are added, there is no padding, and a file without its
// own truncation is truncated to 512 tokens, longest first, which is what
// runtime/tokenizer does with such a file. An input the library refuses
// gets {"error": message}.
//
// usage: node encode.js TOKENIZER_JSON CORPUS_JSONL OUT_JSONL
'use strict';
const fs = require('fs');
const tk = require('@anush008/tokenizers');

async function main() {
  const [tokFile, corpusFile, outFile] = process.argv.slice(2);
  const tok = tk.Tokenizer.fromFile(tokFile);
  const spec = JSON.parse(fs.readFileSync(tokFile, 'utf8'));
  if (!spec.truncation) tok.setTruncation(512);
  const inputs = fs.readFileSync(corpusFile, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  const out = fs.openSync(outFile, 'w');
  const batch = 512;
  for (let i = 0; i < inputs.length; i += batch) {
    const encs = await Promise.all(inputs.slice(i, i + batch).map((x) =>
      tok.encode(x.text, x.text_pair == null ? null : x.text_pair, { addSpecialTokens: true }).catch((e) => ({ error: String(e) }))));
    // Inputs the library refuses (OnlyFirst/OnlySecond truncation that
    // cannot fit) are written as {"error": ...}.
    const lines = encs.map((e) => JSON.stringify(e.error ? e : { ids: e.getIds(), type_ids: e.getTypeIds(), offsets: e.getOffsets() }));
    fs.writeSync(out, lines.join('\n') + '\n');
  }
  fs.closeSync(out);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
