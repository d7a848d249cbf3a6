"""Training under `tf.distribute`: two replicas on two logical CPU devices.

Each run on two replicas is a subprocess (`tests.training.replicas`), since
logical devices must be configured before TensorFlow first uses one; the run
it is compared with, on one device, trains in the test's process.
"""

import csv
import json
import os
import socket
import subprocess
import sys

import pytest

from tests.training import replicas as replica_jobs
from tests.training.tiny import TEXT, tiny_recipe
from training import train as train_cli
from training.runs import runs
from training.tasks import recipes

# Two replicas sum their gradients in another order than one device does.
TOLERANCE = 1e-3


def on_two_replicas(job, *args):
    """Runs `tests.training.replicas` on two logical CPUs; its JSON."""
    env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.training.replicas", "2", job, *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def train_both(tmp_path, recipe):
    """The recipe trained on one device (here) and on two replicas."""
    paths = {}
    for distribute in ("none", "mirrored"):
        paths[distribute] = tmp_path / f"{distribute}.json"
        paths[distribute].write_text(
            json.dumps(recipe.with_values({"train.distribute": distribute}).to_dict())
        )
    one = replica_jobs.train(str(paths["none"]), str(tmp_path / "none"))
    two = on_two_replicas("train", str(paths["mirrored"]), str(tmp_path / "mirrored"))
    return json.loads(json.dumps(one)), two


@pytest.mark.processes
def test_every_cell_trains_a_step_on_two_replicas():
    losses = on_two_replicas("cells")
    assert losses.pop("replicas") == 2
    import zoo

    assert sorted(losses) == zoo.available_cells()
    for cell, loss in losses.items():
        assert loss is not None, f"{cell}: no weight changed"
        assert 0 < loss < 10, cell


@pytest.mark.processes
def test_main_recipe_on_two_replicas_matches_one_device(tmp_path):
    one, two = train_both(tmp_path, tiny_recipe("closing_bracket"))
    assert (one["replicas"], two["replicas"]) == (1, 2)
    assert two["loss"] == pytest.approx(one["loss"], rel=TOLERANCE)
    for split in ("valid", "test"):
        assert two["metrics"][split]["pooled_accuracy"] == pytest.approx(
            one["metrics"][split]["pooled_accuracy"], abs=TOLERANCE
        )


@pytest.mark.processes
def test_language_model_on_two_replicas_matches_one_device(tmp_path):
    text_file = tmp_path / "corpus.txt"
    text_file.write_text(TEXT)
    recipe = tiny_recipe(
        "language_model",
        text_file,
        # Stateless windows (stateful is refused under a strategy); no dropout,
        # whose masks the replicas draw from other random streams.
        ["train.stateful=false", "model.dropout=0.0", "model.output_dropout=0.0"],
    )
    one, two = train_both(tmp_path, recipe)
    assert (one["replicas"], two["replicas"]) == (1, 2)
    assert two["loss"] == pytest.approx(one["loss"], rel=TOLERANCE)
    for split in ("valid", "test"):
        assert two["metrics"][split]["cross_entropy"] == pytest.approx(
            one["metrics"][split]["cross_entropy"], rel=TOLERANCE
        )


def test_stateful_under_a_strategy_is_refused_in_one_line():
    with pytest.raises(recipes.RecipeError, match="expected train.stateful=false"):
        recipes.resolve(
            "ptb_word_lstm",
            "small",
            ["train.stateful=true", "train.distribute=mirrored"],
        )


def test_unknown_distribute_is_refused_in_one_line():
    with pytest.raises(recipes.RecipeError, match="Unknown train.distribute 'tpu'"):
        recipes.resolve("dyck2_lstm", "small", ["train.distribute=tpu"])


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("localhost", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def log_loss(run_dir):
    with (run_dir / runs.LOG).open() as log:
        return float(list(csv.DictReader(log))[-1]["loss"])


@pytest.mark.processes
def test_two_workers_write_one_run_and_match_one_process(tmp_path):
    env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
    }
    train = [sys.executable, "-m", "training.train", "tiny_dyck_lstm"]
    cluster = {"worker": [f"localhost:{port}" for port in free_ports(2)]}
    workers = [
        subprocess.Popen(
            [
                *train,
                "train.distribute=multi_worker",
                "--run-dir",
                str(tmp_path / "mw"),
            ],
            env={
                **env,
                "TF_CONFIG": json.dumps(
                    {"cluster": cluster, "task": {"type": "worker", "index": index}}
                ),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index in range(2)
    ]
    # The one process they are compared with trains here, meanwhile.
    try:
        single = train_cli.main(
            ["tiny_dyck_lstm", "--no-export", "--run-dir", str(tmp_path / "single")]
        )
    finally:
        outputs = [worker.communicate(timeout=500)[0] for worker in workers]
    assert single == 0
    for worker, output in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, output[-3000:]
    assert "run directory:" in outputs[0]  # worker 0 is the chief
    assert "the chief wrote the run directory" in outputs[1]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mw", "single"]
    assert (tmp_path / "mw" / runs.METRICS).exists()
    assert log_loss(tmp_path / "mw") == pytest.approx(
        log_loss(tmp_path / "single"), rel=TOLERANCE
    )
