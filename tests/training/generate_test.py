import os
import subprocess
import sys

import numpy as np
import pytest
from keras import ops

import zoo
from training.generate import main
from training.runs import runs
from training.runs.generation import generate


def test_generation_is_deterministic_for_a_seed(language_model_run, no_data):
    run = language_model_run  # its corpus is gone: sampling needs the run only
    first = generate(run, "the cat", 12, temperature=1.5, seed=3)
    again = generate(run, "the cat", 12, temperature=1.5, seed=3)
    other = generate(run, "the cat", 12, temperature=1.5, seed=4)
    assert first == again and first != other
    tokenizer = runs.load_vocabulary(run).tokenizer()  # <eos> a newline
    assert first.startswith("the cat") and len(tokenizer(first)) == 14
    greedy = generate(run, "the cat", 5, top_k=1, seed=0)
    assert greedy == generate(run, "the cat", 5, top_k=1, seed=9)


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
    tokenizer = runs.load_vocabulary(language_model_run).tokenizer()
    text = done.stdout.removesuffix("\n")  # the line print() ends
    assert text.startswith("the cat") and len(tokenizer(text)) == 6


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"length": -1}, r"`length` must be in \[0, 1,000,000\] tokens; received -1"),
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


def test_a_character_preset_continues_from_the_prompts_characters():
    # "The company said" is `t h e _ c o m p a n y _ s a i d` to the PTB
    # character model, read after <eos>; the greedy continuation is the
    # model's arg-max after those characters, read back as text.
    preset = zoo.from_preset("mlstm_ptb_char")
    tokenizer = preset.tokenizer
    ids = [tokenizer.eos_id, *tokenizer("The company said")]
    assert [tokenizer.id_to_token(i) for i in ids[1:]] == list("the_company_said")
    for _ in range(6):
        logits = preset.model(np.array([ids], "int32"))[0, -1]
        ids.append(int(ops.argmax(logits)))
    continuation = tokenizer.detokenize(ids[17:])
    greedy = generate("preset:mlstm_ptb_char", "The company said", 6, top_k=1)
    assert greedy == "The company said" + continuation
    unknown = generate("preset:mlstm_ptb_char", "xq zzv qqq", 6, top_k=1)
    assert unknown.removeprefix("xq zzv qqq") != continuation


def test_a_prompt_the_vocabulary_cannot_read_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["preset:mlstm_ptb_char", "--prompt", "Café society", "--length", "3"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        "python -m training.generate: error: The text has characters that are "
        "not in the vocabulary of this model: `é` ("
    )
    assert captured.err.count("\n") == 1
    read = generate("preset:mlstm_ptb_char", "Café", 3, on_unknown="unk")
    assert read.startswith("Café") and len(read) == 7
