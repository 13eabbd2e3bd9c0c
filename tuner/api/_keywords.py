"""The CLI's words in the Python API's voice: a refusal built for the command line names the
flag a user typed (``--base-batch-size``); from :func:`tuner.search` or :func:`tuner.lr_find`
the user typed a keyword (``base_batch_size=``), so the line names that instead."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from tuner.core.errors import ConfigError

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def as_keywords(line: str, keywords: Collection[str]) -> str:
    """``line`` with each ``--flag`` whose keyword is in ``keywords`` written ``flag=``; other
    flags (``--debug``, ``--no-baseline``) are left as they are."""

    def keyword(match: re.Match[str]) -> str:
        name = match.group(1).replace("-", "_")
        return f"{name}=" if name in keywords else match.group(0)

    return _FLAG.sub(keyword, line)


@contextmanager
def keyword_errors(keywords: Collection[str]) -> Iterator[None]:
    """Re-raise a :class:`ConfigError` (of its own class) from the block with its flags named as
    ``keywords``."""
    try:
        yield
    except ConfigError as exc:
        raise type(exc)(as_keywords(str(exc), keywords)) from None
