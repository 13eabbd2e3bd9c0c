"""A fresh database on the test PostgreSQL server (``.ci/run`` starts it; its URL is in
``TUNER_TEST_POSTGRES``), dropped afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

PG_ADMIN = os.environ.get(
    "TUNER_TEST_POSTGRES", "postgresql+psycopg://tuner:tuner@127.0.0.1:5432/postgres"
)


@contextmanager
def fresh_database(prefix: str = "tuner") -> Iterator[str]:
    """The SQLAlchemy URL of a new, empty database, dropped (its connections closed) on leaving;
    the test fails, naming the server, when there is none."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    libpq = PG_ADMIN.replace("postgresql+psycopg://", "postgresql://")
    try:
        admin = psycopg.connect(libpq, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(f"no PostgreSQL at {PG_ADMIN} (.ci/run starts one): {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
