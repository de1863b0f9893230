// Package tokenizer turns text into the input_ids, attention_mask and
// token_type_ids an encoder takes, for the Go packages sqc generates and
// for the sqc CLI, id for id as the reference tokenizers do. It reads
// four kinds of files:
//
//   - tokenizer.json (FromTokenizerJSON): the HuggingFace tokenizers
//     library's pipeline, matched against that library;
//   - vocab.txt (FromVocabFile, FromVocab): transformers' BertTokenizer;
//   - sentencepiece.bpe.model, spiece.model and spm.model (FromSentencePieceFile):
//     SentencePiece unigram models as transformers' slow tokenizers use
//     them, matched against the SentencePiece library;
//   - vocab.json and merges.txt: GPT-2's byte-level BPE as RobertaTokenizer
//     and DebertaTokenizer (DeBERTa v1) save it, converted to the
//     tokenizer.json transformers' convert_slow_tokenizer makes of it, as
//     is an ALBERT checkpoint's spiece.model (AlbertConverter's pipeline).
//
// Load picks them in that order of preference from a model directory.
//
// # tokenizer.json
//
// The pipeline runs as in the tokenizers library:
//
//  1. Added tokens with normalized=false are found in the raw text,
//     leftmost-longest, honouring single_word, lstrip and rstrip; they are
//     never split or normalised.
//  2. The normalizer rewrites each stretch between them: BertNormalizer,
//     NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Replace (a string or
//     an RE2-compatible regular expression), Strip, Prepend, ByteLevel,
//     Precompiled (a SentencePiece charsmap, applied per grapheme cluster
//     as the library does), or a Sequence of them. Added tokens with
//     normalized=true are then found in the normalised text.
//  3. The pre-tokenizer splits it into words: BertPreTokenizer, ByteLevel
//     (GPT-2's pattern, hand-written, with add_prefix_space and use_regex),
//     Metaspace (prepend_scheme always, first or never; the older
//     add_prefix_space field too), Whitespace, WhitespaceSplit, Split (a
//     string or an RE2-compatible regular expression, every behaviour,
//     invert), Punctuation, Digits, CharDelimiterSplit, or a Sequence.
//  4. The model maps each word to ids: WordPiece; BPE (merges written as
//     ["a", "b"] pairs or as the older "a b" strings, continuing prefix,
//     end-of-word suffix, unk_token with fuse_unk, byte_fallback,
//     ignore_merges); Unigram (the Viterbi path over piece scores, unknown
//     characters scored min_score - 10 and fused, byte_fallback to
//     <0xXX>); WordLevel.
//  5. The post-processor adds the special tokens and token types:
//     BertProcessing, RobertaProcessing (<s> A </s> </s> B </s>, all type
//     0), TemplateProcessing, ByteLevel (no tokens), a Sequence of them, or
//     none (A, then B with type 1).
//  6. Truncation is the file's (LongestFirst, OnlyFirst or OnlySecond,
//     Right or Left), else 512 tokens LongestFirst, computed as the
//     library does: the shorter sequence keeps its tokens if the longer
//     can take the rest, otherwise each gets half and the odd token goes to
//     the longer one (to the second on a tie). Where the library refuses to
//     encode (OnlyFirst or OnlySecond cannot fit, OnlySecond on a single
//     text), this package truncates LongestFirst instead.
//
// Any other component, a BPE dropout, a regular expression RE2 cannot
// compile (look-around, backreferences) or a Unigram model without unk_id
// is an error naming the component and the file: nothing is silently
// tokenized differently. Character classes come from Go's Unicode tables
// (15.0), which may differ from the library's for characters assigned in
// recent Unicode versions.
//
// # vocab.txt
//
// BertTokenizer's pipeline, per input text:
//
//  1. Special tokens ([CLS], [SEP], [PAD], [UNK], [MASK]) are matched
//     verbatim, leftmost-longest, in the raw text.
//  2. Clean text: drop U+0000, U+FFFD and Unicode category C* (control,
//     format, private use, unassigned) except tab, newline and CR; map
//     whitespace to a space. Invalid UTF-8 bytes decode to U+FFFD and so
//     are dropped too.
//  3. Put spaces around CJK ideographs (the tokenize_chinese_chars ranges).
//  4. Lowercase (uncased vocabularies), then strip accents: NFD, drop Mn.
//  5. Split on whitespace, then split off every punctuation character
//     (ASCII 33-47, 58-64, 91-96, 123-126, and Unicode P*) as its own word.
//  6. WordPiece: greedy longest-match-first against the vocabulary, "##"
//     before every piece but the first; a word of more than 100 characters,
//     or one that cannot be covered, becomes a single [UNK].
//  7. The template [CLS] A [SEP] (B [SEP]) with token type 0 for A and 1
//     for B, truncation to MaxLength (the final [SEP] is kept; pairs lose
//     tokens longest-first, from B on a tie, as transformers' loop does),
//     and optional right padding with [PAD].
//
// Lowercasing is per character (U+0130 becomes "i" + U+0307, as in
// Python). Known differences from transformers, none of which touch
// uncased text in Unicode 14: characters new in a later Unicode edition
// than Python's are kept here where Python drops them as unassigned;
// recent transformers versions NFC-normalise text in BasicTokenizer, which
// changes cased (non-accent-stripping) output on decomposed input, and
// this package does not. The tokenizers library's BertNormalizer differs
// from BertTokenizer in keeping unassigned code points, and tokenizer.json
// files follow the library.
//
// # SentencePiece models
//
// The model's normaliser (its precompiled charsmap with the longest match
// at each position, leading, trailing and repeated spaces removed, a dummy
// prefix, spaces as U+2581) and the unigram Viterbi search with the
// library's mixed float/double arithmetic, so near-ties fall the same way.
// sentencepiece.bpe.model gets XLM-RoBERTa's fairseq ids (<s> <pad> </s>
// <unk>, the pieces shifted by one, <mask> last, <mask> taking the space
// before it) and <s> A </s> (</s> B </s>); spm.model keeps the model's ids
// with DeBERTa-v2/v3's [CLS] A [SEP] (B [SEP], type id 1), [MASK] after
// the pieces; other names keep the model's ids with T5's A </s> (B </s>). Pairs truncate as transformers' loop does.
// Unigram models only; user-defined pieces are refused.
//
// # Offsets
//
// EncodeWithOffsets and EncodePairWithOffsets also give each token's span
// in its text as UTF-8 byte offsets (Offset; CharOffsets converts to the
// code points the library's Python and Node bindings report). They follow
// the library's NormalizedString alignments through every normalizer,
// pre-tokenizer and model, special tokens get {0, 0}, and byte-level
// post-processors trim spaces in whole characters, as the bindings do (the
// Rust API trims bytes and can end inside a character). Encode does not
// compute them, so the ids path costs nothing for them. SentencePiece
// model files get the SentencePiece library's spans instead (Offset says
// how they differ).
//
// # Verification
//
// The tests compare with the tokenizers library (its npm build, installed
// in oracle/ by `npm ci`) and with SentencePiece (python3-sentencepiece)
// on a generated corpus of SST-2 sentences and synthetic texts across
// scripts, emoji, controls, odd whitespace and very long words, singly and
// in pairs, ids and offsets; oracle/build.sh rebuilds the tokenizer files
// they use.
//
// A Tokenizer is immutable and safe for concurrent use. The package
// imports only the standard library and golang.org/x/text, so generated
// model packages can depend on it cheaply.
package tokenizer
