"""The perplexity a unigram model gets on a language-model run's test split.

    ZOO_DATA_DIR=../shared/data python docs/experiments/unigram.py RUN_DIR

Word probabilities are the training split's counts plus one (add-one), in
the run's own vocabulary and tokenization; REPRODUCTION.md compares runs
with it to tell a model that learned context from one that learned word
frequencies only.
"""

import sys

import numpy as np

from training.runs import runs

_, _, task, _ = runs.load_run(sys.argv[1])
train, test = (np.asarray(task.encoded[s].ids) for s in ("train", "test"))
counts = np.bincount(train, minlength=max(train.max(), test.max()) + 1) + 1.0
log_p = np.log(counts / counts.sum())
perplexity = np.exp(-log_p[test].mean())
print(f"unigram test perplexity {perplexity:.1f} ({test.size:,} tokens)")
