"""Which spelling conventions each corpus writes its text in.

The conventions themselves (PTB's, WikiText's, text8's, ...: natural text
written as a corpus writes it) are `zoo.text_conventions`, TensorFlow ops
that serve Python callers and exported SavedModels alike; this module names
the one of each corpus of `training.data.corpora.CORPORA`, by level.
`for_corpus(corpus, level)` is recorded in `vocabulary.json`
(`Vocabulary.conventions`) when a run is trained (`python -m
training.migrate` writes it into a vocabulary of an earlier format).
"""

from training.data.corpora import CORPORA, FILE_PREFIX
from zoo.text_conventions import AS_WRITTEN

# The convention of each corpus, by level (`None`: whatever the level).
CORPUS_CONVENTIONS = {
    "ptb": {"word": "ptb", "char": "ptb_char"},
    # At byte level the text is the same tokenized files', so `wikitext` too.
    "wikitext2": {"word": "wikitext", "byte": "wikitext"},
    "wikitext103": {"word": "wikitext", "byte": "wikitext"},
    "text8": {None: "text8"},
    "enwik8": {None: "bytes"},
    "tinyshakespeare": {None: "characters"},
}


def for_corpus(corpus, level):
    """The name of the conventions of the recipe corpus `corpus` at `level`.

    A local `file:` corpus, whose conventions are unknown, is taken as
    written (`AS_WRITTEN`).
    """
    if corpus.startswith(FILE_PREFIX):
        return AS_WRITTEN[level]
    if corpus not in CORPORA:
        raise ValueError(
            f"Unknown corpus {corpus!r}; expected one of: {', '.join(CORPORA)}, "
            "or file:PATH."
        )
    by_level = CORPUS_CONVENTIONS[corpus]
    return by_level.get(level, by_level.get(None))
