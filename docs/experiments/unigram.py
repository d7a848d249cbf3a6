"""Unigram perplexity of a language-model run's test split (train counts, add-one)."""
import sys
import numpy as np
from training import runs
_, _, task, _ = runs.load_run(sys.argv[1])
train, test = (np.asarray(task.encoded[s].ids) for s in ("train", "test"))
counts = np.bincount(train, minlength=max(train.max(), test.max()) + 1) + 1.0
logp = np.log(counts / counts.sum())
print(f"unigram test perplexity {np.exp(-logp[test].mean()):.1f} ({test.size:,} tokens)")
