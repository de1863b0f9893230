"""spm_train.py trains the SentencePiece models of the oracle tests with
the real SentencePiece library (Debian's python3-sentencepiece):

  unigram-nmt.model      unigram, nmt_nfkc normalisation (its precompiled
                         charsmap is what XLM-R style tokenizer.json files
                         carry), XLM-R's piece layout
  unigram-bytes.model    unigram with byte_fallback, identity normalisation
  unigram-deberta.model  unigram, nmt_nfkc, DeBERTa-v2/v3's spm.model layout:
                         [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3

and writes, beside each, <name>.pieces.json: the pieces, scores and types
and the charsmap, which build.js turns into tokenizer.json files.

usage: python3 spm_train.py TRAIN_TEXT OUT_DIR
"""
import base64
import json
import os
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb


def train(text, out_dir, name, **kw):
    prefix = os.path.join(out_dir, name)
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, model_type='unigram',
        character_coverage=0.9995, num_threads=1, minloglevel=2,
        # Deterministic: no sampling of the input sentences.
        input_sentence_size=0, shuffle_input_sentence=False, **kw)
    os.remove(prefix + '.vocab')
    m = pb.ModelProto()
    with open(prefix + '.model', 'rb') as f:
        m.ParseFromString(f.read())
    dump = {
        'pieces': [[p.piece, p.score, int(p.type)] for p in m.pieces],
        'precompiled_charsmap': base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode(),
        'add_dummy_prefix': m.normalizer_spec.add_dummy_prefix,
        'remove_extra_whitespaces': m.normalizer_spec.remove_extra_whitespaces,
    }
    with open(prefix + '.pieces.json', 'w') as f:
        json.dump(dump, f, ensure_ascii=False)


def main():
    text, out_dir = sys.argv[1], sys.argv[2]
    train(text, out_dir, 'unigram-nmt', vocab_size=3000, normalization_rule_name='nmt_nfkc')
    train(text, out_dir, 'unigram-bytes', vocab_size=1500, normalization_rule_name='identity',
          byte_fallback=True)
    train(text, out_dir, 'unigram-deberta', vocab_size=2000, normalization_rule_name='nmt_nfkc',
          pad_id=0, pad_piece='[PAD]', bos_id=1, bos_piece='[CLS]', eos_id=2, eos_piece='[SEP]',
          unk_id=3, unk_piece='[UNK]')


if __name__ == '__main__':
    main()
