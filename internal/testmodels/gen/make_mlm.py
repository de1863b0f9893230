"""Tiny random-weight masked language models (config.json, model.safetensors
and the ONNX export) for sqc's tests, after transformers 4.46's
*ForMaskedLM, the form sparse encoders (SPLADE: naver's splade models,
opensearch's neural sparse encoders) are published in: the encoder built
without its pooler, then the pretraining head on every token (a dense
layer, an activation, a LayerNorm, and the decoder to the vocabulary,
whose weight is the word embeddings'). The output is "logits", [batch,
sequence, vocabulary], with dynamic batch and sequence axes in the export.
The checkpoints are saved as save_pretrained saves them: without the tied
tensors (the decoder's weight, and its bias where the head keeps its own).
Run with the same arguments as make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_mlm.py [--out DIR]
"""

import torch
from torch import nn

import make_models
import make_modernbert
import tinyexport


def no_labels(c):
    """A masked language model's config.json names no classes."""
    for k in ("id2label", "label2id", "num_labels"):
        c.pop(k, None)
    return c


class BertForMaskedLM(nn.Module):
    """BertOnlyMLMHead: cls.predictions.transform (dense, hidden_act,
    LayerNorm), then the decoder (tied to the word embeddings) with
    cls.predictions.bias."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.bert = make_models.BertModel(c, add_pooling_layer=False)
        self.cls = nn.Module()
        p = self.cls.predictions = nn.Module()
        p.transform = nn.Module()
        p.transform.dense = nn.Linear(h, h)
        p.transform.transform_act_fn = make_models.ACT2FN[c["hidden_act"]]()
        p.transform.LayerNorm = nn.LayerNorm(h, eps=c["layer_norm_eps"])
        p.decoder = nn.Linear(h, c["vocab_size"], bias=False)
        p.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        p.decoder.bias = p.bias
        p.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, input_ids, attention_mask, token_type_ids):
        bert, t = self.bert, self.cls.predictions.transform
        hidden = bert.encoder(bert.embeddings(input_ids, token_type_ids), make_models.extended_attention_mask(attention_mask))
        return self.cls.predictions.decoder(t.LayerNorm(t.transform_act_fn(t.dense(hidden))))


class RobertaForMaskedLM(nn.Module):
    """RobertaLMHead (XLMRobertaForMaskedLM's and CamembertForMaskedLM's):
    dense, the erf GELU whatever hidden_act says, layer_norm, the decoder
    (tied) with lm_head.bias."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.roberta = make_models.RobertaModel(c, add_pooling_layer=False)
        m = self.lm_head = nn.Module()
        m.dense = nn.Linear(h, h)
        m.layer_norm = nn.LayerNorm(h, eps=c["layer_norm_eps"])
        m.decoder = nn.Linear(h, c["vocab_size"])
        m.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        m.decoder.bias = m.bias
        m.decoder.weight = self.roberta.embeddings.word_embeddings.weight

    def forward(self, input_ids, attention_mask):
        m = self.lm_head
        x = nn.functional.gelu(m.dense(self.roberta(input_ids, attention_mask)))
        return m.decoder(m.layer_norm(x))


class DistilBertForMaskedLM(nn.Module):
    """vocab_transform, the config's activation, vocab_layer_norm (eps
    1e-12), vocab_projector (tied, with its own bias)."""

    def __init__(self, c):
        super().__init__()
        d = c["dim"]
        self.distilbert = make_models.DistilBertModel(c)
        self.activation = make_models.ACT2FN[c["activation"]]()
        self.vocab_transform = nn.Linear(d, d)
        self.vocab_layer_norm = nn.LayerNorm(d, eps=1e-12)
        self.vocab_projector = nn.Linear(d, c["vocab_size"])
        self.vocab_projector.weight = self.distilbert.embeddings.word_embeddings.weight

    def forward(self, input_ids, attention_mask):
        x = self.activation(self.vocab_transform(self.distilbert(input_ids, attention_mask)))
        return self.vocab_projector(self.vocab_layer_norm(x))


class ModernBertForMaskedLM(nn.Module):
    """The prediction head (dense, classifier_activation, norm), then the
    decoder (tied to tok_embeddings) with its bias (decoder_bias)."""

    def __init__(self, c):
        super().__init__()
        self.model = make_modernbert.Model(c)
        self.head = make_modernbert.Head(c)
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"], bias=c["decoder_bias"])
        self.decoder.weight = self.model.embeddings.tok_embeddings.weight

    def forward(self, input_ids, attention_mask):
        return self.decoder(self.head(self.model(input_ids, attention_mask)))


CLASSES = {
    "BertForMaskedLM": BertForMaskedLM,
    "XLMRobertaForMaskedLM": RobertaForMaskedLM,
    "DistilBertForMaskedLM": DistilBertForMaskedLM,
    "ModernBertForMaskedLM": ModernBertForMaskedLM,
}

# The tensors save_pretrained leaves out (each class's _tied_weights_keys).
TIED = {
    "BertForMaskedLM": ["cls.predictions.decoder.weight", "cls.predictions.decoder.bias"],
    "XLMRobertaForMaskedLM": ["lm_head.decoder.weight", "lm_head.decoder.bias"],
    "DistilBertForMaskedLM": ["vocab_projector.weight"],
    "ModernBertForMaskedLM": ["decoder.weight"],
}

# name, config, opset: BERT with token types and gelu_new (opset 14), XLM-R
# (opset 17: its head's GELU is the erf one while its layers' is relu),
# DistilBERT (opset 17), ModernBERT with a classifier bias and the
# decoder's (opset 14).
TINY = [
    ("bert-mlm-gelunew", no_labels(make_models.bert_config("BertForMaskedLM", 120, 64, 2, 4, 128, "gelu_new", 64)), 14),
    ("xlmr-mlm-relu", no_labels(make_models.bert_config("XLMRobertaForMaskedLM", 200, 48, 2, 4, 96, "relu", 64, 2, "xlm-roberta")), 17),
    ("distilbert-mlm-gelu", no_labels(make_models.distilbert_config("DistilBertForMaskedLM", 120, 32, 2, 2, 64, "gelu", 64)), 17),
    ("modernbert-mlm-gelu", no_labels(dict(make_modernbert.modernbert_config("ModernBertForMaskedLM", 140, 32, 4, 2, 48, "gelu", "cls", 8),
                                           classifier_bias=True, decoder_bias=True)), 14),
]


def published():
    # bert-base-uncased's shapes (naver/splade-cocondenser-ensembledistil's
    # and opensearch's neural sparse encoders'), random weights, to time.
    return [("bert-base-mlm-random", no_labels(make_models.bert_config("BertForMaskedLM", 30522, 768, 12, 12, 3072, "gelu", 512)), 14)]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    arch = c["architectures"][0]
    model = CLASSES[arch](c)
    make_models.randomize(model, seed)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    names = make_models.input_names(c)
    tinyexport.write(out_dir, name, c, model, batch, names, ["logits"], opset, published, per_token=["logits"], drop=TIED[arch])


def main():
    tinyexport.main(__doc__, TINY, published, build, 9000, "bert-base-uncased's shapes as a BertForMaskedLM")


if __name__ == "__main__":
    main()
