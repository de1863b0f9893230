// windows.js is the oracle of EncodePairWindows: it encodes every pair of
// a JSON-lines corpus ({"text": question, "text_pair": context}) as
// transformers' question-answering pipeline asks the tokenizers library
// to (truncation OnlySecond to MAX_LEN with STRIDE, overflowing tokens
// kept) and writes one line per input: {"windows": [{"ids", "type_ids",
// "offsets"}, ...]}, the encoding first and its overflowing parts after,
// or {"error": message} where the library refuses the pair.
//
// usage: node windows.js TOKENIZER_JSON CORPUS_JSONL OUT_JSONL MAX_LEN STRIDE
'use strict';
const fs = require('fs');
const tk = require('@anush008/tokenizers');

async function main() {
  const [tokFile, corpusFile, outFile, maxLen, stride] = process.argv.slice(2);
  const tok = tk.Tokenizer.fromFile(tokFile);
  tok.setTruncation(Number(maxLen), { strategy: 'OnlySecond', stride: Number(stride) });
  // The library panics (aborting the process) when the window the first
  // sequence leaves is not longer than the stride; such a pair is
  // reported as refused without asking it.
  const plain = tk.Tokenizer.fromFile(tokFile);
  plain.setTruncation(1 << 30);
  const len = async (a, b, special) => (await plain.encode(a, b, { addSpecialTokens: special })).getIds().length;
  const inputs = fs.readFileSync(corpusFile, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  const out = fs.openSync(outFile, 'w');
  const one = (e) => ({ ids: e.getIds(), type_ids: e.getTypeIds(), offsets: e.getOffsets(), words: e.getWordIds(), sequences: e.getSequenceIds() });
  for (const x of inputs) {
    let line;
    try {
      const whole = await len(x.text, x.text_pair, true);
      const a = await len(x.text, null, false);
      const b = await len(x.text_pair, null, false);
      const window = Number(maxLen) - a - (whole - a - b);
      if (whole > Number(maxLen) && window <= Number(stride)) throw new Error('stride not below the window of ' + window);
      const e = await tok.encode(x.text, x.text_pair, { addSpecialTokens: true });
      line = { windows: [one(e)].concat(e.getOverflowing().map(one)) };
    } catch (err) {
      line = { error: String(err) };
    }
    fs.writeSync(out, JSON.stringify(line) + '\n');
  }
  fs.closeSync(out);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
