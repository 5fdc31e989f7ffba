"""One small example in the schema of `askbetter.clarifier.examples`, for the unit tests."""

from askbetter.clarifier.examples import Example


def example(i: int, setting: str, clarification: str | None, kind: str, text: str | None = None) -> Example:
    """Example `ex-{i}`: one user turn (`text`, or "query {i}"), a passage when `post`."""
    return {
        "id": f"ex-{i}",
        "source": "test",
        "setting": setting,
        "messages": [{"role": "user", "content": text or f"query {i}"}],
        "documents": [{"id": "d1", "text": "passage"}] if setting == "post" else [],
        "clarification": clarification,
        "kind": kind,
    }
