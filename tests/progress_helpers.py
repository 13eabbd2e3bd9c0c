"""What the progress tests share: a clock moved by hand, and tuner's loggers (and Optuna's)
left as a plain run would have them after each test that configures them."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from rich.console import Console

from tuner.console import logs


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Each test configures tuner's loggers; leave them (and Optuna's) as a plain run would."""
    level = logging.getLogger("optuna").level
    yield
    logs.configure(logs.NORMAL, Console(file=io.StringIO()))
    logging.getLogger("optuna").setLevel(level)
