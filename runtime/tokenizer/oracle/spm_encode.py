"""spm_encode.py is the oracle for SentencePiece model files: it encodes
a JSON-lines corpus ({"text", "text_pair"}) with the real SentencePiece
library the way transformers' slow tokenizers use it, and writes one
{"ids", "type_ids", "offsets", "char_offsets"} line per input (special
tokens added, pairs truncated longest first to 512 tokens by
transformers' loop).

sentencepiece.bpe.model gets XLM-RoBERTa's fairseq ids (<s>=0 <pad>=1
</s>=2 <unk>=3, pieces shifted by one) and <s> A </s> (</s> B </s>);
spm.model its own ids and DeBERTa-v2/v3's [CLS] A [SEP] (B [SEP], type id
1 from B on), as DebertaV2Tokenizer builds them; any other model its own
ids and T5's A </s> (B </s>). Inputs that contain a
special token literally are written as {"skip": true}: the slow
tokenizers split those out first, which is not the SentencePiece library.

offsets are each piece's [begin, end) in the library's SentencePieceText
(EncodeAsSerializedProto): UTF-8 byte offsets into the piece's own text,
the C++ library's unit. char_offsets are the same spans as the Python
binding reports them (EncodeAsImmutableProto, which converts to code
points). The template's special tokens, which the library does not add,
get [0, 0] in both.

usage: python3 spm_encode.py MODEL CORPUS_JSONL OUT_JSONL
"""
import json
import os
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_pb2

MAX_LENGTH = 512


def main():
    model, corpus, out = sys.argv[1:4]
    sp = spm.SentencePieceProcessor(model_file=model)
    fairseq = os.path.basename(model) == 'sentencepiece.bpe.model'
    deberta = os.path.basename(model) == 'spm.model'
    if deberta:
        # [MASK] is DebertaV2Tokenizer's added token, split out first too.
        specials = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)] + ['[MASK]']
        cls, sep = sp.piece_to_id('[CLS]'), sp.piece_to_id('[SEP]')

        def layout_id(i):
            return i
    elif fairseq:
        specials = ['<s>', '<pad>', '</s>', '<unk>', '<mask>']
        cls, sep = 0, 2

        def layout_id(i):
            return 3 if i == sp.unk_id() else i + 1
    else:
        specials = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)]
        eos = sp.piece_to_id('</s>')

        def layout_id(i):
            return i

    def encode(text):
        """The text's tokens as (id, byte span, code point span)."""
        ids = sp.encode(text)
        spt = sentencepiece_pb2.SentencePieceText()
        spt.ParseFromString(sp.encode_as_serialized_proto(text))
        chars = sp.encode_as_immutable_proto(text).pieces
        if [p.id for p in spt.pieces] != ids or [p.id for p in chars] != ids:
            raise SystemExit('%r: the protos\' ids differ from encode\'s' % text)
        return [(layout_id(i), (p.begin, p.end), (c.begin, c.end)) for i, p, c in zip(ids, spt.pieces, chars)]

    def special(i):
        return (i, (0, 0), (0, 0))

    with open(corpus, encoding='utf-8') as f, open(out, 'w') as w:
        for line in f:
            item = json.loads(line)
            texts = [item['text']] + ([item['text_pair']] if item.get('text_pair') is not None else [])
            if any(s in t for s in specials for t in texts):
                w.write('{"skip": true}\n')
                continue
            a = encode(texts[0])
            types = None
            if deberta:
                b = encode(texts[1]) if len(texts) > 1 else None
                if b is None:
                    a = a[:MAX_LENGTH - 2]
                    seq = [special(cls)] + a + [special(sep)]
                else:
                    for _ in range(len(a) + len(b) - (MAX_LENGTH - 3)):
                        if len(a) > len(b):
                            a = a[:-1]
                        else:
                            b = b[:-1]
                    seq = [special(cls)] + a + [special(sep)] + b + [special(sep)]
                    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            elif len(texts) == 1:
                a = a[:MAX_LENGTH - 2]
                seq = [special(cls)] + a + [special(sep)] if fairseq else a + [special(eos)]
            else:
                b = encode(texts[1])
                for _ in range(len(a) + len(b) - (MAX_LENGTH - (4 if fairseq else 2))):
                    if len(a) > len(b):
                        a = a[:-1]
                    else:
                        b = b[:-1]
                if fairseq:
                    seq = [special(cls)] + a + [special(sep), special(sep)] + b + [special(sep)]
                else:
                    seq = a + [special(eos)] + b + [special(eos)]
            w.write(json.dumps({
                'ids': [t[0] for t in seq],
                'type_ids': types or [0] * len(seq),
                'offsets': [t[1] for t in seq],
                'char_offsets': [t[2] for t in seq],
            }) + '\n')


if __name__ == '__main__':
    main()
