import numpy as np
import pytest

from tests.training.data.shared_data import SHARED
from tests.training.tiny import SUITES, write_suites
from training.data import blimp_sentences, files


def test_words_are_lower_case_with_punctuation_split_off():
    assert blimp_sentences.tokenize(
        ["Susan revealed herself.", "Who didn't Éva see, Mr. Lee's dog?", "  "]
    ) == [
        ["susan", "revealed", "herself", "."],
        ["who", "didn", "'", "t", "éva", "see", ",", "mr", ".", "lee", "'", "s"]
        + ["dog", "?"],
        [],
    ]
    assert blimp_sentences.tokenize([]) == []


def test_suites_are_found_in_the_data_dir_or_zoo_data_dir(tmp_path, monkeypatch):
    write_suites(tmp_path, pairs=3)
    monkeypatch.delenv(files.ENV_VAR, raising=False)
    suites = blimp_sentences.load_suites(tmp_path)
    assert sorted(suites) == sorted(name for s in SUITES.values() for name in s)
    assert all(len(pairs) == 3 for pairs in suites.values())
    assert suites["anaphora_2"][0].category == "anaphora"
    first = blimp_sentences.load_suites(tmp_path, pairs_per_suite=2)["agreement_1"]
    assert first == suites["agreement_1"][:2]
    monkeypatch.setenv(files.ENV_VAR, str(tmp_path))
    assert blimp_sentences.load_suites() == suites


def test_without_suites_the_error_is_one_line_naming_where(tmp_path, monkeypatch):
    monkeypatch.delenv(files.ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match="set task.data_dir or ZOO_DATA_DIR"):
        blimp_sentences.find_suites(tmp_path)
    (tmp_path / "blimp").mkdir()
    with pytest.raises(FileNotFoundError, match=r"found in .*blimp; expected") as info:
        blimp_sentences.find_suites(tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="pairs_per_suite must be >= 1"):
        blimp_sentences.load_suites(tmp_path, pairs_per_suite=0)


def test_splits_hold_whole_suites_one_test_suite_per_phenomenon(tmp_path):
    suites = blimp_sentences.load_suites(write_suites(tmp_path, pairs=2))
    splits = blimp_sentences.split_suites(suites, seed=0)
    named = [name for split in splits.values() for name in split]
    assert sorted(named) == sorted(suites)  # every suite in exactly one split
    category = {name: pairs[0].category for name, pairs in suites.items()}
    assert sorted(category[name] for name in splits["test"]) == sorted(SUITES)
    # A phenomenon of two suites gives one to the test and none to validation.
    assert sorted(category[name] for name in splits["valid"]) == [
        "agreement",
        "anaphora",
    ]
    assert blimp_sentences.split_suites(suites, seed=0) == splits
    draws = {str(blimp_sentences.split_suites(suites, seed=s)) for s in range(6)}
    assert len(draws) > 1
    only_two = {name: suites[name] for name in ("ellipsis_1", "ellipsis_2")}
    with pytest.raises(ValueError, match="leave no training or no validation suite"):
        blimp_sentences.split_suites(only_two)


def test_vocabulary_and_arrays(tmp_path):
    pairs = blimp_sentences.load_suites(write_suites(tmp_path, pairs=4))["agreement_1"]
    vocabulary = blimp_sentences.build_vocabulary(["The cat sees the dog.", "the DOG"])
    assert vocabulary.tokens == ["<pad>", "<unk>", "the", "dog", ".", "cat", "sees"]
    arrays = blimp_sentences.frame(pairs[:2], vocabulary)
    # "The cat sees the dog." / "The cat see the dog." / "The dog chases the
    # bird." / "The dog chase the bird."
    np.testing.assert_array_equal(arrays.inputs[0], [2, 5, 6, 2, 3, 4])
    np.testing.assert_array_equal(arrays.inputs[1], [2, 5, 1, 2, 3, 4])
    np.testing.assert_array_equal(arrays.inputs[2:], [[2, 3, 1, 2, 1, 4]] * 2)
    np.testing.assert_array_equal(arrays.labels, [1, 0, 1, 0])
    np.testing.assert_array_equal(arrays.pairs, [0, 0, 1, 1])
    assert arrays.suites.tolist() == ["agreement_1"] * 4
    assert arrays.categories.tolist() == ["agreement"] * 4
    np.testing.assert_array_equal(arrays.lengths, [6, 6, 6, 6])
    assert arrays.num_oov == int((arrays.inputs == 1).sum()) == 5
    with pytest.raises(ValueError, match="at least one pair"):
        blimp_sentences.frame([], vocabulary)


def test_blimp_splits_into_45_9_and_13_suites():
    if not (SHARED / blimp_sentences.SUITE_FOLDER).is_dir():
        pytest.skip(
            f"{SHARED / blimp_sentences.SUITE_FOLDER} not found: set ZOO_DATA_DIR to "
            "the folder holding BLiMP's suites (blimp/*.jsonl)"
        )
    suites = blimp_sentences.load_suites(SHARED, pairs_per_suite=2)
    assert len(suites) == 67
    splits = blimp_sentences.split_suites(suites)
    assert [len(splits[s]) for s in ("train", "valid", "test")] == [45, 9, 13]
    terms = {pairs[0].category for pairs in suites.values()}
    assert {suites[name][0].category for name in splits["test"]} == terms
    assert {suites[name][0].category for name in splits["train"]} == terms
