"""The local clarifier on the real bundled SmolLM2 (no adapter): decisions, questions, bad input."""

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clarifier():
    from askbetter.clarifier.local import LocalClarifier

    return LocalClarifier.from_settings(adapter="none", prompt_style="zero-shot")


def test_pre_and_post_decisions_are_well_formed(clarifier) -> None:
    messages = [{"role": "user", "content": "How do I turn on sync?"}]
    pre = clarifier.check(messages)
    post = clarifier.check(messages, [{"id": "a", "title": "Nimbus Cloud Sync", "text": "Open Settings > Sync."}])
    assert (pre.stage, post.stage) == ("pre", "post")
    for d in (pre, post):
        assert 0.0 <= d.score <= 1.0
        assert d.needs_clarification == (d.score >= clarifier.threshold)
        assert (d.question is not None) == d.needs_clarification


def test_threshold_decides_and_a_question_is_one_line(clarifier) -> None:
    from askbetter.clarifier.local import LocalClarifier

    asking = LocalClarifier(clarifier.loaded, threshold=0.0, prompt_style="zero-shot")
    d = asking.check([{"role": "user", "content": "Who won the world cup?"}])
    assert d.needs_clarification and d.question and "\n" not in d.question
    never = LocalClarifier(clarifier.loaded, threshold=1.01, prompt_style="zero-shot")
    assert not never.check([{"role": "user", "content": "Who won the world cup?"}]).needs_clarification


def test_turn_longer_than_the_context_is_truncated_not_fatal(clarifier) -> None:
    huge = "Please tell me about the sync settings. " * 2000  # ~16k tokens, the model has 8k
    with pytest.warns(UserWarning, match="its middle was cut"):
        d = clarifier.check([{"role": "user", "content": huge}])
    assert 0.0 <= d.score <= 1.0
