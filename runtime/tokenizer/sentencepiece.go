package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// SentencePiece piece types (sentencepiece_model.proto).
const (
	spNormal      = 1
	spUnknown     = 2
	spControl     = 3
	spUserDefined = 4
	spUnused      = 5
	spByte        = 6
)

// spModel is what this package reads of a SentencePiece ModelProto.
type spModel struct {
	pieces []string
	scores []float64
	types  []int

	modelType    int // 1 unigram, 2 BPE, 3 word, 4 char
	byteFallback bool
	unkID        int

	charsmap        []byte
	addDummyPrefix  bool
	removeExtraWS   bool
	escapeSpaces    bool
	normalizerName  string
	treatWSAsSuffix bool
}

func parseSentencePiece(data []byte) (*spModel, error) {
	m := &spModel{modelType: 1, addDummyPrefix: true, removeExtraWS: true, escapeSpaces: true}
	r := protoReader{data}
	for {
		f, ok, err := r.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch {
		case f.num == 1 && f.wire == 2: // SentencePiece
			piece, score, typ := "", 0.0, spNormal
			pr := protoReader{f.bytes}
			for {
				g, ok, err := pr.next()
				if err != nil {
					return nil, err
				}
				if !ok {
					break
				}
				switch {
				case g.num == 1 && g.wire == 2:
					piece = string(g.bytes)
				case g.num == 2 && g.wire == 5:
					score = float64(g.float32())
				case g.num == 3 && g.wire == 0:
					typ = int(g.value)
				}
			}
			if !utf8.ValidString(piece) {
				return nil, fmt.Errorf("piece %d is not valid UTF-8", len(m.pieces))
			}
			m.pieces = append(m.pieces, piece)
			m.scores = append(m.scores, score)
			m.types = append(m.types, typ)
		case f.num == 2 && f.wire == 2: // TrainerSpec
			tr := protoReader{f.bytes}
			for {
				g, ok, err := tr.next()
				if err != nil {
					return nil, err
				}
				if !ok {
					break
				}
				switch {
				case g.num == 3 && g.wire == 0:
					m.modelType = int(g.value)
				case g.num == 35 && g.wire == 0:
					m.byteFallback = g.value != 0
				case g.num == 24 && g.wire == 0:
					m.treatWSAsSuffix = g.value != 0
				}
			}
		case f.num == 3 && f.wire == 2: // NormalizerSpec
			nr := protoReader{f.bytes}
			for {
				g, ok, err := nr.next()
				if err != nil {
					return nil, err
				}
				if !ok {
					break
				}
				switch {
				case g.num == 1 && g.wire == 2:
					m.normalizerName = string(g.bytes)
				case g.num == 2 && g.wire == 2:
					m.charsmap = g.bytes
				case g.num == 3 && g.wire == 0:
					m.addDummyPrefix = g.value != 0
				case g.num == 4 && g.wire == 0:
					m.removeExtraWS = g.value != 0
				case g.num == 5 && g.wire == 0:
					m.escapeSpaces = g.value != 0
				}
			}
		}
	}
	if len(m.pieces) == 0 {
		return nil, ErrEmptyVocab
	}
	m.unkID = -1
	for i, t := range m.types {
		if t == spUnknown {
			m.unkID = i
			break
		}
	}
	return m, nil
}

// FromSentencePieceFile builds a tokenizer from a SentencePiece model file,
// as transformers' slow tokenizers use it where no tokenizer.json exists:
// sentencepiece.bpe.model with XLM-RoBERTa's fairseq layout (<s> <pad>
// </s> <unk>, the pieces shifted by one, <mask> last; <s> A </s> and
// <s> A </s> </s> B </s>), spm.model with DeBERTa-v2/v3's (the model's
// own ids, [MASK] after them where it has none; [CLS] A [SEP] and
// [CLS] A [SEP] B [SEP], type id 1 from B on, as DebertaV2Tokenizer with
// its default do_lower_case false), any other name (spiece.model) with the
// model's own ids and T5's A </s> and A </s> B </s> (ALBERT-style models,
// with [CLS] and [SEP] pieces, are refused here; Load and LoadFile read
// an ALBERT checkpoint's spiece.model as AlbertConverter converts it, see
// albertSentencePieceJSON). Text runs through the model's
// normaliser (its precompiled charsmap, longest match first, whitespace
// handling and dummy prefix) and the unigram Viterbi search, as the
// SentencePiece library does; pairs are truncated as transformers does
// (the Python loop), since its slow tokenizers are what read these files.
// Unigram models only.
func FromSentencePieceFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput(path, "", err)
	}
	m, err := parseSentencePiece(data)
	if err != nil {
		return nil, inFile(path, malformed("", "%v", err))
	}
	t, err := newSentencePiece(m, spLayoutOf(filepath.Base(path)))
	if err != nil {
		return nil, inFile(path, err)
	}
	return t, nil
}

// spLayout is how a SentencePiece file's ids and special tokens are laid
// out, which transformers decides by the tokenizer class and sqc by the
// file's name.
type spLayout int

const (
	spLayoutT5      spLayout = iota // spiece.model and any other name
	spLayoutFairseq                 // sentencepiece.bpe.model: XLM-RoBERTa, CamemBERT
	spLayoutDeBERTa                 // spm.model: DeBERTa-v2 and v3
)

// spTemplate sets t's templates and padding id for a layout other than
// fairseq's, with special giving a piece's id (-1: none).
func spTemplate(t *Tokenizer, layout spLayout, special func(string) int32) error {
	if layout == spLayoutDeBERTa {
		cls, sep := special("[CLS]"), special("[SEP]")
		switch {
		case cls < 0:
			return badInput("", `"[CLS]"`, ErrMissingToken)
		case sep < 0:
			return badInput("", `"[SEP]"`, ErrMissingToken)
		}
		t.single = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}}}
		t.pair = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}},
			{seq: 1, typeID: 1}, {seq: seqSpecial, ids: []int32{sep}, typeID: 1}}
		if id := special("[PAD]"); id >= 0 {
			t.pad = id
		}
		return nil
	}
	// ALBERT's spiece.model has [CLS] and [SEP]: its slow tokenizer
	// lowercases and uses BERT's template, which is not this layout.
	if special("[CLS]") >= 0 && special("[SEP]") >= 0 {
		return unsupported("pieces", "[CLS] and [SEP] pieces (an ALBERT-style model): only the T5 layout is supported for spiece.model "+
			"(DeBERTa's is read from a file named spm.model); use the model's tokenizer.json")
	}
	eos := special("</s>")
	if eos < 0 {
		return badInput("", `"</s>"`, ErrMissingToken)
	}
	t.single = template{{seq: 0}, {seq: seqSpecial, ids: []int32{eos}}}
	t.pair = template{{seq: 0}, {seq: seqSpecial, ids: []int32{eos}}, {seq: 1}, {seq: seqSpecial, ids: []int32{eos}}}
	if id := special("<pad>"); id >= 0 {
		t.pad = id
	}
	return nil
}

// spLayoutOf is the layout of a SentencePiece file of the given base name.
func spLayoutOf(name string) spLayout {
	switch name {
	case "sentencepiece.bpe.model":
		return spLayoutFairseq
	case "spm.model":
		return spLayoutDeBERTa
	}
	return spLayoutT5
}

func newSentencePiece(m *spModel, layout spLayout) (*Tokenizer, error) {
	fairseq := layout == spLayoutFairseq
	if m.modelType != 1 {
		names := map[int]string{2: "BPE", 3: "word", 4: "char"}
		return nil, unsupported("trainer_spec.model_type", "%s (%d): only unigram SentencePiece models are supported", names[m.modelType], m.modelType)
	}
	if m.treatWSAsSuffix {
		return nil, unsupported("trainer_spec.treat_whitespace_as_suffix", "not supported")
	}
	if m.unkID < 0 {
		return nil, malformed("pieces", "no piece of type UNKNOWN")
	}
	for i, t := range m.types {
		if t == spUserDefined {
			return nil, unsupported(fmt.Sprintf("pieces[%d] %q", i, m.pieces[i]), "user-defined pieces are not supported")
		}
	}
	// Lay out ids: the model's, or fairseq's.
	tokens, scores, types := m.pieces, m.scores, m.types
	unk := int32(m.unkID)
	if fairseq {
		if len(m.pieces) < 3 {
			return nil, malformed("pieces", "%d pieces: the fairseq layout needs <unk> <s> </s> first", len(m.pieces))
		}
		tokens = append([]string{"<s>", "<pad>", "</s>", "<unk>"}, m.pieces[3:]...)
		tokens = append(tokens, "<mask>")
		scores = append(append([]float64{0, 0, 0, 0}, m.scores[3:]...), 0)
		types = append(append([]int{spControl, spControl, spControl, spUnknown}, m.types[3:]...), spControl)
		unk = 3
	}
	// Only normal pieces are matched in text; control, unknown, byte and
	// unused ones are reached by id only.
	match := make([]string, len(tokens))
	for i, tp := range types {
		if tp == spNormal {
			match[i] = tokens[i]
		}
	}
	u := newUnigram(match, scores, unk, m.byteFallback)
	full := make(map[string]int32, len(tokens))
	for i, tok := range tokens {
		full[tok] = int32(i)
	}
	u.byteIDs = byteTokenIDs(full)
	u.float32 = true
	u.spByteSpans = true
	u.unkScore = float64(float32(u.unkScore))

	norm := &spNormalizer{addDummyPrefix: m.addDummyPrefix, removeExtraWS: m.removeExtraWS, escapeSpaces: m.escapeSpaces}
	if len(m.charsmap) > 0 {
		p, err := parsePrecompiledBytes(m.charsmap)
		if err != nil {
			return nil, malformed("normalizer_spec.precompiled_charsmap", "%v", err)
		}
		norm.charsmap = p
	}
	t := &Tokenizer{tokens: tokens, added: map[string]int32{}, vocab: full,
		pipe: &pipeline{norm: norm, model: u}}
	special := func(s string) int32 {
		id, ok := full[s]
		if !ok {
			return -1
		}
		return id
	}
	var raw []addedToken
	if fairseq {
		for _, s := range []string{"<s>", "<pad>", "</s>", "<unk>", "<mask>"} {
			raw = append(raw, addedToken{content: s, id: special(s), lstrip: s == "<mask>"})
		}
		cls, sep := special("<s>"), special("</s>")
		t.single = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}}}
		t.pair = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep, sep}}, {seq: 1}, {seq: seqSpecial, ids: []int32{sep}}}
		t.pad = special("<pad>")
	} else {
		for i, tp := range types {
			if tp == spControl || tp == spUnknown {
				raw = append(raw, addedToken{content: tokens[i], id: int32(i)})
			}
		}
		if err := spTemplate(t, layout, special); err != nil {
			return nil, err
		}
		if layout == spLayoutDeBERTa && special("[MASK]") < 0 {
			// DebertaV2Tokenizer adds its mask token after the model's
			// pieces.
			raw = append(raw, addedToken{content: "[MASK]", id: int32(len(t.tokens))})
			t.tokens = append(t.tokens, "[MASK]")
			t.vocab["[MASK]"] = int32(len(t.tokens) - 1)
		}
	}
	var kept []addedToken
	for _, a := range raw {
		if a.id >= 0 && a.content != "" {
			kept = append(kept, a)
			t.added[a.content] = a.id
		}
	}
	t.raw, t.normed = newMatcher(kept), newMatcher(nil)
	if err := t.setMaxLength(0); err != nil {
		return nil, err
	}
	return t, nil
}

// spNormalizer is SentencePiece's own normaliser: the charsmap rule with
// the longest match at each position (not the tokenizers library's
// per-grapheme reading), leading, trailing and repeated spaces removed,
// a dummy space prefix, and spaces written as U+2581.
type spNormalizer struct {
	charsmap                                    *precompiledNorm // nil: identity
	addDummyPrefix, removeExtraWS, escapeSpaces bool
}

const spSpace = "\u2581"

// prefix normalises the start of s: the replacement and the bytes used.
func (n *spNormalizer) prefix(s string) (string, int) {
	if n.charsmap != nil {
		if rep, l, ok := n.charsmap.longestMatch(s); ok {
			return rep, l
		}
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return "\uFFFD", 1
	}
	return s[:size], size
}

func (n *spNormalizer) normalize(s string) string {
	if n.removeExtraWS {
		for s != "" {
			rep, l := n.prefix(s)
			if rep != " " {
				break
			}
			s = s[l:]
		}
	}
	if s == "" {
		return ""
	}
	var b strings.Builder
	space := " "
	if n.escapeSpaces {
		space = spSpace
	}
	if n.addDummyPrefix {
		b.WriteString(space)
	}
	prevSpace := n.removeExtraWS
	for s != "" {
		rep, l := n.prefix(s)
		s = s[l:]
		if prevSpace {
			rep = strings.TrimLeft(rep, " ")
		}
		if rep == "" {
			continue
		}
		if n.escapeSpaces {
			b.WriteString(strings.ReplaceAll(rep, " ", spSpace))
		} else {
			b.WriteString(rep)
		}
		prevSpace = strings.HasSuffix(rep, " ")
	}
	out := b.String()
	if n.removeExtraWS {
		for strings.HasSuffix(out, space) {
			out = out[:len(out)-len(space)]
		}
	}
	return out
}
