// Package sentence reads what a sentence-transformers model folder adds to
// the HuggingFace checkpoint of its encoder: modules.json (the module
// chain: Transformer, then Pooling, Dense, Normalize), 1_Pooling/config.json
// (the pooling modes), each Dense module's config.json and
// model.safetensors, sentence_bert_config.json (max_seq_length) and
// config_sentence_transformers.json (prompts). The result is a
// runtime/modelrt.EmbeddingHead, data that `sqc run` and generated
// packages both apply to the encoder's last_hidden_state.
//
// It also reads the scoring convention of sequence classifiers used as
// cross-encoders and multi-label classifiers (ScoreActivation): which
// activation turns their logits into scores.
//
// Anything the format allows that sqc does not compute (other module
// types, Dense weights only in pytorch_model.bin, do_lower_case) is an
// error naming the file and the setting, never a silently different
// embedding.
package sentence
