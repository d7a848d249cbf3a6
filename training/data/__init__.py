"""Data layer: every training run reads its data from here as tf.data pipelines.

Modules:
    dyck_strings: m-bounded Dyck-k generator, framing, splits (Hewitt et al., 2020).
    languages: the Dyck-n and palindrome languages: alphabets, oracle, prefixes.
    recognition_sets: Dyck-n and palindrome recognition sets (Mali et al., 2020).
    corpora: text corpus loaders (PTB, WikiText, text8, enwik8, Tiny Shakespeare).
    files: locating, verifying (sha256) and downloading the data files.
    tokenize: vocabularies and tensorflow-text tokenization.
    batching: truncated-BPTT batches and the epoch-keyed shuffle.
"""
