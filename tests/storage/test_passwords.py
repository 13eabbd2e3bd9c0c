"""A storage URL's password never reaches a line tuner prints (issue 44, case 5): the URL is
parsed as SQLAlchemy parses it, and a password holding ``/``, ``@``, ``#`` or ``:`` or given as
``?password=`` is hidden, as is what a driver's message repeats of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_tuner
from pg_databases import PG_ADMIN

from tuner.storage import mask_password

SECRETS = ["wr/ong-1", "wr@ong-2", "wr#ong-3", "wr:ong-4"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pa/ss@host/db", "postgresql://u:***@host/db"),
        ("postgresql://u:pa@ss@host/db", "postgresql://u:***@host/db"),
        ("postgresql://u:pa#ss@host:5432/db", "postgresql://u:***@host:5432/db"),
        ("postgresql://u:pa:ss@host/db", "postgresql://u:***@host/db"),
        ("postgresql://u@host/db?password=s3cret&sslmode=require",
         "postgresql://u@host/db?password=***&sslmode=require"),
        ("postgresql://u:p@ss#:w@host/db", "postgresql://***"),  # SQLAlchemy cannot read it
        ("sqlite:///studies/a@b.db", "sqlite:///studies/a@b.db"),
        ("sqlite:///file:a.db?mode=ro&uri=true", "sqlite:///file:a.db?mode=ro&uri=true"),
    ],
)  # fmt: skip
def test_the_url_is_parsed_and_its_password_hidden(url: str, shown: str) -> None:
    assert mask_password(url) == shown


@pytest.mark.postgres
@pytest.mark.parametrize("secret", [*SECRETS, "?password"])
def test_a_refused_login_names_the_storage_without_its_password(
    secret: str, tmp_path: Path
) -> None:
    if secret == "?password":
        url, secret = PG_ADMIN.replace("tuner:tuner@", "tuner@") + "?password=wr0ng-5", "wr0ng-5"
    else:
        url = PG_ADMIN.replace("tuner:tuner@", f"tuner:{secret}@")
    result = invoke_tuner("show", "--storage", url, "--study-name", "x", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "cannot open storage postgresql+psycopg://tuner" in result.stderr
    # Neither the password nor a piece of it that SQLAlchemy read as the host is printed.
    for piece in {secret, *secret.replace("/", "@").replace("#", "@").split("@")} - {"wr"}:
        assert piece not in result.stderr, result.stderr
