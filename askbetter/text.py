"""A check on text from outside (files, the command line) that Python holds but cannot encode.

Nothing here imports the rest of the package, so any module may import it.
"""

from __future__ import annotations

import json

#: why a string or record that `encodes_as_utf8` refuses is refused
NOT_UTF8 = "not UTF-8 text (an unpaired surrogate escape such as \\ud800)"


def encodes_as_utf8(value: object) -> bool:
    """Whether `value` (a string, or parsed JSON holding strings) encodes as UTF-8. It does not
    when it holds a lone surrogate: what a JSON escape such as "\\ud800" leaves, or a command-line
    argument or terminal line in bytes that are not UTF-8; tokenizers and Chroma refuse those."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
