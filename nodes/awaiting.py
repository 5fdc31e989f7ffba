"""Calling a component (a clarifier, a retriever) from an async node: its async method where it
has one, else its sync one in an executor thread, as LangGraph runs a sync node."""

from __future__ import annotations

import inspect
from typing import Any

from langchain_core.runnables.config import run_in_executor


async def acall(component: object, method: str, *args: Any, **kwargs: Any) -> Any:
    """`component.a<method>(*args, **kwargs)` awaited when the component has that coroutine method
    (a cancelled caller cancels it), else `component.<method>(*args, **kwargs)` in an executor
    thread (the event loop is not held; a cancel cannot stop it)."""
    asynchronous = getattr(component, f"a{method}", None)
    if inspect.iscoroutinefunction(asynchronous):
        return await asynchronous(*args, **kwargs)
    return await run_in_executor(None, getattr(component, method), *args, **kwargs)
