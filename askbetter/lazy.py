"""Names a package exports, imported on first use: `askbetter` and `askbetter.retrieval` export
names whose modules import LangGraph, LangChain, numpy or torch, which a command that needs none
of them should not wait for.

Nothing here imports the rest of the package, so any package's `__init__` may import it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of `package` (its `__name__`), whose `exports`
    (name -> the module that defines it) are each imported on first use, then kept in the
    package's namespace (later lookups skip `__getattr__`)."""
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
