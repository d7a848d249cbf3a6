import os
import subprocess
import sys

import numpy as np
import pytest

from training.generate import generate, sample_next


def test_generation_is_deterministic_for_a_seed(language_model_run, no_data):
    run = language_model_run  # its corpus is gone: sampling needs the run only
    first = generate(run, "the cat", 12, temperature=1.5, seed=3)
    again = generate(run, "the cat", 12, temperature=1.5, seed=3)
    other = generate(run, "the cat", 12, temperature=1.5, seed=4)
    assert first == again and first != other
    assert first.startswith("the cat ") and len(first.split()) == 14
    greedy = generate(run, "the cat", 5, top_k=1, seed=0)
    assert greedy == generate(run, "the cat", 5, top_k=1, seed=9)


def test_top_1_is_the_argmax():
    rng = np.random.default_rng(0)
    assert sample_next([0.1, 2.0, 0.3], 1.0, 1, rng) == 1


@pytest.mark.processes
def test_generate_cli_needs_no_data(language_model_run):
    env = {k: v for k, v in os.environ.items() if k != "ZOO_DATA_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "training.generate", str(language_model_run)]
        + ["--prompt", "the cat", "--length", "4", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("the cat ") and len(done.stdout.split()) == 6


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"length": -1}, "`length` must be >= 0; received -1"),
        ({"temperature": 0}, r"`temperature` must be in \(0, inf\); received 0"),
        ({"top_k": 0}, "`top_k` must be >= 1; received 0"),
    ],
)
def test_bad_arguments(language_model_run, arguments, message):
    with pytest.raises(ValueError, match=message):
        generate(language_model_run, **{"prompt": "the", "length": 3, **arguments})


def test_dyck_generation_stops_at_end(dyck_run):
    # At temperature 5 END is drawn early; nothing may follow it.
    for seed in range(3):
        tokens = generate(dyck_run, "(a", 200, temperature=5.0, seed=seed).split()
        assert "END" in tokens, tokens
        assert tokens.index("END") == len(tokens) - 1, tokens
