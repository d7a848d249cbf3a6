import pytest

from tests.training.data.shared_data import SHARED
from training.data import corpora, files


def test_missing_corpus_without_download(tmp_path, monkeypatch):
    monkeypatch.delenv(files.ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match=r"ptb/ptb.train.txt not found in .*"):
        corpora.load_ptb(data_dir=tmp_path, download=False)


def test_local_files_are_checked_against_known_hashes(tmp_path, monkeypatch):
    folder = tmp_path / "ptb"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"ptb.{split}.txt").write_text(" the cat sat \n")
    monkeypatch.delenv(files.ACCEPT_MODIFIED_VAR, raising=False)
    with pytest.raises(ValueError, match=r"ptb.train.txt: sha256 differs.*=1 to use"):
        corpora.load_ptb("word", data_dir=tmp_path, download=False)
    monkeypatch.setenv(files.ACCEPT_MODIFIED_VAR, "1")
    assert corpora.load_ptb("word", data_dir=tmp_path, download=False).train


@pytest.mark.skipif(not (SHARED / "ptb").is_dir(), reason="no PTB copy")
def test_the_canonical_files_match_their_hashes():
    for name in ("ptb.valid.txt", "ptb.char.valid.txt"):
        files.check_local("ptb", name, SHARED / "ptb" / name)
