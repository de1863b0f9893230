#!/usr/bin/python3
"""Random-weight test models of the BERT, DistilBERT, RoBERTa, XLM-RoBERTa,
CamemBERT, ELECTRA and MPNet families, in the structure `transformers` publishes them, with FP32
reference outputs from PyTorch.

transformers is not installed (nor reachable), so the modules below are
written by hand after modeling_bert.py, modeling_distilbert.py and
modeling_roberta.py, modeling_electra.py, modeling_mpnet.py and modeling_albert.py (eager
attention, eval mode;
CamemBERT's modeling file is RoBERTa's renamed): the same parameter names,
the same order of operations, the same buffers (position_ids,
token_type_ids), so that torch.onnx.export writes the graph an export of the
real class writes.

For each model it writes a folder like `save_pretrained` does:
  config.json        the real config keys of that model_type
  model.safetensors  F32, the real parameter names (written by hand; the
                     format is an 8-byte header length, a JSON header, data)
  model.onnx         torch.onnx.export, dynamic batch and sequence axes
  reference.json     a right-padded batch of token ids and the outputs
                     PyTorch computes for it (float32 values, exact in JSON)

Usage (Debian: apt-get install python3-torch python3-numpy python3-onnx):

  /usr/bin/python3 internal/testmodels/gen/make_models.py [--out DIR]
      the tiny models, into internal/testmodels/testdata/tiny (committed)
  /usr/bin/python3 internal/testmodels/gen/make_models.py --published --out DIR [--no-onnx]
      roberta-base and xlm-roberta-base shaped models with random weights
      (0.5 GB and 1.1 GB; not committed: tests look for them in
      $SQC_PUBLISHED_MODELS and skip when it is unset)

The output is deterministic for a given torch version (fixed seeds).
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
from torch import nn

# ---------------------------------------------------------------- activations


class NewGELUActivation(nn.Module):
    """transformers' gelu_new: the tanh approximation, written out."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class PytorchGELUTanh(nn.Module):
    """transformers' gelu_pytorch_tanh."""

    def forward(self, x):
        return nn.functional.gelu(x, approximate="tanh")


class GELUActivation(nn.Module):
    """transformers' gelu (erf form)."""

    def forward(self, x):
        return nn.functional.gelu(x)


ACT2FN = {
    "gelu": GELUActivation,
    "gelu_new": NewGELUActivation,
    "gelu_pytorch_tanh": PytorchGELUTanh,
    "relu": nn.ReLU,
}

# ---------------------------------------------------------------- BERT / RoBERTa encoder


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c["num_attention_heads"]
        self.attention_head_size = c["hidden_size"] // c["num_attention_heads"]
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(c["hidden_size"], self.all_head_size)
        self.key = nn.Linear(c["hidden_size"], self.all_head_size)
        self.value = nn.Linear(c["hidden_size"], self.all_head_size)
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, hidden_states, attention_mask):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.intermediate_act_fn = ACT2FN[c["hidden_act"]]()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, hidden_states, attention_mask):
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


def extended_attention_mask(attention_mask, dtype=torch.float32):
    """ModuleUtilsMixin.get_extended_attention_mask for an encoder."""
    extended = attention_mask[:, None, None, :]
    extended = extended.to(dtype=dtype)
    return (1.0 - extended) * torch.finfo(dtype).min


class BertEmbeddings(nn.Module):
    """BertEmbeddings; ElectraEmbeddings and AlbertEmbeddings too, whose
    width is embedding_size."""

    def __init__(self, c):
        super().__init__()
        width = c.get("embedding_size", c["hidden_size"])
        self.word_embeddings = nn.Embedding(c["vocab_size"], width, padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], width)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], width)
        self.LayerNorm = nn.LayerNorm(width, eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, 0:seq_length]
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings += self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertModel(nn.Module):
    def __init__(self, c, add_pooling_layer=True):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids), extended_attention_mask(attention_mask))
        return hidden, self.pooler(hidden)


class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, input_ids, attention_mask, token_type_ids):
        _, pooled = self.bert(input_ids, attention_mask, token_type_ids)
        return self.classifier(self.dropout(pooled))


# ---------------------------------------------------------------- ELECTRA


class ElectraModel(nn.Module):
    """BERT's embeddings at embedding_size, projected to hidden_size when
    they differ (embeddings_project), BERT's encoder, no pooler."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        if c["embedding_size"] != c["hidden_size"]:
            self.embeddings_project = nn.Linear(c["embedding_size"], c["hidden_size"])
        self.encoder = BertEncoder(c)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.embeddings(input_ids, token_type_ids)
        if hasattr(self, "embeddings_project"):
            x = self.embeddings_project(x)
        return self.encoder(x, extended_attention_mask(attention_mask))


class ElectraClassificationHead(nn.Module):
    """features[:, 0] -> dense -> gelu (erf, whatever hidden_act is) -> out_proj."""

    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.activation = GELUActivation()
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.out_proj = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, features):
        x = self.dropout(features[:, 0, :])
        x = self.activation(self.dense(x))
        return self.out_proj(self.dropout(x))


class ElectraForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.electra = ElectraModel(c)
        self.classifier = ElectraClassificationHead(c)

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.classifier(self.electra(input_ids, attention_mask, token_type_ids))


class AlbertAttention(nn.Module):
    """modeling_albert.AlbertAttention (eager): BERT's self-attention, its
    output dense and LayerNorm in one module."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.heads, self.d = c["num_attention_heads"], h // c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attention_dropout = nn.Dropout(c["attention_probs_dropout_prob"])
        self.output_dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.dense = nn.Linear(h, h)
        self.LayerNorm = nn.LayerNorm(h, eps=c["layer_norm_eps"])

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.d)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + attention_mask
        probs = self.attention_dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).transpose(2, 1).flatten(2)
        return self.LayerNorm(hidden_states + self.output_dropout(self.dense(ctx)))


class AlbertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.full_layer_layer_norm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.attention = AlbertAttention(c)
        self.ffn = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.ffn_output = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.activation = ACT2FN[c["hidden_act"]]()

    def forward(self, hidden_states, attention_mask):
        a = self.attention(hidden_states, attention_mask)
        return self.full_layer_layer_norm(self.ffn_output(self.activation(self.ffn(a))) + a)


class AlbertLayerGroup(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert_layers = nn.ModuleList([AlbertLayer(c) for _ in range(c["inner_group_num"])])

    def forward(self, hidden_states, attention_mask):
        for layer in self.albert_layers:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class AlbertTransformer(nn.Module):
    """The embeddings projected to hidden_size (always), then
    num_hidden_layers passes, pass i through layer group
    int(i / (num_hidden_layers / num_hidden_groups)): the groups' weights
    are shared across passes."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embedding_hidden_mapping_in = nn.Linear(c["embedding_size"], c["hidden_size"])
        self.albert_layer_groups = nn.ModuleList([AlbertLayerGroup(c) for _ in range(c["num_hidden_groups"])])

    def forward(self, hidden_states, attention_mask):
        hidden_states = self.embedding_hidden_mapping_in(hidden_states)
        n, groups = self.c["num_hidden_layers"], self.c["num_hidden_groups"]
        for i in range(n):
            hidden_states = self.albert_layer_groups[int(i / (n / groups))](hidden_states, attention_mask)
        return hidden_states


class AlbertModel(nn.Module):
    """BERT's embeddings at embedding_size, the shared-layer transformer,
    the pooler (dense + tanh on the first token)."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)  # at embedding_size
        self.encoder = AlbertTransformer(c)
        self.pooler = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.pooler_activation = nn.Tanh()

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.encoder(self.embeddings(input_ids, token_type_ids), extended_attention_mask(attention_mask))
        return x, self.pooler_activation(self.pooler(x[:, 0]))


class AlbertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert = AlbertModel(c)
        self.dropout = nn.Dropout(c["classifier_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.classifier(self.dropout(self.albert(input_ids, attention_mask, token_type_ids)[1]))


def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    """modeling_roberta.create_position_ids_from_input_ids."""
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


class RobertaEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"], padding_idx=c["pad_token_id"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False)
        self.padding_idx = c["pad_token_id"]

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        buffered_token_type_ids = self.token_type_ids[:, :seq_length]
        token_type_ids = buffered_token_type_ids.expand(input_shape[0], seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings += self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class RobertaModel(nn.Module):
    embeddings_class, encoder_class = RobertaEmbeddings, BertEncoder

    def __init__(self, c, add_pooling_layer=True):
        super().__init__()
        self.embeddings = self.embeddings_class(c)
        self.encoder = self.encoder_class(c)
        self.pooler = BertPooler(c) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(self.embeddings(input_ids), extended_attention_mask(attention_mask))
        if self.pooler is None:
            return hidden
        return hidden, self.pooler(hidden)


class RobertaClassificationHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.out_proj = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, features):
        x = features[:, 0, :]
        x = self.dropout(x)
        x = torch.tanh(self.dense(x))
        x = self.dropout(x)
        return self.out_proj(x)


class RobertaForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c, add_pooling_layer=False)
        self.classifier = RobertaClassificationHead(c)

    def forward(self, input_ids, attention_mask):
        return self.classifier(self.roberta(input_ids, attention_mask))


# ---------------------------------------------------------------- MPNet


class MPNetEmbeddings(nn.Module):
    """Word + position embeddings (positions as RoBERTa counts them, from
    padding_idx 1), LayerNorm; no token types."""

    def __init__(self, c):
        super().__init__()
        self.padding_idx = 1
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=self.padding_idx)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"], padding_idx=self.padding_idx)
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MPNetSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c["num_attention_heads"]
        self.attention_head_size = c["hidden_size"] // c["num_attention_heads"]
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.q = nn.Linear(c["hidden_size"], self.all_head_size)
        self.k = nn.Linear(c["hidden_size"], self.all_head_size)
        self.v = nn.Linear(c["hidden_size"], self.all_head_size)
        self.o = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])

    def forward(self, hidden_states, attention_mask, position_bias):
        batch_size, seq_length, _ = hidden_states.shape
        q = self.q(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        k = self.k(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        v = self.v(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        attention_scores = torch.matmul(q, k.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores += position_bias
        attention_scores = attention_scores + attention_mask
        attention_probs = self.dropout(nn.functional.softmax(attention_scores, dim=-1))
        c = torch.matmul(attention_probs, v)
        c = c.permute(0, 2, 1, 3).contiguous()
        c = c.view(*(c.size()[:-2] + (self.all_head_size,)))
        return self.o(c)


class MPNetAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = MPNetSelfAttention(c)
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, hidden_states, attention_mask, position_bias):
        out = self.attn(hidden_states, attention_mask, position_bias)
        return self.LayerNorm(self.dropout(out) + hidden_states)


class MPNetLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = MPNetAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, hidden_states, attention_mask, position_bias):
        attention_output = self.attention(hidden_states, attention_mask, position_bias)
        return self.output(self.intermediate(attention_output), attention_output)


class MPNetEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads = c["num_attention_heads"]
        self.layer = nn.ModuleList([MPNetLayer(c) for _ in range(c["num_hidden_layers"])])
        self.relative_attention_bias = nn.Embedding(c["relative_attention_num_buckets"], self.n_heads)
        self.num_buckets = c["relative_attention_num_buckets"]

    def forward(self, hidden_states, attention_mask):
        position_bias = self.compute_position_bias(hidden_states, num_buckets=self.num_buckets)
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask, position_bias)
        return hidden_states

    def compute_position_bias(self, x, num_buckets=32):
        bsz, qlen, klen = x.size(0), x.size(1), x.size(1)
        context_position = torch.arange(qlen, dtype=torch.long)[:, None]
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        rp_bucket = self.relative_position_bucket(relative_position, num_buckets=num_buckets)
        values = self.relative_attention_bias(rp_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values.expand((bsz, -1, qlen, klen)).contiguous()

    @staticmethod
    def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
        ret = 0
        n = -relative_position
        num_buckets //= 2
        ret += (n < 0).to(torch.long) * num_buckets
        n = torch.abs(n)
        max_exact = num_buckets // 2
        is_small = n < max_exact
        val_if_large = max_exact + (
            torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).to(torch.long)
        val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
        ret += torch.where(is_small, n, val_if_large)
        return ret


class MPNetModel(RobertaModel):
    """RobertaModel's structure with MPNet's embeddings and encoder."""

    embeddings_class, encoder_class = MPNetEmbeddings, MPNetEncoder


class MPNetForSequenceClassification(nn.Module):
    """MPNetClassificationHead is RobertaClassificationHead."""

    def __init__(self, c):
        super().__init__()
        self.mpnet = MPNetModel(c, add_pooling_layer=False)
        self.classifier = RobertaClassificationHead(c)

    def forward(self, input_ids, attention_mask):
        return self.classifier(self.mpnet(input_ids, attention_mask))


# ---------------------------------------------------------------- DistilBERT


class DistilEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["dim"], padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["dim"])
        self.LayerNorm = nn.LayerNorm(c["dim"], eps=1e-12)
        self.dropout = nn.Dropout(c["dropout"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)), persistent=False)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads = c["n_heads"]
        self.dim = c["dim"]
        self.dropout = nn.Dropout(p=c["attention_dropout"])
        self.q_lin = nn.Linear(c["dim"], c["dim"])
        self.k_lin = nn.Linear(c["dim"], c["dim"])
        self.v_lin = nn.Linear(c["dim"], c["dim"])
        self.out_lin = nn.Linear(c["dim"], c["dim"])

    def forward(self, query, key, value, mask):
        bs, q_length, dim = query.size()
        k_length = key.size(1)
        dim_per_head = self.dim // self.n_heads
        mask_reshp = (bs, 1, 1, k_length)

        def shape(x):
            return x.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        def unshape(x):
            return x.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)

        q = shape(self.q_lin(query))
        k = shape(self.k_lin(key))
        v = shape(self.v_lin(value))
        q = q / math.sqrt(dim_per_head)
        scores = torch.matmul(q, k.transpose(2, 3))
        mask = (mask == 0).view(mask_reshp).expand_as(scores)
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        weights = nn.functional.softmax(scores, dim=-1)
        weights = self.dropout(weights)
        context = unshape(torch.matmul(weights, v))
        return self.out_lin(context)


class FFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dropout = nn.Dropout(p=c["dropout"])
        self.lin1 = nn.Linear(c["dim"], c["hidden_dim"])
        self.lin2 = nn.Linear(c["hidden_dim"], c["dim"])
        self.activation = ACT2FN[c["activation"]]()

    def forward(self, x):
        return self.dropout(self.lin2(self.activation(self.lin1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = MultiHeadSelfAttention(c)
        self.sa_layer_norm = nn.LayerNorm(c["dim"], eps=1e-12)
        self.ffn = FFN(c)
        self.output_layer_norm = nn.LayerNorm(c["dim"], eps=1e-12)

    def forward(self, x, attn_mask):
        sa_output = self.sa_layer_norm(self.attention(x, x, x, attn_mask) + x)
        return self.output_layer_norm(self.ffn(sa_output) + sa_output)


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(c) for _ in range(c["n_layers"])])

    def forward(self, x, attn_mask):
        for layer in self.layer:
            x = layer(x, attn_mask)
        return x


class DistilBertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = DistilEmbeddings(c)
        self.transformer = Transformer(c)

    def forward(self, input_ids, attention_mask):
        return self.transformer(self.embeddings(input_ids), attention_mask)


class DistilBertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.distilbert = DistilBertModel(c)
        self.pre_classifier = nn.Linear(c["dim"], c["dim"])
        self.classifier = nn.Linear(c["dim"], len(c["id2label"]))
        self.dropout = nn.Dropout(c["seq_classif_dropout"])

    def forward(self, input_ids, attention_mask):
        hidden_state = self.distilbert(input_ids, attention_mask)
        pooled_output = hidden_state[:, 0]
        pooled_output = nn.ReLU()(self.pre_classifier(pooled_output))
        return self.classifier(self.dropout(pooled_output))


# ---------------------------------------------------------------- configs

TRANSFORMERS_VERSION = "4.46.0"  # the version whose config keys these mirror


def labels(n):
    id2label = {str(i): "LABEL_%d" % i for i in range(n)}
    return id2label, {v: int(k) for k, v in id2label.items()}


def bert_config(arch, vocab, hidden, layers, heads, inter, act, max_pos, num_labels=2, model_type="bert"):
    id2label, label2id = labels(num_labels)
    c = {
        "architectures": [arch],
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "hidden_act": act,
        "hidden_dropout_prob": 0.1,
        "hidden_size": hidden,
        "id2label": id2label,
        "initializer_range": 0.02,
        "intermediate_size": inter,
        "label2id": label2id,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": max_pos,
        "model_type": model_type,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        "transformers_version": TRANSFORMERS_VERSION,
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": vocab,
    }
    if model_type in ("roberta", "xlm-roberta", "camembert"):
        # As roberta-base / xlm-roberta-base publish them.
        c.update({"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1, "type_vocab_size": 1,
                  "layer_norm_eps": 1e-5, "max_position_embeddings": max_pos + 2})
    return c


def electra_config(arch, vocab, embedding, hidden, layers, heads, inter, act, max_pos, num_labels=2):
    c = bert_config(arch, vocab, hidden, layers, heads, inter, act, max_pos, num_labels, "electra")
    # As google/electra-*-discriminator publish them.
    c.update({"embedding_size": embedding, "summary_activation": "gelu", "summary_last_dropout": 0.1,
              "summary_type": "first", "summary_use_proj": True})
    return c


def albert_config(arch, vocab, embedding, hidden, layers, heads, inter, act, max_pos, groups=1, inner=1, num_labels=2):
    c = bert_config(arch, vocab, hidden, layers, heads, inter, act, max_pos, num_labels, "albert")
    # As albert-base-v2 publishes it (AlbertConfig's keys; no pooler or
    # type-table switches, classifier_dropout_prob for the head).
    for k in ("use_cache", "classifier_dropout"):
        del c[k]
    c.update({"embedding_size": embedding, "num_hidden_groups": groups, "inner_group_num": inner, "bos_token_id": 2,
              "eos_token_id": 3, "classifier_dropout_prob": 0.1, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0})
    return c


def mpnet_config(arch, vocab, hidden, layers, heads, inter, act, max_pos, num_labels=2):
    c = bert_config(arch, vocab, hidden, layers, heads, inter, act, max_pos, num_labels, "mpnet")
    # As sentence-transformers/all-mpnet-base-v2 publishes it.
    for k in ("type_vocab_size", "position_embedding_type", "use_cache", "classifier_dropout"):
        del c[k]
    c.update({"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1, "layer_norm_eps": 1e-5,
              "max_position_embeddings": max_pos + 2, "relative_attention_num_buckets": 32})
    return c


def distilbert_config(arch, vocab, dim, layers, heads, hidden_dim, act, max_pos, num_labels=2):
    id2label, label2id = labels(num_labels)
    return {
        "activation": act,
        "architectures": [arch],
        "attention_dropout": 0.1,
        "dim": dim,
        "dropout": 0.1,
        "hidden_dim": hidden_dim,
        "id2label": id2label,
        "initializer_range": 0.02,
        "label2id": label2id,
        "max_position_embeddings": max_pos,
        "model_type": "distilbert",
        "n_heads": heads,
        "n_layers": layers,
        "pad_token_id": 0,
        "qa_dropout": 0.1,
        "seq_classif_dropout": 0.2,
        "sinusoidal_pos_embds": False,
        "tie_weights_": True,
        "torch_dtype": "float32",
        "transformers_version": TRANSFORMERS_VERSION,
        "vocab_size": vocab,
    }


CLASSES = {
    "BertModel": BertModel,
    "BertForSequenceClassification": BertForSequenceClassification,
    "DistilBertForSequenceClassification": DistilBertForSequenceClassification,
    "DistilBertModel": DistilBertModel,
    "RobertaModel": RobertaModel,
    "RobertaForSequenceClassification": RobertaForSequenceClassification,
    "XLMRobertaModel": RobertaModel,  # modeling_xlm_roberta is modeling_roberta renamed
    "XLMRobertaForSequenceClassification": RobertaForSequenceClassification,
    "CamembertModel": RobertaModel,  # modeling_camembert is modeling_roberta renamed
    "CamembertForSequenceClassification": RobertaForSequenceClassification,
    "ElectraModel": ElectraModel,
    "ElectraForSequenceClassification": ElectraForSequenceClassification,
    "MPNetModel": MPNetModel,
    "MPNetForSequenceClassification": MPNetForSequenceClassification,
    "AlbertModel": AlbertModel,
    "AlbertForSequenceClassification": AlbertForSequenceClassification,
}

# The committed tiny models: every family, base and classifier
# architectures, every activation kind, both ONNX opsets the frontends see.
TINY = [
    # name, config, opset
    ("bert-cls-gelu", bert_config("BertForSequenceClassification", 120, 64, 2, 4, 128, "gelu", 64), 14),
    ("bert-base-gelutanh", bert_config("BertModel", 120, 32, 2, 2, 64, "gelu_pytorch_tanh", 64), 17),
    ("distilbert-cls-relu", distilbert_config("DistilBertForSequenceClassification", 120, 64, 2, 4, 128, "relu", 64, 3), 17),
    ("roberta-cls-gelunew", bert_config("RobertaForSequenceClassification", 150, 64, 2, 4, 128, "gelu_new", 64, 2, "roberta"), 17),
    ("roberta-base-gelu", bert_config("RobertaModel", 150, 32, 2, 2, 64, "gelu", 64, 2, "roberta"), 14),
    ("xlmr-cls-relu", bert_config("XLMRobertaForSequenceClassification", 200, 48, 2, 4, 96, "relu", 64, 3, "xlm-roberta"), 17),
    ("xlmr-base-gelu", bert_config("XLMRobertaModel", 200, 64, 2, 4, 128, "gelu", 64, 2, "xlm-roberta"), 17),
    # ELECTRA: embeddings narrower than the encoder (projected), as the
    # small discriminator has them, and as wide (no projection), as base
    # and large have them; the classifier's GELU is erf while hidden_act
    # is not.
    ("electra-cls-gelunew", electra_config("ElectraForSequenceClassification", 120, 32, 64, 2, 4, 128, "gelu_new", 64), 17),
    ("electra-base-gelu", electra_config("ElectraModel", 120, 48, 48, 2, 4, 96, "gelu", 64), 14),
    ("camembert-cls-gelu", bert_config("CamembertForSequenceClassification", 130, 64, 2, 4, 128, "gelu", 64, 2, "camembert"), 17),
    # MPNet: a relative position bias (32 buckets, exact below 8 and
    # logarithmic above, so the 16-token batch meets both) added to every
    # layer's scores before the mask.
    ("mpnet-base-gelu", mpnet_config("MPNetModel", 140, 64, 2, 4, 128, "gelu", 64), 14),
    ("mpnet-cls-gelunew", mpnet_config("MPNetForSequenceClassification", 140, 48, 2, 4, 96, "gelu_new", 64), 17),
    # ALBERT (appended: each model's seed is its index): embeddings
    # narrower than the encoder, always projected; every pass through one
    # shared layer (albert-base-v2's form), or three passes through two
    # groups of two layers each (groups 0, 0, 1).
    ("albert-cls-gelunew", albert_config("AlbertForSequenceClassification", 120, 16, 64, 3, 4, 128, "gelu_new", 64), 17),
    ("albert-base-groups", albert_config("AlbertModel", 120, 32, 48, 3, 4, 96, "gelu", 64, groups=2, inner=2), 14),
]


def published():
    # roberta-base and xlm-roberta-base config.json values.
    rb = bert_config("RobertaForSequenceClassification", 50265, 768, 12, 12, 3072, "gelu", 512, 2, "roberta")
    xb = bert_config("XLMRobertaForSequenceClassification", 250002, 768, 12, 12, 3072, "gelu", 512, 2, "xlm-roberta")
    return [("roberta-base-random", rb, 17), ("xlm-roberta-base-random", xb, 17)]


# ---------------------------------------------------------------- weights


def randomize(model, seed):
    """Random weights at scales where every path matters: O(1) activations
    (std 1/sqrt(fan_in) linears), varied attention, non-trivial LayerNorm
    parameters and biases. The `transformers` init (std 0.02) would make
    attention nearly uniform and the outputs nearly constant, which hides
    masking and position mistakes."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and "_embeddings." in name:  # the tables, not ELECTRA's embeddings_project
                p.copy_(torch.randn(p.shape, generator=g))
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) * (1.5 / math.sqrt(p.shape[1])))
            elif "LayerNorm" in name or "layer_norm" in name:
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def save_safetensors(path, tensors, dtype="F32"):
    """The safetensors format: u64 little-endian header size, a JSON header
    of name -> {dtype, shape, data_offsets}, then the raw bytes; dtype F32
    or F16."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().numpy().astype({"F32": "<f4", "F16": "<f2"}[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- inputs and references


def family(c):
    return c["model_type"]


def input_names(c):
    if family(c) in ("bert", "electra", "albert"):
        return ["input_ids", "attention_mask", "token_type_ids"]
    return ["input_ids", "attention_mask"]


def output_names(c):
    arch = c["architectures"][0]
    if arch.endswith("ForSequenceClassification"):
        return ["logits"]
    if arch in ("DistilBertModel", "ElectraModel"):
        return ["last_hidden_state"]
    return ["last_hidden_state", "pooler_output"]


def make_batch(c, seed, lengths):
    """A right-padded batch: [CLS]/<s> first, [SEP]/</s> last, pad ids and
    mask 0 after; BERT rows after the first get segment B in their second
    half. Special ids: BERT 0 pad, 101-style ids do not fit a small vocab,
    so [CLS]=2, [SEP]=3; RoBERTa <s>=0, <pad>=1, </s>=2."""
    rng = np.random.default_rng(seed)
    v, seq = c["vocab_size"], max(lengths)
    roberta = family(c) in ("roberta", "xlm-roberta", "camembert", "mpnet")
    pad, cls, sep = (1, 0, 2) if roberta else (0, 2, 3)
    ids = np.full((len(lengths), seq), pad, dtype=np.int64)
    mask = np.zeros((len(lengths), seq), dtype=np.int64)
    types = np.zeros((len(lengths), seq), dtype=np.int64)
    for i, n in enumerate(lengths):
        ids[i, 0], ids[i, n - 1] = cls, sep
        ids[i, 1:n - 1] = rng.integers(4, v, size=n - 2)
        mask[i, :n] = 1
        if i > 0 and not roberta:
            types[i, n // 2:n] = 1
    batch = {"input_ids": ids, "attention_mask": mask}
    if family(c) in ("bert", "electra", "albert"):
        batch["token_type_ids"] = types
    return batch


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def to_list(a):
    # float(np.float32) is exact, and json writes the shortest repr that
    # reads back as that double, so the values survive the round trip.
    return [float(x) for x in a.reshape(-1)]


def build(name, c, opset, out_dir, seed, lengths, onnx=True):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(seed)
    model = CLASSES[c["architectures"][0]](c)
    randomize(model, seed)
    model.eval()
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    save_safetensors(os.path.join(d, "model.safetensors"), dict(model.state_dict()))

    batch = make_batch(c, seed + 1, lengths)
    names = input_names(c)
    args = tuple(torch.from_numpy(batch[n]) for n in names)
    with torch.no_grad():
        outs = as_tuple(model(*args))
    onames = output_names(c)
    ref = {
        "inputs": {n: batch[n].tolist() for n in names},
        "outputs": {n: {"shape": list(o.shape), "data": to_list(o.numpy())} for n, o in zip(onames, outs)},
        "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")

    if onnx:
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        for n in onames:
            axes[n] = {0: "batch", 1: "sequence"} if n == "last_hidden_state" else {0: "batch"}
        with torch.no_grad():
            torch.onnx.export(model, args, os.path.join(d, "model.onnx"), input_names=names, output_names=onames,
                              dynamic_axes=axes, opset_version=opset, do_constant_folding=True)
    print("%s: %s, %d parameters" % (name, c["architectures"][0], sum(p.numel() for p in model.parameters())), file=sys.stderr)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "testdata", "tiny"))
    ap.add_argument("--published", action="store_true", help="roberta-base / xlm-roberta-base shapes instead of the tiny models")
    ap.add_argument("--no-onnx", action="store_true", help="skip torch.onnx.export")
    ap.add_argument("--only", default="", help="comma-separated model names to build")
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    models = published() if a.published else TINY
    # A batch with padding, a length-1 body, and one full row.
    lengths = [9, 3, 16, 12] if not a.published else [24, 7, 32]
    for i, (name, c, opset) in enumerate(models):
        if a.only and name not in a.only.split(","):
            continue
        build(name, c, opset, a.out, 1000 + 17 * i, lengths, onnx=not a.no_onnx)


if __name__ == "__main__":
    main()
