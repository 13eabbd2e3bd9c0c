"""tuner.search's bad input: one line (ConfigError, the CLI's exit-2 class) naming the keyword the
user typed (``epochs=``, not the CLI's ``--epochs``), before anything is written — no database,
no shipped function."""

from __future__ import annotations

from pathlib import Path

import pytest

import tuner
from tuner.api._keywords import as_keywords
from tuner.core.errors import ConfigError
from tuner.workloads import regression


def storage(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/s.db"


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            {"max_repeat": 1},
            r"^tuner.search got an unknown option max_repeat=; did you mean max_repeats=\?$",
        ),
        ({"cpu_replicas": 2, "epochs": 1}, r"^epochs= must be at least 2, got 1"),
        ({"base_batch_size": -1}, r"^base_batch_size= must be a positive integer, got -1$"),
        (
            {"loss": object()},
            r"^loss= takes a Keras name such as 'mse'; .* compile it in your model",
        ),
        ({"batch_multipliers": "1,x"}, r"^batch_multipliers= "),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(
    tmp_path: Path, options: dict[str, object], line: str
) -> None:
    with pytest.raises(ConfigError, match=line) as raised:
        tuner.search(
            model=lambda: None, data=regression.load_data, storage=storage(tmp_path), **options
        )
    assert "--" not in str(raised.value)  # the keyword the user typed, never the CLI's flag
    assert list(tmp_path.iterdir()) == []


def test_only_the_apis_own_keywords_replace_flags() -> None:
    line = "--base-lr must be positive; see --debug or --no-baseline (e.g. a--b)"
    assert as_keywords(line, {"base_lr", "baseline"}) == (
        "base_lr= must be positive; see --debug or --no-baseline (e.g. a--b)"
    )


def test_a_model_without_data_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs model= and data= \(or dataset=\)"):
        tuner.search(model=regression.build_model, storage=storage(tmp_path))
    assert list(tmp_path.iterdir()) == []
