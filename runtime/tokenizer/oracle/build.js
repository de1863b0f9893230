// build.js builds the tokenizer.json files of the oracle tests with the
// HuggingFace tokenizers library: its trainers learn the vocabularies,
// its constructors assemble pipelines shaped like the published files,
// and its own serialiser writes them. Unigram vocabularies come from the
// real SentencePiece trainer (spm_train.py), as XLM-R's did.
//
// usage: node build.js TRAIN_TEXT SPM_DIR OUT_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const tk = require('@anush008/tokenizers');

const [trainText, spmDir, outDir] = process.argv.slice(2);

// trainedVocab trains model on the training text behind normalizer and
// preTokenizer and returns its tokens in id order, at most limit of them
// (the trainers add the alphabet first, so a prefix is a valid vocabulary).
function trainedTokens(model, normalizer, preTokenizer, limit) {
  const t = new tk.Tokenizer(model);
  if (normalizer) t.setNormalizer(normalizer);
  if (preTokenizer) t.setPreTokenizer(preTokenizer);
  t.train([trainText]);
  const vocab = t.getVocab(false);
  return Object.keys(vocab).sort((a, b) => vocab[a] - vocab[b]).slice(0, limit);
}

function vocabOf(tokens) {
  const v = {};
  for (const tok of tokens) if (!(tok in v)) v[tok] = Object.keys(v).length;
  return v;
}

// edit rewrites a saved file and checks the library still loads it.
function edit(name, f) {
  const file = path.join(outDir, name + '.json');
  const j = JSON.parse(fs.readFileSync(file, 'utf8'));
  f(j);
  fs.writeFileSync(file, JSON.stringify(j));
  tk.Tokenizer.fromFile(file);
}

function save(t, name) {
  t.save(path.join(outDir, name + '.json'), false);
  console.log('wrote', name);
}

// BERT WordPiece, uncased, as all-MiniLM-L6-v2, bge and e5 ship it.
function bert() {
  const norm = () => tk.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true });
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const tokens = trainedTokens(tk.WordPiece.empty(), norm(), tk.bertPreTokenizer(), 3000);
  const vocab = vocabOf(specials.concat(tokens));
  const t = new tk.Tokenizer(tk.WordPiece.init(vocab, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100 }));
  t.setNormalizer(norm());
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.setPostProcessor(tk.templateProcessing('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1', [['[CLS]', vocab['[CLS]']], ['[SEP]', vocab['[SEP]']]]));
  t.addSpecialTokens(specials);
  save(t, 'bert-uncased');
}

// Byte-level BPE as roberta-base ships it: <s> <pad> </s> <unk> first,
// every byte character in the vocabulary, <mask> last.
function roberta() {
  const pre = () => tk.byteLevelPreTokenizer(false, true);
  const t0 = new tk.Tokenizer(tk.BPE.empty());
  t0.setPreTokenizer(pre());
  t0.train([trainText]);
  const tmp = path.join(outDir, '.bpe-trained.json');
  t0.save(tmp, false);
  const trained = JSON.parse(fs.readFileSync(tmp, 'utf8'));
  fs.unlinkSync(tmp);
  // Keep the first merges; the vocabulary is the byte alphabet plus what
  // those merges make.
  const merges = trained.model.merges.slice(0, 3000).map((m) => (typeof m === 'string' ? m.split(' ') : m));
  const tokens = ['<s>', '<pad>', '</s>', '<unk>'].concat(tk.byteLevelAlphabet().sort());
  for (const [a, b] of merges) tokens.push(a + b);
  tokens.push('<mask>');
  const vocab = vocabOf(tokens);
  const t = new tk.Tokenizer(tk.BPE.init(vocab, merges, {}));
  t.setPreTokenizer(pre());
  t.setPostProcessor(tk.robertaProcessing(['</s>', vocab['</s>']], ['<s>', vocab['<s>']], true, false));
  t.addAddedTokens([
    new tk.AddedToken('<s>', true, { normalized: false }),
    new tk.AddedToken('<pad>', true, { normalized: false }),
    new tk.AddedToken('</s>', true, { normalized: false }),
    new tk.AddedToken('<unk>', true, { normalized: false }),
    new tk.AddedToken('<mask>', true, { leftStrip: true, normalized: false }),
  ]);
  save(t, 'roberta');
}

// Unigram as xlm-roberta-base ships it (fairseq ids: <s> <pad> </s> <unk>,
// the SentencePiece pieces shifted by one, <mask> last), normalised by the
// SentencePiece model's own precompiled charsmap.
function xlmr() {
  const spmDump = JSON.parse(fs.readFileSync(path.join(spmDir, 'unigram-nmt.pieces.json'), 'utf8'));
  const vocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0]];
  for (const [piece, score] of spmDump.pieces.slice(3)) vocab.push([piece, score]);
  vocab.push(['<mask>', 0]);
  const t = new tk.Tokenizer(tk.Unigram.init(vocab, { unkId: 3, byteFallback: false }));
  const charsmap = Array.from(Buffer.from(spmDump.precompiled_charsmap, 'base64'));
  t.setNormalizer(tk.sequenceNormalizer([tk.precompiled(charsmap), tk.replace('  ', ' ')]));
  t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true));
  t.setPostProcessor(tk.templateProcessing('<s> $A </s>', '<s> $A </s> </s> $B </s>', [['<s>', 0], ['</s>', 2]]));
  t.addAddedTokens([
    new tk.AddedToken('<s>', true, { normalized: false }),
    new tk.AddedToken('<pad>', true, { normalized: false }),
    new tk.AddedToken('</s>', true, { normalized: false }),
    new tk.AddedToken('<unk>', true, { normalized: false }),
    new tk.AddedToken('<mask>', true, { leftStrip: true, normalized: false }),
  ]);
  save(t, 'xlmr');
  // The published file collapses runs of spaces with a regular expression,
  // which the constructor cannot express; the library reads it back.
  edit('xlmr', (j) => {
    j.normalizer.normalizers[1].pattern = { Regex: ' {2,}' };
  });
}

// Unigram with byte fallback (pieces <0x00>..<0xFF>), no charsmap, as the
// SentencePiece byte-fallback models convert; </s> closes each sequence.
function unigramBytes() {
  const spmDump = JSON.parse(fs.readFileSync(path.join(spmDir, 'unigram-bytes.pieces.json'), 'utf8'));
  const vocab = spmDump.pieces.map(([piece, score]) => [piece, score]);
  const t = new tk.Tokenizer(tk.Unigram.init(vocab, { unkId: 0, byteFallback: true }));
  t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'first', true));
  t.setPostProcessor(tk.templateProcessing('$A </s>', '$A </s> $B:1 </s>:1', [['</s>', 2]]));
  t.addAddedTokens(['<unk>', '<s>', '</s>'].map((s) => new tk.AddedToken(s, true, { normalized: false })));
  save(t, 'unigram-bytes');
}

bert();
roberta();
xlmr();
unigramBytes();
