"""Write ``03-tune-context.generated.json``: notebook 03's outputs without the real logs.

Runs the notebook in a kernel with ``CONVLAB_REAL_LOGS`` pointing nowhere (so it
reads the project's ``data/``) and keeps each code cell's outputs, in order;
``notebooks/conftest.py`` compares with them where the real logs are absent.

    .venv/bin/python notebooks/generated_outputs.py
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor

HERE = Path(__file__).resolve().parent


def main() -> None:
    nb = nbformat.read(HERE / "03-tune-context.ipynb", as_version=4)
    with tempfile.TemporaryDirectory() as nowhere:
        os.environ["CONVLAB_REAL_LOGS"] = str(Path(nowhere) / "no-real-logs")
        ExecutePreprocessor(timeout=600).preprocess(nb, {"metadata": {"path": str(HERE)}})
    outputs = [c.outputs for c in nb.cells if c.cell_type == "code"]
    (HERE / "03-tune-context.generated.json").write_text(json.dumps(outputs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
