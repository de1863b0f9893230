// Package dataio reads the input files the sqc CLI accepts: plain text with
// one input per line, a .tsv with a header row and a `sentence` column (and
// optionally `label`), and .jsonl files of pre-tokenized ids in the form
//
//	{"input_ids":[...], "attention_mask":[...], "token_type_ids":[...]}
//
// (the last two optional). Every error names the file and the line.
package dataio

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Example is one input line: a text (with its label when the file has one)
// or pre-tokenized ids.
type Example struct {
	Text     string
	Label    int // -1 when the file has no label column
	IDs      []int64
	Mask     []int64 // nil: all ones
	TypeIDs  []int64 // nil: all zeros
	Line     int     // 1-based line number in the file
	HasIDs   bool
	HasLabel bool
}

// maxLine bounds one input line (bytes); SST-2 lines are < 300 bytes, a
// token-id line of 512 ids ~ 4 KiB.
const maxLine = 16 << 20

// ReadTexts reads a .tsv (header with a `sentence` column, optional `label`)
// or a plain text file (one text per line; blank lines are skipped).
func ReadTexts(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	isTSV := strings.HasSuffix(strings.ToLower(path), ".tsv")
	sentenceCol, labelCol := -1, -1
	var out []Example
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if isTSV {
			cols := strings.Split(text, "\t")
			if line == 1 {
				for i, c := range cols {
					switch strings.TrimSpace(c) {
					case "sentence":
						sentenceCol = i
					case "label":
						labelCol = i
					}
				}
				if sentenceCol < 0 {
					return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line 1: no `sentence` column in header %q", compiler.ErrMalformed, text))
				}
				continue
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			if sentenceCol >= len(cols) {
				return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: %d columns, `sentence` is column %d", compiler.ErrMalformed, line, len(cols), sentenceCol+1))
			}
			ex := Example{Text: cols[sentenceCol], Label: -1, Line: line}
			if labelCol >= 0 && labelCol < len(cols) {
				if l, err := strconv.Atoi(strings.TrimSpace(cols[labelCol])); err == nil {
					ex.Label, ex.HasLabel = l, true
				}
			}
			out = append(out, ex)
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		out = append(out, Example{Text: text, Label: -1, Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, compiler.BadInput(path, "", fmt.Errorf("line %d: %w", line+1, err))
	}
	if len(out) == 0 {
		return nil, compiler.BadInput(path, "", errors.New("no inputs in file"))
	}
	return out, nil
}

type idsLine struct {
	InputIDs      []int64 `json:"input_ids"`
	AttentionMask []int64 `json:"attention_mask"`
	TokenTypeIDs  []int64 `json:"token_type_ids"`
	Label         *int    `json:"label"`
}

// ReadIDs reads a .jsonl file of pre-tokenized inputs.
func ReadIDs(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var out []Example
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var v idsLine
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: %v", compiler.ErrMalformed, line, err))
		}
		if len(v.InputIDs) == 0 {
			return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: empty or missing input_ids", compiler.ErrMalformed, line))
		}
		if v.AttentionMask != nil && len(v.AttentionMask) != len(v.InputIDs) {
			return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: attention_mask has %d entries, input_ids %d", compiler.ErrShapeMismatch, line, len(v.AttentionMask), len(v.InputIDs)))
		}
		if v.TokenTypeIDs != nil && len(v.TokenTypeIDs) != len(v.InputIDs) {
			return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: token_type_ids has %d entries, input_ids %d", compiler.ErrShapeMismatch, line, len(v.TokenTypeIDs), len(v.InputIDs)))
		}
		// Token ids index embedding tables; a negative one would be taken
		// from the end of the table (ONNX Gather's rule) and give a
		// plausible but meaningless result.
		for _, f := range []struct {
			name string
			vals []int64
		}{{"input_ids", v.InputIDs}, {"attention_mask", v.AttentionMask}, {"token_type_ids", v.TokenTypeIDs}} {
			if i := slices.IndexFunc(f.vals, func(x int64) bool { return x < 0 }); i >= 0 {
				return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: %s[%d] is %d, which is negative", compiler.ErrInvalidRequest, line, f.name, i, f.vals[i]))
			}
		}
		ex := Example{IDs: v.InputIDs, Mask: v.AttentionMask, TypeIDs: v.TokenTypeIDs, Line: line, HasIDs: true, Label: -1}
		if v.Label != nil {
			ex.Label, ex.HasLabel = *v.Label, true
		}
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		return nil, compiler.BadInput(path, "", fmt.Errorf("line %d: %w", line+1, err))
	}
	if len(out) == 0 {
		return nil, compiler.BadInput(path, "", errors.New("no inputs in file"))
	}
	return out, nil
}
