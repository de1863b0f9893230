package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// tokenizeCommand prints the encoder inputs of texts: one JSON object per
// input, in order, special tokens added, no padding. It is how the ids sqc
// feeds a model are checked against another tokenizer.
func tokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "tokenize",
		Usage: "print the input_ids, attention_mask and token_type_ids of texts",
		Description: "--texts is one text per line (with --pairs, two tab-separated columns), or a .jsonl file of\n" +
			"{\"text\": ..., \"text_pair\": ...} objects. With --model, the tokenizer is the one sqc run uses for\n" +
			"that model; --tokenizer takes a tokenizer.json, a SentencePiece .model or a vocab.txt (lowercased).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "model `DIR` (or file) whose tokenizer to use"},
			&cli.StringFlag{Name: "tokenizer", Usage: "tokenizer `FILE`: tokenizer.json, *.model or vocab.txt"},
			&cli.StringFlag{Name: "texts", Usage: "input `FILE`: one text per line, or .jsonl", Required: true},
			&cli.BoolFlag{Name: "pairs", Usage: "plain-text lines are two tab-separated texts"},
			&cli.BoolFlag{Name: "offsets", Usage: "add \"offsets\": [[start, end], ...], each token's UTF-8 byte span in its own text ([0, 0] for special tokens)"},
		},
		Action: func(c *cli.Context) error {
			model, file := c.String("model"), c.String("tokenizer")
			if (model == "") == (file == "") {
				return usageError{"tokenize needs one of --model DIR or --tokenizer FILE"}
			}
			inputs, err := readTokenizeInputs(c.String("texts"), c.Bool("pairs"))
			if err != nil {
				return err
			}
			var tok *tokenizer.Tokenizer
			if model != "" {
				tok, err = loadTokenizer(model, "")
			} else {
				tok, err = loadTokenizer("", file)
			}
			if err != nil {
				return err
			}
			return writeEncodings(c.App.Writer, tok, inputs, c.Bool("offsets"))
		},
	}
}

// tokenizeInput is a text, or a pair when pair is set.
type tokenizeInput struct {
	text, pair string
	isPair     bool
}

// readTokenizeInputs reads --texts. A final newline ends the last line
// rather than starting an empty one; every other line is an input, blank
// ones included.
func readTokenizeInputs(path string, pairs bool) ([]tokenizeInput, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", err)
	}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" && len(data) == 0 {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: no texts", compiler.ErrMalformed))
	}
	lines := strings.Split(text, "\n")
	jsonl := strings.EqualFold(filepath.Ext(path), ".jsonl")
	out := make([]tokenizeInput, 0, len(lines))
	for i, line := range lines {
		where := fmt.Sprintf("line %d", i+1)
		if jsonl {
			var obj struct {
				Text     *string `json:"text"`
				TextPair *string `json:"text_pair"`
			}
			dec := json.NewDecoder(strings.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&obj); err != nil {
				return nil, compiler.BadInput(path, where, fmt.Errorf("%w: want {\"text\": string, \"text_pair\": string}: %v", compiler.ErrMalformed, err))
			}
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return nil, compiler.BadInput(path, where, fmt.Errorf("%w: more than one JSON value", compiler.ErrMalformed))
			}
			if obj.Text == nil {
				return nil, compiler.BadInput(path, where, fmt.Errorf("%w: no \"text\"", compiler.ErrMalformed))
			}
			in := tokenizeInput{text: *obj.Text}
			if obj.TextPair != nil {
				in.pair, in.isPair = *obj.TextPair, true
			} else if pairs {
				return nil, compiler.BadInput(path, where, fmt.Errorf("%w: --pairs, but no \"text_pair\"", compiler.ErrMalformed))
			}
			out = append(out, in)
			continue
		}
		line = strings.TrimSuffix(line, "\r")
		if !pairs {
			out = append(out, tokenizeInput{text: line})
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 2 {
			return nil, compiler.BadInput(path, where, fmt.Errorf("%w: --pairs wants two tab-separated columns, have %d", compiler.ErrMalformed, len(cols)))
		}
		out = append(out, tokenizeInput{text: cols[0], pair: cols[1], isPair: true})
	}
	return out, nil
}

// writeEncodings prints one {"input_ids", "attention_mask",
// "token_type_ids"} line per input, with "offsets" (byte offsets, see
// tokenizer.Offset) when offsets is set.
func writeEncodings(w io.Writer, tok *tokenizer.Tokenizer, inputs []tokenizeInput, offsets bool) error {
	type line struct {
		InputIDs      []int64   `json:"input_ids"`
		AttentionMask []int64   `json:"attention_mask"`
		TokenTypeIDs  []int64   `json:"token_type_ids"`
		Offsets       *[][2]int `json:"offsets,omitempty"`
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, in := range inputs {
		var e tokenizer.Encoding
		switch {
		case in.isPair && offsets:
			e = tok.EncodePairWithOffsets(in.text, in.pair)
		case in.isPair:
			e = tok.EncodePair(in.text, in.pair)
		case offsets:
			e = tok.EncodeWithOffsets(in.text)
		default:
			e = tok.Encode(in.text)
		}
		l := line{InputIDs: e.InputIDs, AttentionMask: e.AttentionMask, TokenTypeIDs: e.TokenTypeIDs}
		if offsets {
			offs := make([][2]int, len(e.Offsets))
			for i, o := range e.Offsets {
				offs[i] = [2]int{o.Start, o.End}
			}
			l.Offsets = &offs
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return bw.Flush()
}
