package dataio

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Pair is one line of a sentence-pair file: a .tsv whose header names the
// columns sentence1 and sentence2 (GLUE's STS-B, MRPC and RTE layout; for
// a reranker, query and document; for a question answering model, SQuAD's
// question and context), optionally a gold `score` (or
// `label`) column.
type Pair struct {
	A, B     string
	Score    float64
	HasScore bool
	Line     int // 1-based line number in the file
}

// pairColumns are the header names of the two texts, by convention.
var pairColumns = [][2]string{{"sentence1", "sentence2"}, {"query", "document"}, {"question", "context"}}

// pairHeader returns the columns of the texts and of the score (-1 when
// absent) in a .tsv header, and whether it is a pair file.
func pairHeader(header string) (a, b, score int, ok bool) {
	cols := strings.Split(header, "\t")
	find := func(name string) int {
		for i, c := range cols {
			if strings.TrimSpace(c) == name {
				return i
			}
		}
		return -1
	}
	for _, names := range pairColumns {
		if a, b = find(names[0]), find(names[1]); a >= 0 && b >= 0 {
			score = find("score")
			if score < 0 {
				score = find("label")
			}
			return a, b, score, true
		}
	}
	return -1, -1, -1, false
}

// IsPairFile reports whether path is a .tsv of sentence pairs (its header
// names sentence1 and sentence2, query and document, or question and
// context).
func IsPairFile(path string) bool {
	if !strings.EqualFold(strings.TrimPrefix(extension(path), "."), "tsv") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	if !sc.Scan() {
		return false
	}
	_, _, _, ok := pairHeader(strings.TrimRight(sc.Text(), "\r"))
	return ok
}

func extension(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 && !strings.ContainsRune(path[i:], '/') {
		return path[i:]
	}
	return ""
}

// ReadPairs reads a sentence-pair .tsv (see Pair). A score that is not a
// finite number is an error; blank lines are skipped.
func ReadPairs(path string) ([]Pair, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var out []Pair
	ca, cb, cs := -1, -1, -1
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			var ok bool
			if ca, cb, cs, ok = pairHeader(text); !ok {
				return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line 1: header %q names neither sentence1 and sentence2, query and document, nor question and context", compiler.ErrMalformed, text))
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		cols := strings.Split(text, "\t")
		if need := max(ca, cb, cs) + 1; len(cols) < need {
			return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: %d columns, the header has at least %d", compiler.ErrMalformed, line, len(cols), need))
		}
		p := Pair{A: cols[ca], B: cols[cb], Line: line}
		if cs >= 0 {
			v, err := strconv.ParseFloat(strings.TrimSpace(cols[cs]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, compiler.BadInput(path, "", fmt.Errorf("%w: line %d: score %q is not a finite number", compiler.ErrMalformed, line, cols[cs]))
			}
			p.Score, p.HasScore = v, true
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, compiler.BadInput(path, "", fmt.Errorf("line %d: %w", line+1, err))
	}
	if len(out) == 0 {
		return nil, compiler.BadInput(path, "", errors.New("no pairs in file"))
	}
	return out, nil
}
