import json
from pathlib import Path

import keras
import pytest

from training import analyze, syntax
from training.analysis import pabs, run_inputs
from training.runs import run_files, runs
from training.tasks import make_task, recipes

TEXT = "the cat sat on the mat\nthe dog sat on the log\nno dogs sat\n" * 20


def make_run(tmp_path, name, recipe_name, overrides=(), seed=0):
    """A run directory as training leaves it, with untrained weights (no fit).

    The weights are drawn from `seed`, not the recipe's `train.seed`: they
    are not the run's initial ones (`runs.initial_model`).
    """
    keras.utils.set_random_seed(seed)
    recipe = recipes.resolve(recipe_name, "small", list(overrides))
    task = make_task(recipe)
    run_dir = tmp_path / name
    run_dir.mkdir()
    run_files.record(run_dir, runs.RECIPE, runs.VOCABULARY, runs.BEST)
    runs.write_json(run_dir / runs.RECIPE, recipe.to_dict())
    (run_dir / runs.VOCABULARY).write_text(task.vocabulary.to_json())
    task.build_model(stateful=False).save(run_dir / runs.BEST)
    return run_dir


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"{split}.txt").write_text(TEXT)
    return folder


def language_model(
    tmp_path, corpus, name, cell, level="word", options="{}", seed=0, train_seed=0
):
    return make_run(
        tmp_path,
        name,
        "ptb_word_lstm",
        [
            f"train.seed={train_seed}",
            f"task.corpus=file:{corpus}",
            f"task.level={level}",
            f"model.cell={cell}",
            f"model.options={options}",
            "model.units=4",
            "model.embedding_dim=4",
            "model.num_layers=1",
            "model.tie_embeddings=false",
            "task.sequence_length=10",
            "train.batch_size=2",
        ],
        seed=seed,
    )


@pytest.fixture(scope="module")
def refused_lm(tmp_path_factory):
    """An LSTM language-model run (`language_model(..., "lm", "lstm")`) for the
    refusals, which read it and write nothing: made once for them all."""
    folder = tmp_path_factory.mktemp("refused")
    (folder / "corpus").mkdir()
    for split in ("train", "valid", "test"):
        (folder / "corpus" / f"{split}.txt").write_text(TEXT)
    return language_model(folder, folder / "corpus", "lm", "lstm")


def test_surprisal_of_two_character_runs(tmp_path, corpus, capsys):
    runs_ = [
        language_model(tmp_path, corpus, name, cell, level="char")
        for name, cell in (("a", "mlstm"), ("b", "lstm"))
    ]
    assert (
        analyze.main(["surprisal", *map(str, runs_), "--out", str(tmp_path / "o")]) == 0
    )
    result = json.loads((tmp_path / "o" / "surprisal.json").read_text())
    assert len(result["after"]) == 2 and len(result["after"][0]) == 5
    verdicts = ("holds", "reversed", "within the interval")
    assert result["advantage"]["verdict"] in verdicts
    assert (tmp_path / "o" / "surprisal.png").is_file()
    out = capsys.readouterr().out
    assert "bits at 0..4 steps after" in out
    assert "more at 1..4 steps after a surprising input (95% interval" in out


def test_pabs_and_routing_of_a_second_order_run(tmp_path, corpus):
    run = language_model(
        tmp_path, corpus, "so", "second_order_lstm", options='{"num_cells": 3}'
    )
    out = tmp_path / "o"
    assert analyze.main(["pabs", str(run), "--out", str(out)]) == 0
    assert len(json.loads((out / "pabs.json").read_text())["so"]) == 3
    assert analyze.main(["routing", str(run), "--out", str(out), "--samples", "2"]) == 0
    assert (out / "routing-so-second_order_lstm_0.png").is_file()
    table = (out / "routing-so.csv").read_text().splitlines()
    assert table[0] == "layer,group,token,count,winner,weight_0,weight_1,weight_2"
    assert any(line.split(",")[2] == "sat" for line in table[1:])


def test_routing_reads_text_as_the_run_writes_it_and_refuses_unknown_words(
    tmp_path, corpus, capsys
):
    run = language_model(
        tmp_path, corpus, "so", "second_order_lstm", options='{"num_cells": 2}'
    )
    out = tmp_path / "o"
    assert (
        analyze.main(["routing", str(run), "--out", str(out), "--text", "the  dog"])
        == 0
    )
    table = (out / "routing-so.csv").read_text().splitlines()
    assert {line.split(",")[2] for line in table[1:]} == {"<eos>", "the", "dog"}
    with pytest.raises(SystemExit) as exit_:
        analyze.main(["routing", str(run), "--out", str(out), "--text", "the zebra"])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "tokens that are not in the vocabulary of this model: `zebra` (" in error


def json_of(value):
    return json.loads(json.dumps(value))


def test_pabs_init_draws_each_run_at_initialization(tmp_path, corpus, capsys):
    run = language_model(
        tmp_path,
        corpus,
        "so",
        "second_order_lstm",
        options='{"num_cells": 3}',
        train_seed=5,
    )
    out = tmp_path / "o"
    assert analyze.main(["pabs", str(run), "--init", "--out", str(out)]) == 0
    angles = json.loads((out / "pabs.json").read_text())
    assert set(angles) == {"so", "so@init"}
    initial = pabs.pairwise_angles(runs.initial_model(run))
    assert angles["so@init"] == json_of(initial) != angles["so"]
    assert angles["so"] == json_of(pabs.pairwise_angles(runs.load_run(run).model))
    assert (out / "pabs-so.png").is_file() and not (out / "pabs-so@init.png").exists()
    summary = (out / "pabs-summary.csv").read_text().splitlines()
    assert summary[0] == "set,pairs,angles,min,median,max"
    assert [line.split(",")[:3] for line in summary[1:]] == [
        ["so", "3", "12"],
        ["so@init", "3", "12"],
    ]
    printed = capsys.readouterr().out.splitlines()
    assert "so@init second_order_lstm_0 cells cell 0 / cell 1: " in printed[3]
    assert ", median " in printed[3]
    assert printed[6].startswith("so: median ")
    assert printed[7].startswith("so@init: median ")
    assert printed[7].endswith(" over 12 angles of 3 pairs")


def test_pabs_across_two_lstm_runs(tmp_path, corpus, capsys):
    made = [  # weights from 1 and 2, initial weights from train.seed 3 and 4
        language_model(tmp_path, corpus, name, "lstm", seed=seed, train_seed=seed + 2)
        for name, seed in (("a", 1), ("b", 2))
    ]
    out = tmp_path / "o"
    argv = ["pabs", "--across", *map(str, made), "--init", "--out", str(out)]
    assert analyze.main(argv) == 0
    angles = json.loads((out / "pabs.json").read_text())
    assert set(angles) == {"a / b", "a@init / b@init"}
    a, b = (runs.load_run(run).model for run in made)
    assert angles["a / b"] == json_of(pabs.cross_angles(a, b))
    a, b = map(runs.initial_model, made)
    assert angles["a@init / b@init"] == json_of(pabs.cross_angles(a, b))
    assert angles["a@init / b@init"] != angles["a / b"]
    (result,) = angles["a / b"]
    assert (result["layer"], result["group"], result["pair"]) == (
        "lstm_0",
        "cell",
        "recurrent kernel",
    )
    assert result["rank"] == 4 and min(result["angles"]) > 0
    assert (out / "pabs-a-vs-b.png").is_file()
    printed = capsys.readouterr().out
    assert "a / b lstm_0 cell recurrent kernel: " in printed
    assert "\na@init / b@init: median " in printed
    assert printed.endswith(" over 4 angles of 1 pair\nwrote " + str(out) + "\n")


def test_pabs_across_other_architectures_is_one_line(tmp_path, corpus, capsys):
    so = language_model(
        tmp_path, corpus, "so", "second_order_lstm", options='{"num_cells": 2}'
    )
    lm = language_model(tmp_path, corpus, "lm", "lstm")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exit_:
        analyze.main(
            ["pabs", "--across", str(lm), str(so), "--out", str(tmp_path / "o")]
        )
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1, error
    assert "compares models of one architecture" in error
    assert "lstm_0 cell: 1 x (16, 4) and " in error
    assert "second_order_lstm_0 cells: 2 x (16, 4)." in error
    assert sorted(tmp_path.rglob("*")) == before


def test_stack_and_ldpa(tmp_path, capsys):
    stack_run = make_run(
        tmp_path,
        "stack",
        "recognition_d2_diffstk_rnn",
        ["task.split_scale=0.005", "model.units=4", "model.options.stack_depth=8"],
    )
    out = tmp_path / "o"
    assert (
        analyze.main(["stack", str(stack_run), "--out", str(out), "--samples", "1"])
        == 0
    )
    result = json.loads((out / "stack.json").read_text())["stack"]
    assert 0 <= result["pda_agreement"] <= 1 and result["steps"] > 0
    assert "correct PDA's on" in capsys.readouterr().out
    dyck_run = make_run(
        tmp_path,
        "dyck",
        "tiny_dyck_lstm",
        ["task.train_sequences=8", "task.dev_sequences=8", "task.test_sequences=8"],
    )
    assert analyze.main(["ldpa", str(dyck_run), "--out", str(out)]) == 0
    assert (out / "ldpa.csv").read_text().startswith("run,distance,ldpa,positions")


def test_runs_of_the_same_folder_name_keep_their_own_results(tmp_path, corpus):
    # The runner's layout: OUT/runs/ROW/seed-N, so every row has a "seed-0".
    made = []
    for row, choices in (("k2", 2), ("k3", 3)):
        (tmp_path / row).mkdir()
        options = f'{{"num_choices": {choices}}}'
        made.append(
            language_model(tmp_path / row, corpus, "seed-0", "mmlstm", options=options)
        )
    out = tmp_path / "o"
    assert analyze.main(["pabs", *map(str, made), "--out", str(out)]) == 0
    angles = json.loads((out / "pabs.json").read_text())
    # Per gate (4), 2 choice matrices give 1 pair and 3 give 3: neither run's
    # angles replaced the other's.
    assert {name: len(pairs) for name, pairs in angles.items()} == {
        "k2-seed-0": 4,
        "k3-seed-0": 12,
    }
    assert (out / "pabs-k2-seed-0.png").is_file()
    assert (out / "pabs-k3-seed-0.png").is_file()
    assert analyze.main(["routing", *map(str, made), "--out", str(out)]) == 0
    assert (out / "routing-k2-seed-0.csv").is_file()
    assert (out / "routing-k3-seed-0.csv").is_file()


def test_a_run_given_twice_is_one_line_and_status_2(tmp_path, refused_lm, capsys):
    lm = str(refused_lm)
    with pytest.raises(SystemExit) as exit_:
        analyze.main(["surprisal", lm, lm + "/", "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "given twice" in error and len(error.strip().splitlines()) == 1


def test_syntax_on_a_json_lines_suite(tmp_path, corpus, capsys):
    run = language_model(tmp_path, corpus, "lm", "lstm")
    suite = tmp_path / "suite.jsonl"
    lines = [
        {"sentence_good": "the cat sat", "sentence_bad": "the cat sit"},
        {"sentence_good": "the dogs sat", "sentence_bad": "the dog sat"},
    ]
    suite.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert (
        syntax.main([str(run), "--suite", str(suite), "--out", str(tmp_path / "o")])
        == 0
    )
    result = json.loads((tmp_path / "o" / "syntax.json").read_text())
    assert (
        result["overall"]["scored"] == 2 and result["overall"]["with_oov"] == 1
    )  # sit
    assert "overall" in capsys.readouterr().out
    out = str(tmp_path / "every")
    assert (
        syntax.main([str(run), "--suite", str(suite), "--out", out, "--every", "2"])
        == 0
    )
    result = json.loads((tmp_path / "every" / "syntax.json").read_text())
    assert result["overall"]["pairs"] == 1 and result["overall"]["with_oov"] == 1
    with pytest.raises(SystemExit) as exit_:
        syntax.main([str(run), "--suite", str(suite), "--every", "0"])
    assert exit_.value.code == 2
    assert "--every must be at least 1; received 0." in capsys.readouterr().err


@pytest.mark.parametrize(
    "command, message",
    [
        (["pabs", "{lm}"], "second_order_lstm, mmrnn or mmlstm"),
        (["pabs", "{lm}", "--init"], "second_order_lstm, mmrnn or mmlstm"),
        (["pabs", "--across", "{lm}"], "expected two or more run directories"),
        (["surprisal", "{lm}", "--init"], "--init is an option of pabs;"),
        (["ldpa", "{lm}", "--across"], "--across is an option of pabs;"),
        (["stack", "{lm}"], "stack needs a run of task kind recognition"),
        (["ldpa", "{lm}"], "ldpa needs a run of task kind dyck or closing_bracket"),
        (["surprisal", "{lm}", "--split", "train"], "Unknown split 'train'"),
        (["surprisal", "{tmp}/missing"], "does not exist"),
        (["routing", "{lm}", "--samples", "-1"], "`--samples` must be a positive"),
        (["stack", "{lm}", "--samples", "0"], "`--samples` must be a positive"),
        (["surprisal", "{lm}", "--fraction", "nan"], "`--fraction` must be a finite"),
        (["surprisal", "{lm}", "--fraction", "1.5"], "`--fraction` must be in (0, 1]"),
        (["surprisal", "{lm}", "--out", "{file}"], "is a file; expected a folder"),
        (["surprisal", "{lm}", "--out", "{file}/o"], "lies inside the file"),
        # Not writable (refused up front), or for root refused when created.
        (["surprisal", "{lm}", "--out", "/sys/rnn-zoo-out"], "'/sys/rnn-zoo-out'"),
    ],
)
def test_bad_input_is_one_line_and_status_2_and_writes_nothing(
    tmp_path, refused_lm, capsys, command, message
):
    lm = refused_lm
    file = tmp_path / "file.txt"
    file.write_text("not a folder\n")
    argv = [a.format(lm=lm, tmp=tmp_path, file=file) for a in command]
    if "--out" not in argv:  # a new folder, which a refusal must not create
        argv += ["--out", str(tmp_path / "out")]
    before = sorted([*tmp_path.rglob("*"), *lm.parent.rglob("*")])
    with pytest.raises(SystemExit) as exit_:
        analyze.main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1, error
    assert sorted([*tmp_path.rglob("*"), *lm.parent.rglob("*")]) == before
    assert not Path("/sys/rnn-zoo-out").exists()


def test_a_later_runs_refusal_leaves_no_earlier_runs_picture(tmp_path, corpus):
    so = language_model(
        tmp_path, corpus, "so", "second_order_lstm", options='{"num_cells": 2}'
    )
    lm = language_model(tmp_path, corpus, "lm", "lstm")
    for what in ("pabs", "routing"):
        with pytest.raises(SystemExit) as exit_:
            analyze.main([what, str(so), str(lm), "--out", str(tmp_path / "out")])
        assert exit_.value.code == 2
        assert not (tmp_path / "out").exists()


def write_suite(path, pairs):
    lines = [{"sentence_good": good, "sentence_bad": bad} for good, bad in pairs]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_syntax_bad_input_is_one_line_status_2_and_writes_nothing(
    tmp_path, corpus, refused_lm, capsys
):
    lm = str(refused_lm)
    characters = str(language_model(tmp_path, corpus, "chars", "lstm", level="char"))
    dyck_run = make_run(tmp_path, "dyck", "tiny_dyck_lstm", ["task.test_sequences=8"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"sentence_good": "the cat sat"}) + "\n")
    good = write_suite(tmp_path / "good.jsonl", [("the cat sat", "the cat sit")])
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(Path(good).read_text().replace("sit", "sít").encode("latin-1"))
    # Punctuation the vocabulary lacks: both sentences of a pair become the
    # same ids, as a suite with punctuation does on a PTB vocabulary.
    punctuated = [("the cat sat.", "the cat sat!"), ("the dog sat.", "the dog sat?")]
    unscorable = write_suite(tmp_path / "punct.jsonl", punctuated)
    one_of_three = write_suite(
        tmp_path / "third.jsonl", [("the cat sat", "the cat sit"), *punctuated]
    )
    file = tmp_path / "file.txt"
    file.write_text("not a folder\n")
    for argv, message in (
        ([lm, "--suite", str(bad)], "bad.jsonl:1: expected a JSON object"),
        ([str(dyck_run), "--suite", str(bad)], "needs a run of task kind"),
        ([lm, "--suite", str(latin1)], "latin1.jsonl: not UTF-8 text"),
        (
            [characters, "--suite", unscorable],
            "Only 0 of 2 minimal pairs can be scored with this run's char-level "
            "vocabulary in characters conventions (skipped 2: the words that tell "
            "them apart are all outside the vocabulary)",
        ),
        ([lm, "--suite", one_of_three], "Only 1 of 3 minimal pairs can be scored"),
        ([lm, "--suite", good, "--out", str(file)], "is a file; expected a folder"),
        ([lm, "--suite", good, "--out", f"{file}/o"], "lies inside the file"),
        ([lm, "--suite", good, "--out", "/sys/rnn-zoo-out"], "'/sys/rnn-zoo-out'"),
    ):
        before = sorted([*tmp_path.rglob("*"), *refused_lm.parent.rglob("*")])
        with pytest.raises(SystemExit) as exit_:
            syntax.main(argv)
        assert exit_.value.code == 2
        error = capsys.readouterr().err
        assert message in error and len(error.strip().splitlines()) == 1, error
        after = sorted([*tmp_path.rglob("*"), *refused_lm.parent.rglob("*")])
        assert after == before, argv


def test_an_empty_split_is_one_line_and_status_2(tmp_path, corpus, capsys):
    lm = language_model(tmp_path, corpus, "lm", "lstm")
    (corpus / "test.txt").write_text("\n")
    with pytest.raises(SystemExit) as exit_:
        analyze.main(["surprisal", str(lm), "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2
    assert "expected at least" in capsys.readouterr().err


def test_ldpa_takes_a_dyck_rnn_preset(tmp_path):
    # The Dyck-RNN's task kind is closing_bracket; ldpa once refused it.
    out = tmp_path / "ldpa"
    assert analyze.main(["ldpa", "preset:dyck_rnn_m4", "--out", str(out)]) == 0
    assert (out / "ldpa.csv").read_text().startswith("run,distance,ldpa,positions")


def test_a_presets_pictures_and_tables_have_file_names_without_a_colon(tmp_path):
    out = tmp_path / "routing"
    argv = ["routing", "preset:second_order_lstm_dyck_m4", "--samples", "1"]
    assert analyze.main([*argv, "--out", str(out)]) == 0
    assert sorted(path.name for path in out.iterdir()) == [
        "routing-preset-second_order_lstm_dyck_m4-second_order_lstm_0.png",
        "routing-preset-second_order_lstm_dyck_m4.csv",
    ]


def test_runs_whose_names_differ_only_where_a_file_name_cannot_are_refused(
    tmp_path,
):
    first, second = tmp_path / "run:1", tmp_path / "run?1"
    assert run_inputs.run_names([first, tmp_path / "run-2"]) == ["run:1", "run-2"]
    with pytest.raises(ValueError, match=r"^two run directories' paths differ only"):
        run_inputs.run_names([first, second])
