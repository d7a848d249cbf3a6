import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from tests.training.tiny import TEXT, TINY_TABLE, tiny_recipe
from training.core import plots
from training.data import (
    blimp_sentences,
    corpora,
    dyck_strings,
    files,
    one_edit,
    recognition_sets,
)
from training.runs import runs


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    return path


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory):
    """`runs_of(kind)`: the recipe, run directory and `train_run`'s return of
    `tiny_recipe(kind)`, trained the first time a test of this process asks
    for the kind and shared by the tests that only read it (a language model
    reads `TEXT` from a file beside the runs; acceptability's suites are
    there too)."""
    folder = tmp_path_factory.mktemp("tiny_runs")
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT)
    made = {}

    def runs_of(kind):
        if kind not in made:
            recipe = tiny_recipe(kind, corpus)
            made[kind] = recipe, folder / kind, runs.train_run(recipe, folder / kind)
        return made[kind]

    return runs_of


@pytest.fixture(scope="session")
def dyck_run(tiny_runs):
    """A finished tiny Dyck language-model run directory: `tiny_runs`' own
    (`tiny_recipe("dyck")`, trained once for both)."""
    return tiny_runs("dyck")[1]


@pytest.fixture(scope="session")
def language_model_run(tmp_path_factory, tiny_runs):
    """A finished tiny language-model run whose corpus file has been deleted.

    `tiny_runs`' language model, copied into a folder of its own and told
    its corpus is `TEXT` in a file there, which is then deleted: the run
    `train_text_run` trains there, file for file, without training it again
    (training reads the text, not the file's name).
    """
    folder = tmp_path_factory.mktemp("language_model")
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT)
    run_dir = Path(shutil.copytree(tiny_runs("language_model")[1], folder / "run"))
    recipe = runs.read_recipe(run_dir / runs.RECIPE)
    moved = recipe.with_values({"task.corpus": f"file:{corpus}"})
    runs.write_json(run_dir / runs.RECIPE, moved.to_dict())
    corpus.unlink()  # what follows needs the run, not the corpus
    return run_dir


@pytest.fixture
def no_data(monkeypatch):
    """Makes generating or reading any task's data an error."""

    def refuse(*args, **kwargs):
        raise AssertionError("data were generated or read")

    monkeypatch.delenv(files.ENV_VAR, raising=False)
    monkeypatch.setattr(dyck_strings, "dyck_splits", refuse)
    monkeypatch.setattr(recognition_sets, "mali_splits", refuse)
    monkeypatch.setattr(one_edit, "hard_splits", refuse)
    monkeypatch.setattr(corpora, "load_corpus", refuse)
    monkeypatch.setattr(blimp_sentences, "load_suites", refuse)


@pytest.fixture
def tiny_table(tmp_path):
    """The path of a file holding `TINY_TABLE` (two rows of `tiny_dyck_lstm`)."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TABLE)
    return path


@pytest.fixture
def drawn_figures(monkeypatch):
    """The figures `plots.save` is given, drawn and kept open instead of written."""
    figures = []

    def keep(fig, path):
        fig.draw_without_rendering()  # as saving lays it out
        figures.append(fig)
        return path

    monkeypatch.setattr(plots, "save", keep)
    yield figures
    for fig in figures:
        plt.close(fig)
