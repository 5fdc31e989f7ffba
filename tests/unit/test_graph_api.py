"""The public API (lazy imports) and the graph that `langgraph.json` names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_public_names_resolve_lazily():
    import askbetter
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.retrieval.ingest import ingest

    assert askbetter.create_clarifying_rag is create_clarifying_rag
    assert askbetter.ingest is ingest
    assert set(askbetter.__all__) <= set(dir(askbetter))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        askbetter.nope  # noqa: B018


def test_importing_the_package_and_the_served_graph_loads_no_heavy_library():
    code = (
        "import sys, askbetter, askbetter.graph.app as app\n"
        "print(type(app.graph).__name__, app.graph.name, sorted(m for m in ('torch', 'transformers', 'chromadb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout
    assert out.split() == ["CompiledStateGraph", "askbetter", "[]"]


def test_langgraph_json_names_the_served_graph():
    config = json.loads((ROOT / "langgraph.json").read_text())
    path, attr = config["graphs"]["askbetter"].split(":")
    assert (ROOT / path).is_file() and attr == "graph"
    assert f"\n{attr} = " in (ROOT / path).read_text()


def test_the_graph_publishes_its_json_schemas():
    """A LangGraph server (`langgraph dev`, Studio) reads the input, output and context schemas;
    pydantic builds them only from `typing_extensions.TypedDict`s on Python < 3.12."""
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.settings import RUN_SETTINGS, Settings

    graph = create_clarifying_rag(settings=Settings()).compile()
    assert list(graph.get_input_jsonschema()["properties"]) == ["messages"]
    assert {"messages", "query", "documents", "pre_decision"} <= set(graph.get_output_jsonschema()["properties"])
    context = graph.get_context_jsonschema()
    assert list(context["properties"]) == list(RUN_SETTINGS)
    assert context["properties"]["ask_mode"]["enum"] == ["interrupt", "message"]


def test_every_public_name_has_a_docstring_and_is_named_in_the_readme():
    import inspect
    import re

    import askbetter

    readme = (ROOT / "README.md").read_text()
    for name in askbetter.__all__:
        value = getattr(askbetter, name)
        doc = inspect.getdoc(value)
        assert doc and doc != dict.__doc__ and doc != "Base class for protocol classes.", name
        assert re.search(rf"\b{name}\b", readme), name
