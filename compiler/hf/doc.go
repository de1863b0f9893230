// Package hf is sqc's HuggingFace frontend: it turns a `transformers` model
// folder (config.json + model.safetensors) into the compiler IR.
//
// The graph it builds is the one compiler/onnx builds from the same model's
// torch.onnx export: the same graph inputs (input_ids, attention_mask and,
// for BERT and ELECTRA, token_type_ids; int64 [batch, sequence]), the same outputs
// ("logits" for *ForSequenceClassification, "last_hidden_state" and, for
// BertModel and RobertaModel, "pooler_output" for base models) and the
// same function, made
// of standard ONNX ops at opset 17. Attention and masking follow the eager
// `transformers` code exactly, so FP32 results agree with PyTorch to float
// rounding.
//
// Supported: model_type bert (BertModel, BertForSequenceClassification),
// distilbert (DistilBertModel, DistilBertForSequenceClassification),
// roberta (RobertaModel, RobertaForSequenceClassification), xlm-roberta
// (XLMRobertaModel, XLMRobertaForSequenceClassification), camembert
// (CamembertModel, CamembertForSequenceClassification: RoBERTa's code) and
// electra (ElectraModel, ElectraForSequenceClassification: BERT's encoder
// behind embeddings of embedding_size, projected to the hidden size where
// the two differ; no pooler; a dense + GELU + out_proj head on the first
// token) and mpnet (MPNetModel, MPNetForSequenceClassification: RoBERTa's
// position ids and head, no token types, and a relative position bias
// from 32 buckets added to every layer's scores before the mask) and
// albert (AlbertModel, AlbertForSequenceClassification: BERT's layer run
// num_hidden_layers times through shared layer groups, behind embeddings
// of embedding_size always projected to the hidden size; BERT's pooler),
// with
// parameters stored with or without the
// "bert."/"distilbert."/"roberta."/"electra."/"mpnet."/"albert." prefix, as
// F32, F16, BF16 or F64 (the last three are converted to float32). The
// RoBERTa family has no token_type_ids input (its one token type is row 0)
// and computes position ids from input_ids as `transformers` does:
// padding_idx + the count of non-pad tokens so far, padding_idx for pads.
// The FFN activation is config.json's hidden_act / activation: gelu (erf),
// gelu_new and gelu_pytorch_tanh (tanh form), relu.
//
// Build makes the same graph from a Config and any WeightSource, so
// benchmarks can build real-shaped models from RandomWeights without files.
package hf
