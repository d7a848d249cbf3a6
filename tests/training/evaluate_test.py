import shutil
from pathlib import Path

import pytest

from training.analysis.dynamic import evaluate_dynamic
from training.evaluate import main
from training.runs import runs
from training.runs.evaluation import evaluate_run


def test_evaluation_repeats_the_runs_metrics_and_writes_them(dyck_run):
    task, metrics = evaluate_run(dyck_run, "test")
    assert metrics == runs.read_json(dyck_run / "metrics.json")["test"]
    assert runs.read_json(dyck_run / "evaluation-test.json") == metrics
    assert task.report(metrics, "test").startswith("test: WCPA ")


def test_bad_split_or_directory(dyck_run, tmp_path):
    with pytest.raises(ValueError, match="Unknown split 'long_120'"):
        evaluate_run(dyck_run, "long_120")
    with pytest.raises(runs.RunError, match="does not exist"):
        evaluate_run(tmp_path / "missing")


@pytest.fixture(scope="module")
def text_run(tmp_path_factory, tiny_runs):
    """A tiny language-model run whose corpus (a text that repeats) stays: a
    copy of the shared one (`tiny_runs`), which these tests write into."""
    _, run_dir, _ = tiny_runs("language_model")
    return Path(shutil.copytree(run_dir, tmp_path_factory.mktemp("text") / "run"))


def test_dynamic_evaluation_learns_the_repeating_test_text(text_run, capsys):
    best = (text_run / runs.BEST).read_bytes()
    argv = [str(text_run), "--dynamic", "--learning-rate", "5", "--segment", "6"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = runs.read_json(text_run / "evaluation-test-dynamic.json")
    static, dynamic_ = result["static"], result["dynamic"]
    assert dynamic_["cross_entropy"] < 0.85 * static["cross_entropy"]
    assert f"perplexity {static['perplexity']:.2f}" in printed
    assert f"perplexity {dynamic_['perplexity']:.2f}" in printed
    assert result["settings"]["learning_rate"] == 5.0
    assert (text_run / runs.BEST).read_bytes() == best  # the saved model is kept


def test_dynamic_evaluation_without_a_learning_rate_is_the_static_one(text_run):
    _, result = evaluate_dynamic(text_run, "valid", learning_rate=0.0, rms=True)
    assert result["dynamic"]["cross_entropy"] == pytest.approx(
        result["static"]["cross_entropy"], rel=1e-5
    )
    assert result["settings"]["rms"] is True


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dynamic"], "Dynamic evaluation needs a run of task kind language_model"),
        (["--decay", "0.1"], "--decay need --dynamic"),
        (["--dynamic", "--rms-segments", "3"], "--rms-segments needs --rms"),
        (["--dynamic", "--rms", "--segment", "0"], "--segment must be at least 1"),
    ],
)
def test_bad_dynamic_evaluation_is_one_line(dyck_run, extra, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(dyck_run), *extra])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--decay", "2"], "`--decay` must be in [0, 1]; received 2.0."),
        (["--learning-rate", "nan"], "`--learning-rate` must be a finite number"),
        (["--learning-rate=-inf"], "`--learning-rate` must be a finite number"),
        # Finite, but so large that the weights overflow: refused, not written.
        (["--learning-rate", "1e30"], "Dynamic evaluation diverged"),
    ],
)
def test_bad_dynamic_settings_keep_the_earlier_result(text_run, capsys, extra, message):
    earlier = text_run / "evaluation-valid-dynamic.json"
    earlier.write_text('{"earlier": true}\n')
    with pytest.raises(SystemExit) as exit_:
        main([str(text_run), "--split", "valid", "--dynamic", *extra])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert earlier.read_text() == '{"earlier": true}\n'


def test_a_nan_is_never_written_as_json(tmp_path):
    path = tmp_path / "metrics.json"
    with pytest.raises(runs.RunError, match="dynamic.perplexity is nan, which JSON"):
        runs.write_json(path, {"dynamic": {"perplexity": float("nan")}})
    assert not path.exists()
