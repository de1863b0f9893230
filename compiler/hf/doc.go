// Package hf is sqc's HuggingFace frontend: it turns a `transformers` model
// folder (config.json + model.safetensors) into the compiler IR.
//
// The graph it builds is the one compiler/onnx builds from the same model's
// torch.onnx export: the same graph inputs (input_ids, attention_mask and,
// for BERT, token_type_ids; int64 [batch, sequence]), the same outputs
// ("logits" for *ForSequenceClassification, "last_hidden_state" and, for
// BertModel, "pooler_output" for base models) and the same function, made
// of standard ONNX ops at opset 17. Attention and masking follow the eager
// `transformers` code exactly, so FP32 results agree with PyTorch to float
// rounding.
//
// Supported: model_type bert (BertModel, BertForSequenceClassification) and
// distilbert (DistilBertModel, DistilBertForSequenceClassification), with
// parameters stored with or without the "bert."/"distilbert." prefix, as
// F32, F16, BF16 or F64 (the last three are converted to float32).
//
// Build makes the same graph from a Config and any WeightSource, so
// benchmarks can build real-shaped models from RandomWeights without files.
package hf
