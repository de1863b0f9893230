// Package tokenizer is a BERT WordPiece tokenizer with the semantics of
// HuggingFace's BertTokenizer, for the Go packages sqc generates and for the
// sqc CLI. It turns text into the input_ids, attention_mask and
// token_type_ids an encoder takes, id for id as `transformers` does (up to
// the known differences listed below).
//
// The pipeline, per input text:
//
//  1. Special tokens ([CLS], [SEP], [PAD], [UNK], [MASK], and any added
//     tokens from tokenizer.json) are matched verbatim, leftmost-longest,
//     in the raw text; they are never split or normalised.
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
//     tokens longest-first), and optional right padding with [PAD].
//
// Lowercasing is per character (U+0130 becomes "i" + U+0307, as in
// Python), as transformers does it in PreTrainedTokenizer.tokenize before
// BasicTokenizer runs.
//
// Known differences from transformers, none of which touch uncased text
// in Unicode 14: character categories come from Go's Unicode tables
// (15.0), so characters new in a later edition than the Python one are
// kept here where Python drops them as unassigned; recent transformers
// versions NFC-normalise text in BasicTokenizer, which changes cased
// (non-accent-stripping) output on decomposed input, and this package, like
// the tokenizers library, does not; pair truncation breaks ties as the
// Python loop does, where the tokenizers library can give the one token of
// difference to the other sequence.
//
// A Tokenizer is immutable and safe for concurrent use. The package imports only the standard library and
// golang.org/x/text, so generated model packages can depend on it cheaply.
package tokenizer
