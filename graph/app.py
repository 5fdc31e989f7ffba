"""The graph named in `langgraph.json`, for `langgraph dev` and LangGraph servers.

Built with the default components from the environment's settings; building it loads no model
(the models load on the first turn; a missing or empty Chroma store is reported then, before they
load). The server supplies the checkpointer.
"""

from askbetter.graph.factory import create_clarifying_rag

graph = create_clarifying_rag().compile(name="askbetter")
