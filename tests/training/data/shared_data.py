"""Where the data tests find the offline corpora (ZOO_DATA_DIR, else shared/data)."""

import os
from pathlib import Path

from training.data import files

SHARED = Path(
    os.environ.get(files.ENV_VAR)
    or Path(__file__).resolve().parents[3].parent / "shared" / "data"
)
