"""`python -m training.syntax` on tiny PTB- and WikiText-style runs.

The runs are trained (seconds) on small files written in each corpus's
conventions under the corpus's file names; the suites are written by the
tests in BLiMP's JSON Lines form, with case and punctuation, and in Marvin &
Linzen's JSON form.
"""

import json
import shutil
from pathlib import Path

import pytest

from tests.training.migrate_test import refused_until_migrated
from tests.training.tiny import TINY
from training import syntax
from training.data import files, minimal_pairs
from training.runs import runs
from training.tasks import recipes

PTB_TEXT = (
    "susan revealed herself\n"
    "the men revealed themselves\n"
    "renee has n't hurt herself\n"
    "the girls have n't hurt themselves\n"
    "the author laughs\n"
    "the authors laugh\n"
    "no author has ever been here\n"
    "john 's N cats are n't here\n"
) * 30
WIKITEXT_TEXT = (
    " Susan revealed herself . \n"
    " The men revealed themselves . \n"
    " Renee hasn 't hurt herself . \n"
    " The girls haven 't hurt themselves . \n"
    " the author laughs , the authors laugh . \n"
    " no author has ever been here . \n"
    " John 's 1 @,@ 000 cats aren 't here . \n"
) * 30
# Pairs as BLiMP writes them: each sentence ends in a full stop, so before
# the conventions were applied every word that tells a pair apart
# ("herself.", "themselves.") was unknown and no pair could be scored.
BLIMP = [
    ("Susan revealed herself.", "Susan revealed themselves."),
    ("Renee hasn't hurt herself.", "Renee hasn't hurt themselves."),
    ("The men revealed themselves.", "The men revealed herself."),
    ("The girls haven't hurt themselves.", "The girls haven't hurt herself."),
]
SCORED = ("Susan revealed herself.", "Susan revealed themselves.")
UNKNOWN = ("Susan revealed zebras.", "Susan revealed lions.")  # both <unk>
PUNCTUATION = ("Did Susan reveal herself?", "Did Susan reveal herself.")


def write_blimp(path, pairs):
    """A suite in BLiMP's JSON Lines form."""
    lines = [
        {"sentence_good": good, "sentence_bad": bad, "UID": path.stem}
        for good, bad in pairs
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def write_marvin_linzen(data_dir):
    """Marvin & Linzen's 22 test sets in their JSON form, one item each."""
    folder = data_dir / minimal_pairs.MARVIN_LINZEN
    folder.mkdir(parents=True)
    for category, suites in minimal_pairs.CATEGORIES.items():
        for suite in suites:
            item = ["the author laughs", "the author laugh"]
            if category == "npi":
                item = ["no author has ever been here", *item]
            (folder / f"{suite}.json").write_text(json.dumps({"sing": [item]}))
    return data_dir


@pytest.fixture(scope="module")
def style_runs(tmp_path_factory):
    """`{"ptb": run_dir, "wikitext": run_dir}`, tiny runs of `task.corpus`
    ptb and wikitext2 trained on the texts above."""
    data = tmp_path_factory.mktemp("data")
    (data / "ptb").mkdir()
    (data / "wikitext-2").mkdir()
    for split in ("train", "valid", "test"):
        (data / "ptb" / f"ptb.{split}.txt").write_text(PTB_TEXT)
        (data / "wikitext-2" / f"wiki.{split}.tokens").write_text(WIKITEXT_TEXT)
    made = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(files.ACCEPT_MODIFIED_VAR, "1")  # not the real corpora
        for name, corpus in (("ptb", "ptb"), ("wikitext", "wikitext2")):
            recipe = recipes.resolve(
                "ptb_word_lstm",
                "small",
                [
                    *TINY["language_model"],
                    f"task.corpus={corpus}",
                    f"task.data_dir={data}",
                ],
            )
            made[name] = tmp_path_factory.mktemp(name) / "run"
            runs.train_run(recipe, made[name])
    return made


def score(argv, capsys):
    """`training.syntax`'s exit status, printed report and syntax.json."""
    status = syntax.main(argv)
    out = Path(argv[argv.index("--out") + 1])
    return (
        status,
        capsys.readouterr().out,
        json.loads((out / "syntax.json").read_text()),
    )


@pytest.mark.parametrize("conventions", ["ptb", "wikitext"])
def test_a_blimp_suite_is_read_in_the_runs_conventions(
    style_runs, tmp_path, capsys, conventions
):
    run = style_runs[conventions]
    suite = write_blimp(tmp_path / "anaphor_number_agreement.jsonl", BLIMP)
    out = str(tmp_path / "out")
    status, printed, result = score([str(run), "--suite", suite, "--out", out], capsys)
    assert status == 0
    assert result["conventions"] == conventions
    assert result["overall"]["scored"] == len(BLIMP)
    assert result["overall"]["with_oov"] == 0
    assert printed.splitlines()[0] == (
        f"conventions {conventions}: 4 of 4 pairs scored (100.0%), 0 of them "
        "with an OOV word (scored as <unk>); 0 skipped"
    )
    vocabulary = json.loads((run / runs.VOCABULARY).read_text())
    assert vocabulary["conventions"] == conventions  # recorded when trained


@pytest.mark.parametrize("conventions", ["ptb", "wikitext"])
def test_the_marvin_linzen_form_is_read_in_both_conventions(
    style_runs, tmp_path, capsys, conventions
):
    data = write_marvin_linzen(tmp_path / "data")
    out = str(tmp_path / "out")
    argv = [str(style_runs[conventions]), "--data-dir", str(data), "--out", out]
    status, _, result = score(argv, capsys)
    assert status == 0 and result["conventions"] == conventions
    # 18 pairs and 4 NPI triples of three contrasts each, all scored.
    assert result["overall"] == {**result["overall"], "pairs": 30, "scored": 30}


def test_a_run_from_before_the_conventions_were_recorded_reads_once_migrated(
    style_runs, tmp_path, capsys
):
    old = tmp_path / "old"
    shutil.copytree(style_runs["ptb"], old)
    vocabulary = json.loads((old / runs.VOCABULARY).read_text())
    del vocabulary["conventions"]
    (old / runs.VOCABULARY).write_text(json.dumps(vocabulary))
    suite = write_blimp(tmp_path / "suite.jsonl", BLIMP)
    out = str(tmp_path / "out")
    argv = [str(old), "--suite", suite, "--out", out]
    printed = refused_until_migrated(syntax.main, argv, old / runs.VOCABULARY, capsys)
    assert printed.startswith(f'{old}: vocabulary.json: conventions "ptb"')
    status, printed, result = score(argv, capsys)
    # The recipe's corpus, ptb, says which conventions.
    assert status == 0 and result["conventions"] == "ptb"
    assert result["overall"]["scored"] == len(BLIMP)
    assert printed.startswith("conventions ptb: 4 of 4 pairs scored (100.0%)")


@pytest.mark.parametrize(
    "pairs, message",
    [
        (
            [UNKNOWN, PUNCTUATION],
            "Only 0 of 2 minimal pairs can be scored with this run's word-level "
            "vocabulary in ptb conventions (skipped 1: the same text once written in "
            "the conventions; 1: the words that tell them apart are all outside the "
            "vocabulary); expected at least half",
        ),
        ([SCORED, UNKNOWN, PUNCTUATION], "Only 1 of 3 minimal pairs can be scored"),
    ],
)
def test_fewer_than_half_scored_is_one_line_and_status_2(
    style_runs, tmp_path, capsys, pairs, message
):
    suite = write_blimp(tmp_path / "suite.jsonl", pairs)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        syntax.main([str(style_runs["ptb"]), "--suite", suite, "--out", str(out)])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1, error
    assert not out.exists()
