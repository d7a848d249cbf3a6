"""Minimal-pair suites for targeted syntactic evaluation.

- Marvin & Linzen (2018): the 22 test sets of github:BeckyMarvin/LM_syneval,
  converted to JSON (`{condition: [[good, bad], ...]}`; the NPI sets hold
  `[grammatical, intrusive, ungrammatical]` triples), in the folder
  `marvin_linzen_2018/` of the data directory (`data_dir`, then
  `ZOO_DATA_DIR`, as the corpora). A triple gives three pairs, one per
  contrast the second-order report's Table 3 uses: grammatical vs.
  intrusive, intrusive vs. ungrammatical, grammatical vs. ungrammatical.
- JSON Lines with `sentence_good` and `sentence_bad` per line (BLiMP's
  format); the condition is the line's `UID` and the category its
  `linguistics_term` when present, else the file's name.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from training.data.files import ENV_VAR, find_local

MARVIN_LINZEN = "marvin_linzen_2018"
# The name that asks `load_suite` for the Marvin & Linzen sets.
MARVIN_LINZEN_SUITE = "marvin-linzen"
CATEGORIES = {
    "agreement": (
        "simple_agrmt",
        "sent_comp",
        "vp_coord",
        "long_vp_coord",
        "prep_anim",
        "prep_inanim",
        "subj_rel",
        "obj_rel_across_anim",
        "obj_rel_across_inanim",
        "obj_rel_no_comp_across_anim",
        "obj_rel_no_comp_across_inanim",
        "obj_rel_within_anim",
        "obj_rel_within_inanim",
        "obj_rel_no_comp_within_anim",
        "obj_rel_no_comp_within_inanim",
    ),
    "reflexive anaphora": (
        "simple_reflexives",
        "reflexive_sent_comp",
        "reflexives_across",
    ),
    "npi": (
        "simple_npi_anim",
        "simple_npi_inanim",
        "npi_across_anim",
        "npi_across_inanim",
    ),
}
TRIPLE_CONTRASTS = (
    ("grammatical vs. intrusive", 0, 1),
    ("intrusive vs. ungrammatical", 1, 2),
    ("grammatical vs. ungrammatical", 0, 2),
)


@dataclasses.dataclass(frozen=True)
class MinimalPair:
    """A pair in which `good` should score higher than `bad`."""

    good: str
    bad: str
    suite: str  # the test set (file stem)
    condition: str  # e.g. "sing_MS_MV", or with the contrast for NPI triples
    category: str  # "agreement", "reflexive anaphora", "npi", or BLiMP's term
    contrast: str = ""  # for an NPI triple, which two of its sentences


def _pairs_of(suite, category, condition, items, source):
    pairs = []
    for index, item in enumerate(items):
        if not (
            isinstance(item, list)
            and len(item) in (2, 3)
            and all(isinstance(s, str) for s in item)
        ):
            raise ValueError(
                f"{source}: item {index} of condition {condition!r} is not a list "
                "of 2 or 3 sentences; expected [good, bad] or [good, intrusive, bad]."
            )
        if len(item) == 2:
            pairs.append(MinimalPair(item[0], item[1], suite, condition, category))
        else:
            for contrast, better, worse in TRIPLE_CONTRASTS:
                pairs.append(
                    MinimalPair(
                        item[better], item[worse], suite, condition, category, contrast
                    )
                )
    return pairs


def load_marvin_linzen(data_dir=None):
    """All Marvin & Linzen pairs, as `MinimalPair`s, in a fixed order.

    Raises:
        FileNotFoundError: a test set is not in the data directories.
        ValueError: a test set is not UTF-8 JSON (names the file).
    """
    pairs = []
    for category, suites in CATEGORIES.items():
        for suite in suites:
            path = find_local(MARVIN_LINZEN, f"{suite}.json", data_dir)
            if path is None:
                raise FileNotFoundError(
                    f"{MARVIN_LINZEN}/{suite}.json not found; expected the Marvin & "
                    f"Linzen sets as JSON in a data directory (data_dir or {ENV_VAR})."
                )
            try:
                sets = json.loads(_read_text(path))
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{path}: not JSON ({error}); expected the Marvin & Linzen "
                    "set as {condition: [[good, bad], ...]}."
                ) from None
            for condition, items in sets.items():
                pairs += _pairs_of(suite, category, condition, items, path)
    return pairs


def _read_text(path):
    """The text of a suite file in UTF-8, a byte-order mark dropped."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: not UTF-8 text ({error.reason} at byte {error.start}); "
            "expected a suite file in UTF-8."
        ) from None


def load_jsonl(path):
    """The pairs of a JSON Lines file with `sentence_good` / `sentence_bad`.

    The file is read as UTF-8 (a byte-order mark, as some editors write
    one, is dropped).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not UTF-8, or a line is not a JSON object
            with both fields (each names the file).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Suite file {str(path)!r} does not exist.")
    pairs = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not (
            isinstance(record, dict)
            and isinstance(record.get("sentence_good"), str)
            and isinstance(record.get("sentence_bad"), str)
        ):
            raise ValueError(
                f"{path}:{number}: expected a JSON object with string fields "
                "'sentence_good' and 'sentence_bad'."
            )
        pairs.append(
            MinimalPair(
                record["sentence_good"],
                record["sentence_bad"],
                path.stem,
                str(record.get("UID", path.stem)),
                str(record.get("linguistics_term", path.stem)),
            )
        )
    if not pairs:
        raise ValueError(f"{path}: no pairs; expected one JSON object per line.")
    return pairs


def load_suite(suite, data_dir=None):
    """The pairs of a suite: `MARVIN_LINZEN_SUITE` (the Marvin & Linzen sets
    in `data_dir`) or the path of a JSON Lines file."""
    if suite == MARVIN_LINZEN_SUITE:
        return load_marvin_linzen(data_dir)
    return load_jsonl(suite)
