package tokenizer

import (
	"encoding/json"
	"fmt"
)

// plainTemplates are the layouts without special tokens: A, and A then B
// with token type 1, as the library lays out encodings with no
// post-processor (or one that adds no tokens, such as ByteLevel).
func plainTemplates() (single, pair template) {
	return template{{seq: 0}}, template{{seq: 0}, {seq: 1, typeID: 1}}
}

// parsePostProcessor reads the post-processor: BertProcessing,
// RobertaProcessing, TemplateProcessing, ByteLevel (offsets only, so no
// tokens), a Sequence of them, or none.
func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	return t.parseProcessor("post_processor", raw)
}

func (t *Tokenizer) parseProcessor(object string, raw json.RawMessage) error {
	if isNull(raw) {
		t.single, t.pair = plainTemplates()
		return nil
	}
	var kind typed
	if err := json.Unmarshal(raw, &kind); err != nil {
		return malformed(object, "%v", err)
	}
	switch kind.Type {
	case "ByteLevel":
		t.single, t.pair = plainTemplates()
		return t.parseTrimOffsets(object, raw)
	case "Sequence":
		var p struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return malformed(object, "%v", err)
		}
		// Only one member may add tokens; ByteLevel members touch offsets.
		t.single, t.pair = plainTemplates()
		adders := 0
		for i, r := range p.Processors {
			var k typed
			if err := json.Unmarshal(r, &k); err != nil {
				return malformed(fmt.Sprintf("%s.processors[%d]", object, i), "%v", err)
			}
			if k.Type == "ByteLevel" {
				if err := t.parseTrimOffsets(fmt.Sprintf("%s.processors[%d]", object, i), r); err != nil {
					return err
				}
				continue
			}
			if adders++; adders > 1 {
				return unsupported(fmt.Sprintf("%s.processors[%d]", object, i), "more than one token-adding processor in a Sequence")
			}
			if err := t.parseProcessor(fmt.Sprintf("%s.processors[%d]", object, i), r); err != nil {
				return err
			}
		}
		return nil
	case "RobertaProcessing":
		var p struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return malformed(object, "%v", err)
		}
		cls, err := t.processorToken(object+".cls", p.Cls)
		if err != nil {
			return err
		}
		sep, err := t.processorToken(object+".sep", p.Sep)
		if err != nil {
			return err
		}
		if err := t.parseTrimOffsets(object, raw); err != nil {
			return err
		}
		// <s> A </s> </s> B </s>, every token type 0.
		t.single = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}}}
		t.pair = template{
			{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep, sep}},
			{seq: 1}, {seq: seqSpecial, ids: []int32{sep}},
		}
		return nil
	case "BertProcessing":
		var p struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return malformed(object, "%v", err)
		}
		cls, err := t.processorToken(object+".cls", p.Cls)
		if err != nil {
			return err
		}
		sep, err := t.processorToken(object+".sep", p.Sep)
		if err != nil {
			return err
		}
		t.single = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}}}
		t.pair = template{
			{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}},
			{seq: 1, typeID: 1}, {seq: seqSpecial, ids: []int32{sep}, typeID: 1},
		}
		return nil
	case "TemplateProcessing":
		var p struct {
			Single   []json.RawMessage `json:"single"`
			Pair     []json.RawMessage `json:"pair"`
			Specials map[string]struct {
				IDs []int `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return malformed(object, "%v", err)
		}
		specials := make(map[string][]int32, len(p.Specials))
		for name, s := range p.Specials {
			ids := make([]int32, len(s.IDs))
			for i, id := range s.IDs {
				if id < 0 || id >= len(t.tokens) {
					return malformed(object+".special_tokens."+name, "id %d is not a token id", id)
				}
				ids[i] = int32(id)
			}
			specials[name] = ids
		}
		var err error
		if t.single, err = parseTemplate(object+".single", p.Single, specials, 1); err != nil {
			return err
		}
		t.pair, err = parseTemplate(object+".pair", p.Pair, specials, 2)
		return err
	default:
		return unsupported(object+".type", "%q: want BertProcessing, RobertaProcessing, TemplateProcessing or ByteLevel", kind.Type)
	}
}

// processorToken reads a BertProcessing ["[CLS]", 101] pair.
func (t *Tokenizer) processorToken(object string, raw []json.RawMessage) (int32, error) {
	var id int
	if len(raw) != 2 || json.Unmarshal(raw[1], &id) != nil {
		return 0, malformed(object, "want [token, id]")
	}
	if id < 0 || id >= len(t.tokens) {
		return 0, malformed(object, "id %d is not a token id", id)
	}
	return int32(id), nil
}

// parseTemplate reads TemplateProcessing items: {"SpecialToken": {"id",
// "type_id"}} or {"Sequence": {"id": "A"|"B", "type_id"}}. A template for
// seqs sequences must hold A (and B when seqs is 2) exactly once.
func parseTemplate(object string, items []json.RawMessage, specials map[string][]int32, seqs int) (template, error) {
	var tp template
	count := [2]int{}
	for i, raw := range items {
		var it struct {
			Special *struct {
				ID     string `json:"id"`
				TypeID int64  `json:"type_id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID     string `json:"id"`
				TypeID int64  `json:"type_id"`
			} `json:"Sequence"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "%v", err)
		}
		switch {
		case it.Special != nil && it.Sequence == nil:
			ids, ok := specials[it.Special.ID]
			if !ok {
				return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "special token %q is not in special_tokens", it.Special.ID)
			}
			tp = append(tp, templateItem{seq: seqSpecial, ids: ids, typeID: it.Special.TypeID})
		case it.Sequence != nil && it.Special == nil:
			seq := map[string]int8{"A": 0, "B": 1}[it.Sequence.ID]
			if it.Sequence.ID != "A" && it.Sequence.ID != "B" || int(seq) >= seqs {
				return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "sequence %q", it.Sequence.ID)
			}
			count[seq]++
			tp = append(tp, templateItem{seq: seq, typeID: it.Sequence.TypeID})
		default:
			return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "want one of SpecialToken or Sequence")
		}
	}
	if count[0] != 1 || (seqs == 2 && count[1] != 1) {
		return nil, malformed(object, "want each sequence exactly once")
	}
	return tp, nil
}

// parseTrimOffsets reads the trim_offsets and add_prefix_space of a
// RobertaProcessing or ByteLevel post-processor (both true by default).
func (t *Tokenizer) parseTrimOffsets(object string, raw json.RawMessage) error {
	var p struct {
		TrimOffsets    *bool `json:"trim_offsets"`
		AddPrefixSpace *bool `json:"add_prefix_space"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return malformed(object, "%v", err)
	}
	t.trimOffsets = p.TrimOffsets == nil || *p.TrimOffsets
	t.trimPrefixSpace = p.AddPrefixSpace == nil || *p.AddPrefixSpace
	return nil
}
