import dataclasses

import keras
import numpy as np
import pytest

import zoo
from training.analysis import targeted_syntax
from training.data.minimal_pairs import MinimalPair
from training.data.tokenize import Vocabulary

VOCABULARY = Vocabulary(
    ["<unk>", "<eos>", "the", "author", "authors", "laughs", "laugh"],
    level="word",
    add_eos=True,
)


def preferring(bias):
    """A language model whose next-token logits are `bias`, whatever it read."""
    keras.utils.set_random_seed(7)
    model = zoo.language_model("lstm", len(VOCABULARY), 3)
    logits = zoo.model_parts(model).head
    logits.kernel.assign(np.zeros(logits.kernel.shape, "float32"))
    logits.bias.assign(np.asarray(bias, "float32"))
    return model


BIAS = [0.0, 1.0, 0.5, 0.2, 0.1, 3.0, -3.0]  # "laughs" far likelier than "laugh"


def test_log_likelihood_is_the_sum_over_the_tokens_and_the_end():
    scores, oov = targeted_syntax.score_sentences(
        preferring(BIAS), VOCABULARY, ["the author laughs", "the zebra laugh", ""]
    )
    log_p = np.asarray(BIAS) - np.log(np.exp(BIAS).sum())
    expected = [log_p[[2, 3, 5, 1]].sum(), log_p[[2, 0, 6, 1]].sum(), log_p[1]]
    np.testing.assert_allclose(scores, expected, rtol=1e-5)
    np.testing.assert_array_equal(oov, [0, 1, 0])


def pairs(good_verb="laughs", bad_verb="laugh"):
    return [
        MinimalPair(
            f"the {s} {good_verb}", f"the {s} {bad_verb}", "agr", c, "agreement"
        )
        for s, c in (("author", "sing"), ("authors", "plur"), ("zebra", "sing"))
    ] + [
        MinimalPair("the author zebras", "the author lions", "agr", "sing", "agreement")
    ]


def test_a_model_built_to_prefer_one_sentence_scores_all_or_nothing():
    model = preferring(BIAS)
    result = targeted_syntax.evaluate_pairs(model, VOCABULARY, pairs(), batch_size=2)
    assert result["overall"] == {
        "accuracy": 1.0,
        "pairs": 4,
        "scored": 3,
        "skipped": 1,  # "zebras" and "lions" are both <unk>: the same ids
        "with_oov": 1,
        "accuracy_without_oov": 1.0,
        "without_oov": 2,
    }
    assert result["categories"]["agreement"]["accuracy"] == 1.0
    assert result["conditions"]["agr: plur"]["scored"] == 1
    assert result["sentences_with_oov"] == 4  # zebra (twice), zebras, lions
    reversed_ = targeted_syntax.evaluate_pairs(
        model, VOCABULARY, pairs("laugh", "laughs")
    )
    assert reversed_["overall"]["accuracy"] == 0.0


def test_triples_are_reported_by_contrast(tmp_path):
    triple = [
        MinimalPair("the author laughs", "the author laugh", "npi", "past", "npi", c)
        for c in ("grammatical vs. intrusive", "intrusive vs. ungrammatical")
    ]
    result = targeted_syntax.evaluate_pairs(preferring(BIAS), VOCABULARY, triple)
    assert set(result["suites"]) == {
        "npi (grammatical vs. intrusive)",
        "npi (intrusive vs. ungrammatical)",
    }
    assert len(targeted_syntax.table_rows(result)) == 1 + 2 + 2
    assert result["pooled"] == {}
    assert targeted_syntax.plot(result, tmp_path / "syntax.png").is_file()


def test_animate_and_inanimate_sets_are_pooled():
    model = preferring(BIAS)
    right = MinimalPair("the author laughs", "the author laugh", "x", "c", "npi")
    wrong = MinimalPair("the author laugh", "the author laughs", "x", "c", "npi")
    contrast = "grammatical vs. intrusive"
    triples = [
        # Two animate pairs right and one inanimate pair wrong: pooled 2 of 3.
        dataclasses.replace(right, suite="npi_across_anim", contrast=contrast),
        dataclasses.replace(right, suite="npi_across_anim", contrast=contrast),
        dataclasses.replace(wrong, suite="npi_across_inanim", contrast=contrast),
        dataclasses.replace(right, suite="simple_npi_anim", contrast=contrast),
        dataclasses.replace(right, suite="sent_comp"),
    ]
    result = targeted_syntax.evaluate_pairs(model, VOCABULARY, triples)
    assert set(result["pooled"]) == {
        f"npi_across ({contrast})",
        f"simple_npi ({contrast})",
    }
    pooled = result["pooled"][f"npi_across ({contrast})"]
    assert pooled["scored"] == 3 and pooled["accuracy"] == pytest.approx(2 / 3)
    assert result["suites"][f"npi_across_inanim ({contrast})"]["accuracy"] == 0.0
    assert targeted_syntax.pooled_suite("long_vp_coord") == "long_vp_coord"
    # The printed table cuts no name, however long.
    printed = targeted_syntax.report(result)
    assert f"simple_npi ({contrast}), animacy pooled " in printed


def test_no_pairs_is_an_error():
    with pytest.raises(ValueError, match="No minimal pairs"):
        targeted_syntax.evaluate_pairs(preferring(BIAS), VOCABULARY, [])


def test_at_least_half_of_the_pairs_must_be_scored():
    model = preferring(BIAS)
    scored = MinimalPair("the author laughs", "the author laugh", "agr", "c", "agr")
    unknown = MinimalPair("the author zebras", "the author lions", "agr", "c", "agr")
    half = targeted_syntax.evaluate_pairs(model, VOCABULARY, [scored, unknown])
    targeted_syntax.check_scored(half, VOCABULARY)  # one of two: enough
    third = targeted_syntax.evaluate_pairs(
        model, VOCABULARY, [scored, unknown, unknown]
    )
    same = targeted_syntax.SKIP_REASONS[3]  # zebras and lions: both <unk>
    assert third["skipped_because"][same] == 2
    with pytest.raises(ValueError, match="Only 1 of 3 minimal pairs can be scored"):
        targeted_syntax.check_scored(third, VOCABULARY)


def test_sentences_are_written_in_the_conventions_before_scoring():
    # A suite written with case and punctuation: on a vocabulary without
    # them, "laughs." and "laugh." are both unknown, the same ids.
    model = preferring(BIAS)
    written = [
        MinimalPair("The author laughs.", "The author laugh.", "agr", "c", "agr"),
        MinimalPair("The authors laugh?", "The authors laugh.", "agr", "c", "agr"),
    ]
    as_written = targeted_syntax.evaluate_pairs(model, VOCABULARY, written)
    assert as_written["conventions"] == "plain"
    assert as_written["overall"]["scored"] == 0
    ptb = targeted_syntax.evaluate_pairs(model, VOCABULARY, written, conventions="ptb")
    assert ptb["conventions"] == "ptb"
    # The first pair is scored without OOV; the second differs only in its
    # final punctuation, which PTB drops: the same ids, skipped.
    assert ptb["overall"]["scored"] == 1 and ptb["overall"]["with_oov"] == 0
    assert ptb["overall"]["accuracy"] == 1.0
    assert ptb["skipped_because"][targeted_syntax.SKIP_REASONS[2]] == 1
    # A vocabulary that names its conventions is read in them by default.
    recorded = Vocabulary.from_json(VOCABULARY.to_json())
    recorded.conventions = "ptb"
    assert (
        targeted_syntax.evaluate_pairs(model, recorded, written)["overall"]
        == (ptb["overall"])
    )
    message = "in ptb conventions \\(skipped 1: the same text once written"
    with pytest.raises(ValueError, match=message):
        targeted_syntax.check_scored(
            targeted_syntax.evaluate_pairs(model, recorded, written[1:]), recorded
        )
