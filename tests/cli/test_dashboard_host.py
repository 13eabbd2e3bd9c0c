"""``tuner dashboard --host``: which addresses are loopback, and the warning on stderr when the
dashboard (no login; it edits notes and deletes studies) listens anywhere else."""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import optuna
import pytest
from conftest import invoke_tuner, tuner_env

from tuner.views import dashboard as views_dashboard
from tuner.views.dashboard import SECURITY_DOCS, exposure_warning, is_loopback

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.8.9.10", "127.255.255.254", "::1", "::ffff:127.0.0.1", "localhost",
     "LocalHost", "localhost."],
)  # fmt: skip
def test_loopback_addresses_and_localhost_are_loopback(host: str) -> None:
    assert is_loopback(host)
    assert exposure_warning(host) is None


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "", "192.168.1.20", "10.0.0.5", "128.0.0.1", "fe80::1%eth0", "2001:db8::1",
     "::ffff:10.0.0.1", "example.com", "localhost.example.com", "my-laptop"],
)  # fmt: skip
def test_every_other_address_and_name_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)  # names are never resolved: only `localhost` counts


def test_the_warning_is_one_line_with_the_host_and_points_to_an_existing_page() -> None:
    warning = exposure_warning("0.0.0.0")
    assert warning is not None and "\n" not in warning
    assert "0.0.0.0" in warning and "every study" in warning and "without logging in" in warning
    assert SECURITY_DOCS in warning and (ROOT / SECURITY_DOCS).is_file()
    assert f"warning: {warning}" in (ROOT / SECURITY_DOCS).read_text()  # the page quotes it


def test_the_host_is_printed_literally_not_as_rich_markup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def serve(storage: str, host: str, port: int, on_ready: Any, **_: Any) -> None:  # then ^C
        on_ready(f"http://{host}:{port}/dashboard/")
        raise KeyboardInterrupt

    monkeypatch.setattr(views_dashboard, "serve", serve)
    result = invoke_tuner("dashboard", "--host", "[bold]lab[/bold]", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert "listens on [bold]lab[/bold]," in line


def empty_study(folder: Path) -> str:
    url = f"sqlite:///{folder}/s.db"
    optuna.create_study(study_name="s", storage=url, directions=["minimize", "maximize"])
    return url


def sigint_by_default() -> None:
    """In the child: Ctrl-C works even when pytest runs in the background, where the shell has
    SIGINT ignored and the child would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve_and_stop(
    url: str, host: str, cwd: Path, *flags: str
) -> tuple[str, str, list[str], list[int]]:
    """Run a real ``tuner dashboard --host HOST --port 0 FLAGS``; once it prints its URL, list
    the studies through 127.0.0.1, then ask it (as optuna-dashboard's page does) to rename,
    create and delete a study, and stop it with SIGINT. Returns (ready line, stderr, studies,
    the three answers' HTTP status codes)."""
    command = ["dashboard", "--storage", url, "--host", host, "--port", "0", *flags]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", *command],
        cwd=cwd, env=tuner_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_by_default,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        port = re.search(r"http://\S+:(\d+)/dashboard/", line)
        assert port, f"no URL printed: {line!r}"
        api = f"http://127.0.0.1:{port[1]}/api/studies"
        with urllib.request.urlopen(api, timeout=30) as response:
            studies = [s["study_name"] for s in json.load(response)["study_summaries"]]
        created, body = _ask(api, "POST", {"study_name": "new", "directions": ["minimize"]})
        new_id = body.get("study_summary", {}).get("study_id", 2)
        renamed, _ = _ask(f"{api}/{new_id}/rename", "POST", {"study_name": "renamed"})
        deleted, _ = _ask(f"{api}/1", "DELETE")
        writes = [created, renamed, deleted]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()  # never leave a server behind
            raise
    assert proc.returncode == 0, stderr
    return line, stderr, studies, writes


def _ask(url: str, method: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """One request to the dashboard's API: (HTTP status, the JSON answer)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return int(response.status), json.loads(text) if text else {}
    except urllib.error.HTTPError as refused:
        answer = json.load(refused)
        if refused.code == 403:  # the reason optuna-dashboard's page shows
            assert "read-only" in answer["reason"]
        return int(refused.code), answer


@pytest.mark.slow  # two real dashboard servers: seconds, so out of the fast tier (CI runs it)
def test_only_a_host_beyond_loopback_warns_once_on_stderr_and_both_serve(tmp_path: Path) -> None:
    url = empty_study(tmp_path)
    line, stderr, studies, writes = serve_and_stop(url, "0.0.0.0", tmp_path)
    assert "http://0.0.0.0:" in line and studies == ["s"]  # a warning, not a refusal
    warnings = [text for text in stderr.splitlines() if text.startswith("warning:")]
    assert warnings == [f"warning: {exposure_warning('0.0.0.0')}"]
    assert "dashboard stopped" in stderr
    # Read-only by default: renaming, creating and deleting a study are refused, nothing changed.
    assert writes == [403, 403, 403]
    assert optuna.get_all_study_names(url) == ["s"]

    line, stderr, studies, writes = serve_and_stop(url, "127.0.0.1", tmp_path, "--allow-writes")
    assert "http://127.0.0.1:" in line and studies == ["s"]
    assert "warning" not in stderr and "dashboard stopped" in stderr
    assert all(200 <= code < 300 for code in writes), writes  # asked for: the page may write
    assert optuna.get_all_study_names(url) == ["renamed"]  # "new" created and renamed, "s" gone
