"""The CLI's words in the Python API's voice: a line built for the command line names the flag a
user typed (``--base-batch-size``); from :func:`tuner.search`, :func:`tuner.lr_find` or
:func:`tuner.load_study` the user typed a keyword (``base_batch_size=``), so the line names that
instead."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager

from tuner.core.errors import TunerError

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def as_keywords(line: str, keywords: Collection[str] | Mapping[str, str]) -> str:
    """``line`` with each ``--flag`` whose keyword is in ``keywords`` written ``flag=`` (a
    mapping names another keyword: ``{"storage": "storage_url"}``); other flags (``--debug``,
    ``--no-baseline``) are left as they are."""
    named = keywords if isinstance(keywords, Mapping) else {key: key for key in keywords}

    def keyword(match: re.Match[str]) -> str:
        name = named.get(match.group(1).replace("-", "_"))
        return f"{name}=" if name is not None else match.group(0)

    return _FLAG.sub(keyword, line)


@contextmanager
def keyword_errors(keywords: Collection[str] | Mapping[str, str]) -> Iterator[None]:
    """Re-raise tuner's error from the block (of its own class: a ``ConfigError`` stays one) with
    its flags named as ``keywords``."""
    try:
        yield
    except TunerError as exc:
        raise type(exc)(as_keywords(str(exc), keywords)) from None
