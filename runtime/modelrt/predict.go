package modelrt

import "math"

// Prediction is a classifier's answer for one text.
type Prediction struct {
	Label string    // the most probable label (config.json id2label)
	Index int       // its class index
	Score float32   // its probability
	Probs []float32 // every class's probability, by index
}

// Predict turns one row of logits into a Prediction: probabilities by a
// softmax computed in float64 (softmax64), the label the argmax (the
// first on a tie). labels[i] names class i.
func Predict(logits []float32, labels []string) Prediction {
	p := Prediction{Probs: make([]float32, len(logits))}
	if len(logits) == 0 {
		return p
	}
	for i, x := range logits {
		if x > logits[p.Index] {
			p.Index = i
		}
	}
	for i, e := range softmax64(logits) {
		p.Probs[i] = float32(e)
	}
	p.Score = p.Probs[p.Index]
	if p.Index < len(labels) {
		p.Label = labels[p.Index]
	}
	return p
}

// MeanPool returns the mean of the rows of hidden (len(mask) rows of
// width values) whose mask entry is non-zero, summed in float64 in row
// order: the sentence embedding of sentence-transformers' mean pooling.
// mask nil means every row; no selected row gives zeros.
func MeanPool(hidden []float32, width int, mask []int64) []float32 {
	rows := len(hidden) / width
	sum := make([]float64, width)
	n := 0
	for r := range rows {
		if mask != nil && (r >= len(mask) || mask[r] == 0) {
			continue
		}
		n++
		for j, x := range hidden[r*width : (r+1)*width] {
			sum[j] += float64(x)
		}
	}
	out := make([]float32, width)
	if n == 0 {
		return out
	}
	for j, s := range sum {
		out[j] = float32(s / float64(n))
	}
	return out
}

// Bool returns a pointer to v, for optional settings in generated
// literals (tokenizer.Options.StripAccents).
func Bool(v bool) *bool { return &v }

// softmax64 is the softmax of logits in float64, max-subtracted: the
// probabilities of Predict, of the word-level aggregations and of
// question answering's starts and ends.
func softmax64(logits []float32) []float64 {
	p := make([]float64, len(logits))
	top := math.Inf(-1)
	for _, x := range logits {
		top = math.Max(top, float64(x))
	}
	var sum float64
	for i, x := range logits {
		p[i] = math.Exp(float64(x) - top)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}
