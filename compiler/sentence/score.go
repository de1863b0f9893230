package sentence

import (
	"fmt"
	"path/filepath"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// Problem types of config.json (transformers' problem_type).
const (
	MultiLabel   = "multi_label_classification"
	SingleLabel  = "single_label_classification"
	Regression   = "regression"
	problemTypes = MultiLabel + ", " + SingleLabel + ", " + Regression
)

// Scoring says how a sequence classifier's logits become scores.
type Scoring struct {
	// Activation applies to each logit; "" means none: a single-label
	// classifier, whose logits go through a softmax (modelrt.Predict).
	Activation modelrt.Activation
	// Why names the setting that chose it, for messages.
	Why string
}

// ScoreActivation reads how the classifier in dir (config.json, with
// numLabels outputs) is scored, as sentence-transformers' CrossEncoder and
// transformers do: an explicit CrossEncoder activation
// ("sentence_transformers": {"activation_fn": ...}, or the older
// "sbert_ce_default_activation_function"), else a sigmoid for
// problem_type multi_label_classification or for a single logit (the
// CrossEncoder default), the identity for a regression of several
// outputs, else none.
func ScoreActivation(dir string, numLabels int) (Scoring, error) {
	path := filepath.Join(dir, hf.ConfigFile)
	var raw struct {
		ProblemType *string `json:"problem_type"`
		ST          *struct {
			ActivationFn *string `json:"activation_fn"`
		} `json:"sentence_transformers"`
		OldActivation *string `json:"sbert_ce_default_activation_function"`
	}
	if _, err := readJSON(path, &raw); err != nil {
		return Scoring{}, err
	}
	explicit := func(key, class string) (Scoring, error) {
		a, err := parseActivation(path, key, class)
		return Scoring{Activation: a, Why: key + " " + class}, err
	}
	switch {
	case raw.ST != nil && raw.ST.ActivationFn != nil:
		return explicit("sentence_transformers.activation_fn", *raw.ST.ActivationFn)
	case raw.OldActivation != nil:
		return explicit("sbert_ce_default_activation_function", *raw.OldActivation)
	}
	problem := ""
	if raw.ProblemType != nil {
		problem = *raw.ProblemType
	}
	switch problem {
	case MultiLabel:
		return Scoring{Activation: modelrt.ActSigmoid, Why: "problem_type " + MultiLabel}, nil
	case SingleLabel, Regression, "":
		// transformers records regression for any single-logit model it
		// trained; CrossEncoder scores one logit with a sigmoid whatever
		// the problem type.
		switch {
		case numLabels == 1:
			return Scoring{Activation: modelrt.ActSigmoid, Why: "a single logit (the cross-encoder default)"}, nil
		case problem == Regression:
			return Scoring{Activation: modelrt.ActIdentity, Why: "problem_type " + Regression}, nil
		}
		return Scoring{}, nil
	}
	return Scoring{}, compiler.BadInput(path, "problem_type", fmt.Errorf("%w: %q; want one of %s", compiler.ErrUnknownModel, problem, problemTypes))
}
