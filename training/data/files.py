"""Where the data files are: locating, verifying and downloading them.

Where a file `<folder>/<filename>` is looked for, in order:
    1. `data_dir` (argument), in `data_dir/<folder>/` and then `data_dir/`
       (a `data_dir` that is not a folder is an error, not skipped);
    2. the environment variable `ZOO_DATA_DIR`, the same way;
       a local file whose sha256 is known (PTB, WikiText-2, Tiny Shakespeare)
       must match it, unless `ZOO_ACCEPT_MODIFIED_DATA=1` accepts a
       deliberately modified copy;
    3. otherwise the canonical public copy (`SOURCES`) is downloaded with
       `keras.utils.get_file` into Keras's cache (`~/.keras/datasets`) and
       checked against a sha256 (of the file, or of the extracted members when
       the archive itself has no published checksum).

`find_local` does steps 1 and 2 for any file (the minimal-pair suites use it
too), `find_local_folder` for a folder of files (BLiMP's suites); `locate`
all three for the corpora of `SOURCES`.
"""

import hashlib
import os
from pathlib import Path

ENV_VAR = "ZOO_DATA_DIR"
# Set to 1 to read local corpus files whose sha256 differs from the known one.
ACCEPT_MODIFIED_VAR = "ZOO_ACCEPT_MODIFIED_DATA"


# Canonical sources. `sha256` checks the downloaded file; `members` the sha256
# of files inside an archive (computed from byte-identical copies, see
# /work/shared/data/*/PROVENANCE.md) when the archive has no published hash.
_PTB_MEMBERS = {
    "ptb.train.txt": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",  # noqa: E501
    "ptb.valid.txt": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",  # noqa: E501
    "ptb.test.txt": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",  # noqa: E501
    "ptb.char.train.txt": "e313d91425e06c4f0a8fb6e881dcce0c291f2a0e9f4dda54833069b122f91da9",  # noqa: E501
    "ptb.char.valid.txt": "21661f63ec355085879458b6524644d4add5573541b4be14fb52ab2e2e995eb8",  # noqa: E501
    "ptb.char.test.txt": "1ef5607ac3c463b16e38bfe7900dd3bfc91de5a96e0f21e7eab5188b465b8ebe",  # noqa: E501
}
_WIKITEXT2_MEMBERS = {
    "wiki.train.tokens": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",  # noqa: E501
    "wiki.valid.tokens": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",  # noqa: E501
    "wiki.test.tokens": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",  # noqa: E501
}
SOURCES = {
    # Mikolov's archive (word and character PTB); no published archive hash,
    # so the extracted files are checked against _PTB_MEMBERS.
    "ptb": {
        "url": "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
        "sha256": None,
        "members": _PTB_MEMBERS,
    },
    # Salesforce's release (Merity et al., 2016); the archive hash is not
    # published, the members are checked.
    "wikitext-2": {
        "url": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
        "sha256": None,
        "members": _WIKITEXT2_MEMBERS,
    },
    # No local copy to derive a checksum from: unchecked.
    "wikitext-103": {
        "url": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip",
        "sha256": None,
        "members": {},
    },
    # Matt Mahoney's files; no local copy to derive a checksum from: unchecked.
    "text8": {
        "url": "http://mattmahoney.net/dc/text8.zip",
        "sha256": None,
        "members": {},
    },
    "enwik8": {
        "url": "http://mattmahoney.net/dc/enwik8.zip",
        "sha256": None,
        "members": {},
    },
    # karpathy/char-rnn; the same file as /work/shared/data/tinyshakespeare.
    "tinyshakespeare": {
        "url": "https://raw.githubusercontent.com/karpathy/char-rnn/master/"
        "data/tinyshakespeare/input.txt",
        "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        "members": {},
    },
}


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _data_dirs(data_dir):
    """`data_dir` (which must be a folder: no silent fallback), `ZOO_DATA_DIR`."""
    dirs = []
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise FileNotFoundError(
                f"Data folder {str(data_dir)!r} (task.data_dir or --data-dir) is "
                "not a folder; expected the folder holding the data (or none, to "
                f"read {ENV_VAR})."
            )
        dirs.append(Path(data_dir))
    if os.environ.get(ENV_VAR):
        dirs.append(Path(os.environ[ENV_VAR]))
    return dirs


def find_local(folder, filename, data_dir):
    """The first `<dir>/<folder>/<filename>` or `<dir>/<filename>` that exists.

    `<dir>` is `data_dir`, then `ZOO_DATA_DIR`; `None` when neither holds it.
    """
    for root in _data_dirs(data_dir):
        for candidate in (root / folder / filename, root / filename):
            if candidate.is_file():
                return candidate
    return None


def find_local_folder(folder, data_dir):
    """The first `<dir>/<folder>` that is a folder, `<dir>` as in `find_local`.

    `None` when neither `data_dir` nor `ZOO_DATA_DIR` holds one.
    """
    for root in _data_dirs(data_dir):
        if (root / folder).is_dir():
            return root / folder
    return None


def _download(folder, filename):
    """Downloads the canonical copy of `folder` and returns the path of `filename`."""
    import keras

    source = SOURCES[folder]
    url = source["url"]
    archive = url.endswith((".zip", ".tgz", ".tar.gz"))
    try:
        path = Path(
            keras.utils.get_file(
                fname=f"{folder}-{url.rsplit('/', 1)[-1]}",
                origin=url,
                file_hash=source["sha256"],
                hash_algorithm="sha256",
                extract=archive,
                cache_subdir=os.path.join("datasets", "zoo"),
            )
        )
    except Exception as error:  # get_file raises a bare Exception on URL errors
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FileNotFoundError(
            f"{folder}/{filename} is not in a data directory and downloading it "
            f"failed ({reason}); expected a folder holding {folder}/ given as "
            f"data_dir or {ENV_VAR}"
        ) from None
    if not archive:
        return path
    # Keras returns the archive or the extraction folder depending on version.
    roots = [path] if path.is_dir() else [path.parent]
    for root in roots:
        matches = sorted(root.rglob(filename))
        if matches:
            member = matches[0]
            expected = source["members"].get(filename)
            if expected is not None and _sha256(member) != expected:
                raise ValueError(
                    f"{member}: sha256 differs from the known {folder} file; expected "
                    f"{expected} (delete it to download again)"
                )
            return member
    raise FileNotFoundError(f"{filename} not found in the {folder} archive from {url}")


def known_sha256(folder, filename):
    """The sha256 of the canonical `folder/filename`, or `None` if unknown."""
    source = SOURCES.get(folder)
    if source is None:
        return None
    if filename in source["members"]:
        return source["members"][filename]
    if source["url"].rsplit("/", 1)[-1] == filename:
        return source["sha256"]
    return None


def check_local(folder, filename, path):
    """A one-line `ValueError` if `path` is not the known `folder/filename`."""
    expected = known_sha256(folder, filename)
    if expected is None or os.environ.get(ACCEPT_MODIFIED_VAR) == "1":
        return
    if _sha256(path) != expected:
        raise ValueError(
            f"{path}: sha256 differs from the known {folder} file; expected "
            f"{expected} (set {ACCEPT_MODIFIED_VAR}=1 to use a modified copy)"
        )


def locate(folder, filename, data_dir, download=True):
    """The path of `folder/filename`: a local copy, checked, or a download.

    A local copy (`find_local`) must match its known sha256 (`check_local`);
    without one, the canonical copy of `SOURCES` is downloaded when
    `download`, else a one-line `FileNotFoundError`.
    """
    local = find_local(folder, filename, data_dir)
    if local is not None:
        check_local(folder, filename, local)
        return local
    if not download:
        searched = ", ".join(str(d) for d in _data_dirs(data_dir)) or "no data_dir"
        raise FileNotFoundError(
            f"{folder}/{filename} not found in {searched}; expected it there "
            f"(set data_dir or {ENV_VAR}) or download=True"
        )
    return _download(folder, filename)
