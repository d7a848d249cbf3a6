import json

import pytest

from training.data import minimal_pairs


def write_marvin_linzen(root):
    folder = root / minimal_pairs.MARVIN_LINZEN
    folder.mkdir()
    for suites in minimal_pairs.CATEGORIES.values():
        for suite in suites:
            items = [["the author laughs", "the author laugh"]]
            if "npi" in suite:
                items = [["no author has ever", "the author no has ever", "most ever"]]
            (folder / f"{suite}.json").write_text(json.dumps({"cond": items}))


def test_marvin_linzen_pairs_and_triples_by_category(tmp_path):
    write_marvin_linzen(tmp_path)
    pairs = minimal_pairs.load_marvin_linzen(data_dir=tmp_path)
    counts = {c: sum(p.category == c for p in pairs) for c in minimal_pairs.CATEGORIES}
    assert counts == {"agreement": 15, "reflexive anaphora": 3, "npi": 4 * 3}
    npi = [p for p in pairs if p.suite == "simple_npi_anim"]
    assert [(p.good, p.bad, p.contrast) for p in npi] == [
        ("no author has ever", "the author no has ever", "grammatical vs. intrusive"),
        ("the author no has ever", "most ever", "intrusive vs. ungrammatical"),
        ("no author has ever", "most ever", "grammatical vs. ungrammatical"),
    ]


def test_a_missing_marvin_linzen_set_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="simple_agrmt.json not found"):
        minimal_pairs.load_marvin_linzen(data_dir=tmp_path)


def test_json_lines_pairs_and_their_errors(tmp_path):
    path = tmp_path / "suite.jsonl"
    line = {"sentence_good": "a b", "sentence_bad": "b a", "UID": "u"}
    path.write_text(json.dumps(line) + "\n\n" + json.dumps({"sentence_good": "a"}))
    with pytest.raises(ValueError, match=r"suite.jsonl:3: .*'sentence_bad'"):
        minimal_pairs.load_jsonl(path)
    path.write_text(json.dumps(line) + "\n")
    (pair,) = minimal_pairs.load_jsonl(path)
    assert (pair.good, pair.bad, pair.condition, pair.category) == (
        "a b",
        "b a",
        "u",
        "suite",
    )
    with pytest.raises(FileNotFoundError, match="does not exist"):
        minimal_pairs.load_jsonl(tmp_path / "missing.jsonl")


def test_a_byte_order_mark_is_read_and_other_encodings_are_named(tmp_path):
    path = tmp_path / "suite.jsonl"
    line = json.dumps({"sentence_good": "a b", "sentence_bad": "b a"}) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + line.encode())  # as Windows editors write
    assert [(p.good, p.bad) for p in minimal_pairs.load_jsonl(path)] == [("a b", "b a")]
    path.write_bytes(line.encode("utf-16"))
    with pytest.raises(ValueError, match=r"suite.jsonl: not UTF-8 text \(") as info:
        minimal_pairs.load_jsonl(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_marvin_linzen_set_that_is_not_json_is_named(tmp_path):
    write_marvin_linzen(tmp_path)
    broken = tmp_path / minimal_pairs.MARVIN_LINZEN / "sent_comp.json"
    broken.write_text('{"cond": [')
    with pytest.raises(ValueError, match=r"sent_comp.json: not JSON \("):
        minimal_pairs.load_marvin_linzen(data_dir=tmp_path)
