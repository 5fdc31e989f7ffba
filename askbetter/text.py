"""Text in and out: checks on text from outside (files, the command line, the models) that is not
UTF-8, the terminal's view of it (control characters made visible), and the atomic write of a
text file, or of files that go together.

Nothing here imports the rest of the package but `askbetter.interrupts` (which imports none of
it), so any module may import it.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from askbetter.interrupts import ctrl_c_held

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


def not_utf8(error: UnicodeDecodeError, where: str | None = None, first_line: int = 1) -> str:
    """The one message for bytes that do not decode as UTF-8 (`error.object`: a file's bytes, or one
    line's, whose number is `first_line`): where, as `where:line` (the file's name) or `line N`, the
    byte and its column (in bytes, from 1), and what to do."""
    data = bytes(error.object)
    line = first_line + data.count(b"\n", 0, error.start)
    column = error.start - data.rfind(b"\n", 0, error.start)  # rfind is -1 on the first line
    place = f"line {line}" if where is None else f"{where}:{line}"
    return f"{place}: not UTF-8 text (byte {data[error.start]:#04x} at column {column}); convert the file to UTF-8"


def _temp_beside(path: Path, end: str) -> Path:
    """A new empty file beside `path` (its folder made if missing) for what will move in there:
    hidden and unique (`.NAME.RANDOM` + `end`), made only where no file is (O_EXCL), so that no
    file of the user's, no other output's and no other write's, in this process or another, is at
    that name. Made as `open(path, "w")` would make it, with the umask (or the folder's default
    ACL) applied to 0666: `tempfile.mkstemp` gives 0600, and reading the umask means setting it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}{end}")
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    return temp


def writes_through(path: Path) -> bool:
    """Whether `path` is an output written in place, not replaced: one that exists and is neither
    a regular file nor a folder, through any links (a device or a pipe: `/dev/stdout`,
    `/dev/null`). There is no last version to keep, and a rename would replace the device."""
    try:
        mode = path.stat().st_mode
    except OSError:  # missing, a dangling link, or not to be reached
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_lines(path: str | Path, lines: Iterable[str]) -> int:
    """Write `lines` (strings, each ending in a newline) to `path` as UTF-8, atomically: into a temp
    file in the same folder (made if missing; `_temp_beside`), then renamed into place. Stopped or
    failed before the rename, the temp file is removed and `path` is as it was. A device or a pipe
    (`writes_through`) is written in place. Returns how many strings it wrote."""
    path = Path(path)
    through = writes_through(path)
    tmp = path if through else _temp_beside(path, ".tmp")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line)
                n += 1
        if not through:
            tmp.replace(path)
    except BaseException:
        if not through:
            tmp.unlink(missing_ok=True)
        raise
    return n


def write_together(writers: Mapping[Path, Callable[[Path], object]], done: str) -> None:
    """Write files that go together so that a stop leaves the last ones or the new ones, never a
    mix: `writers[path](staged)` writes each to a staged file beside it (`_temp_beside`); once
    all are written they are renamed into place in order, a Ctrl-C held until the last has moved
    in (`askbetter.interrupts.ctrl_c_held`: its KeyboardInterrupt then says `done`). Stopped or
    failed while writing, the staged files are removed and every path is as it was; a rename that
    fails (the path became a folder) leaves those before it moved in, and no staged file; only
    that or a kill during the renames can leave a mix. A device or a pipe (`writes_through`) is
    written in place once the others have moved in."""
    staged: dict[Path, Path] = {}
    try:
        for path, write in writers.items():
            if writes_through(path):  # a device or a pipe: written last, in place (nothing to stage)
                continue
            staged[path] = _temp_beside(path, ".new")
            write(staged[path])
        with ctrl_c_held(done):
            for path, new in staged.items():
                new.replace(path)
    except BaseException:  # those moved in are gone from their staged names already
        for new in staged.values():
            new.unlink(missing_ok=True)
        raise
    for path, write in writers.items():
        if path not in staged:
            write(path)


#: the control characters (C0, DEL, C1) a terminal may act on, each with its visible form
#: (`\x1b`); a line break and a tab stay as they are
_VISIBLE_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))
                     if chr(code) not in "\n\t"}


def displayable(text: str) -> str:
    """`text` as printed to a terminal: each control character (an escape sequence's start, a
    carriage return, a bell...) written as its escape, e.g. `\\x1b`, so that text from the corpus,
    the models or the user cannot move the cursor or recolour the terminal. Only for display: the
    text stored and sent to the models is left as it is."""
    return text.translate(_VISIBLE_CONTROLS)


def is_blank(text: str) -> bool:
    """Whether `text` holds nothing but whitespace and control characters (a line of escape
    codes is as empty as a line of spaces)."""
    return all(char.isspace() or unicodedata.category(char) == "Cc" for char in text)
