"""`notebooks/quickstart.ipynb` executes top to bottom (kernel `python3`: this interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the kernel inherits this environment
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # jupyter_client starts the native "python3" kernel with sys.executable, i.e. this venv's python
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(
        output.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    )
    assert "30/30 files ingested" in text
    assert text.count("pre_decision   score ") >= 2  # both ask modes ran the pre-retrieval check
    assert text.count("ANSWER:") >= 2 and "Sources:\n[1] " in text
    assert "Expense policy" in text  # the plain-RAG run
