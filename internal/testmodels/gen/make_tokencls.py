"""Tiny random-weight token classifiers and question answering models
(config.json, model.safetensors and the ONNX export) for sqc's tests, after transformers 4.46's
*ForTokenClassification: the encoder built without its pooler
(add_pooling_layer=False), dropout (the identity in eval mode) and
`classifier`, an nn.Linear(hidden_size, num_labels) on every token's hidden
state; ModernBertForTokenClassification first runs its prediction head
(dense, classifier_activation, norm). The encoders are make_models.py's and
make_modernbert.py's; the labels are CoNLL-2003's IOB tags, as NER models
(dslim/bert-base-NER and its kin) name them. The output is "logits",
[batch, sequence, labels], with dynamic batch and sequence axes in the
export. *ForQuestionAnswering is the encoder without its pooler and
qa_outputs, an nn.Linear(hidden_size, 2) on every token, split into
"start_logits" and "end_logits" ([batch, sequence]). Run with the same arguments as make_models.py:

    /usr/bin/python3 internal/testmodels/gen/make_tokencls.py [--out DIR]
"""

import torch
from torch import nn

import make_models
import make_modernbert
import tinyexport

NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def ner_labels(c):
    c["id2label"] = {str(i): l for i, l in enumerate(NER_LABELS)}
    c["label2id"] = {l: i for i, l in enumerate(NER_LABELS)}
    if "num_labels" in c:
        c["num_labels"] = len(NER_LABELS)
    return c


class BertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = make_models.BertModel(c, add_pooling_layer=False)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, input_ids, attention_mask, token_type_ids):
        bert = self.bert
        hidden = bert.encoder(bert.embeddings(input_ids, token_type_ids), make_models.extended_attention_mask(attention_mask))
        return self.classifier(self.dropout(hidden))


class RobertaForTokenClassification(nn.Module):
    """XLMRobertaForTokenClassification and CamembertForTokenClassification
    are this class renamed."""

    def __init__(self, c):
        super().__init__()
        self.roberta = make_models.RobertaModel(c, add_pooling_layer=False)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.roberta(input_ids, attention_mask)))


class DistilBertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.distilbert = make_models.DistilBertModel(c)
        self.dropout = nn.Dropout(c["dropout"])
        self.classifier = nn.Linear(c["dim"], len(c["id2label"]))

    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.distilbert(input_ids, attention_mask)))


class ModernBertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = make_modernbert.Model(c)
        self.head = make_modernbert.Head(c)
        self.drop = nn.Dropout(0.0)
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])

    def forward(self, input_ids, attention_mask):
        return self.classifier(self.drop(self.head(self.model(input_ids, attention_mask))))


class BertForQuestionAnswering(nn.Module):
    """qa_outputs on every token, split into start and end logits."""

    def __init__(self, c):
        super().__init__()
        self.bert = make_models.BertModel(c, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, input_ids, attention_mask, token_type_ids):
        bert = self.bert
        hidden = bert.encoder(bert.embeddings(input_ids, token_type_ids), make_models.extended_attention_mask(attention_mask))
        return split_start_end(self.qa_outputs(hidden))


class DistilBertForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.distilbert = make_models.DistilBertModel(c)
        self.dropout = nn.Dropout(c["qa_dropout"])
        self.qa_outputs = nn.Linear(c["dim"], 2)

    def forward(self, input_ids, attention_mask):
        return split_start_end(self.qa_outputs(self.dropout(self.distilbert(input_ids, attention_mask))))


class ModernBertForQuestionAnswering(nn.Module):
    """The prediction head (dense, classifier_activation, norm), then
    `classifier`, an nn.Linear(hidden_size, 2), split as the others'."""

    def __init__(self, c):
        super().__init__()
        self.model = make_modernbert.Model(c)
        self.head = make_modernbert.Head(c)
        self.drop = nn.Dropout(0.0)
        self.classifier = nn.Linear(c["hidden_size"], 2)

    def forward(self, input_ids, attention_mask):
        return split_start_end(self.classifier(self.drop(self.head(self.model(input_ids, attention_mask)))))


def split_start_end(logits):
    start_logits, end_logits = logits.split(1, dim=-1)
    return start_logits.squeeze(-1).contiguous(), end_logits.squeeze(-1).contiguous()


CLASSES = {
    "BertForTokenClassification": BertForTokenClassification,
    "XLMRobertaForTokenClassification": RobertaForTokenClassification,
    "DistilBertForTokenClassification": DistilBertForTokenClassification,
    "ModernBertForTokenClassification": ModernBertForTokenClassification,
    "BertForQuestionAnswering": BertForQuestionAnswering,
    "DistilBertForQuestionAnswering": DistilBertForQuestionAnswering,
    "ModernBertForQuestionAnswering": ModernBertForQuestionAnswering,
}

# name, config, opset: BERT with token types (opset 14), XLM-R without
# (opset 17), DistilBERT (opset 17), ModernBERT with a classifier bias and
# the head's GELU (opset 14: ONNX Runtime optimises it at every level).
TINY = [
    ("bert-tok-gelu", ner_labels(make_models.bert_config("BertForTokenClassification", 120, 64, 2, 4, 128, "gelu", 64)), 14),
    ("xlmr-tok-gelunew", ner_labels(make_models.bert_config("XLMRobertaForTokenClassification", 200, 48, 2, 4, 96, "gelu_new", 64, 2,
                                                            "xlm-roberta")), 17),
    ("distilbert-tok-gelu", ner_labels(make_models.distilbert_config("DistilBertForTokenClassification", 120, 32, 2, 2, 64, "gelu", 64)), 17),
    ("modernbert-tok-gelu", ner_labels(dict(make_modernbert.modernbert_config("ModernBertForTokenClassification", 140, 32, 4, 2, 48, "gelu",
                                                                              "cls", 8), classifier_bias=True)), 14),
    # question answering: start_logits and end_logits, [batch, sequence]
    ("bert-qa-gelu", make_models.bert_config("BertForQuestionAnswering", 120, 48, 2, 4, 96, "gelu", 64), 14),
    ("distilbert-qa-gelu", make_models.distilbert_config("DistilBertForQuestionAnswering", 120, 32, 2, 2, 64, "gelu", 64), 17),
    # ModernBERT's head (no biases but the classifier's, gelu_pytorch_tanh
    # in the layers and the head), opset 17.
    ("modernbert-qa-gelutanh", make_modernbert.modernbert_config("ModernBertForQuestionAnswering", 140, 32, 4, 2, 48, "gelu_pytorch_tanh", "cls", 8), 17),
]


def build(name, c, opset, out_dir, seed, lengths, published=False):
    torch.manual_seed(seed)
    model = CLASSES[c["architectures"][0]](c)
    make_models.randomize(model, seed)
    model.eval()
    batch = make_models.make_batch(c, seed + 1, lengths)
    names = make_models.input_names(c)
    outs = ["start_logits", "end_logits"] if c["architectures"][0].endswith("ForQuestionAnswering") else ["logits"]
    tinyexport.write(out_dir, name, c, model, batch, names, outs, opset, published, per_token=outs)


def main():
    tinyexport.main(__doc__, TINY, lambda: [], build, 7000, "(none)")


if __name__ == "__main__":
    main()
