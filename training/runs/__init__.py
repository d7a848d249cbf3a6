"""The runs floor: a run directory, trained into, read back and used.

`run_dirs` says who owns a run directory and in which state it is (the
folders training may write, the lock, folder swaps, its JSON files);
`runs` trains a resolved recipe into one (`train_run`) and rebuilds its
model without data (`load_run`, presets alike); `evaluation`, `generation`
and `saved_model` evaluate, sample from and export a finished run. What
stands here knows tasks (`training.tasks`) and the fit core
(`training.core`); the reproduction tables and the analyses stand on it.
"""
