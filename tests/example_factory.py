"""One small example in the schema of `askbetter.clarifier.examples`, for the unit tests."""

from askbetter.clarifier import source_rewrites
from askbetter.clarifier.examples import Example
from askbetter.clarifier.source_common import assistant, user


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


def canard_pair(i: int, pronoun: str, resolved: bool) -> source_rewrites.RewritePair:
    """CANARD dialog `i` about Person{i} Smith{i}, asking when `pronoun` was born; its history
    names them only when `resolved`."""
    name = f"Person{i} Smith{i}"
    answer = f"{name} joined a band." if resolved else "Joined a band in 1990."
    history = [user("What happened first?"), assistant(answer), user("Anything else?"),
               assistant("I don't know.")]  # fmt: skip
    return source_rewrites.RewritePair("canard", f"g{i}", "3", history, f"When was {pronoun} born?",
                                       f"When was {name} born?", f"{name}: Career")
