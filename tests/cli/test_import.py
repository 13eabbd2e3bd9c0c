"""``import tuner`` and ``tuner --help`` stay light: no TensorFlow, no Optuna."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import tuner

REPO = Path(__file__).resolve().parents[2]
OPTIONAL_PACKAGES = ("jax", "jaxlib")
"""Third-party packages that a submodule may need and this machine may lack (a backend)."""


def run_python(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_tuner_is_light() -> None:
    report = run_python(
        """
        import json, sys
        import tuner
        names = tuner.__all__
        version = tuner.__version__
        print(json.dumps({
            "names": names,
            "version": version,
            "tensorflow": "tensorflow" in sys.modules,
            "optuna": "optuna" in sys.modules,
            "keras": "keras" in sys.modules,
        }))
        """
    )
    assert report["tensorflow"] is False
    assert report["optuna"] is False
    assert report["keras"] is False
    assert report["names"] == tuner.__all__
    assert report["version"] == tuner.__version__


def test_help_does_not_import_tensorflow() -> None:
    report = run_python(
        """
        import io, json, runpy, sys
        from contextlib import redirect_stdout
        sys.argv = ["tuner", "--help"]
        buffer = io.StringIO()
        code = None
        try:
            with redirect_stdout(buffer):
                runpy.run_module("tuner", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({
            "code": code,
            "help": buffer.getvalue(),
            "tensorflow": "tensorflow" in sys.modules,
        }))
        """
    )
    assert report["code"] in (0, None)
    assert report["tensorflow"] is False
    help_text = str(report["help"])
    for command in ("search", "export", "show"):
        assert command in help_text


def test_public_api_resolves_without_tensorflow() -> None:
    report = run_python(
        """
        import json, sys
        import tuner
        missing = [name for name in tuner.__all__ if getattr(tuner, name, None) is None]
        print(json.dumps({"missing": missing, "tensorflow": "tensorflow" in sys.modules}))
        """
    )
    assert report["missing"] == []
    assert report["tensorflow"] is False


def test_every_export_is_its_object_after_every_submodule_is_imported() -> None:
    """A submodule import binds ``tuner.<submodule>``; no export may be shadowed by one (it was:
    ``from tuner import recommend`` once returned a module)."""
    imported = []
    for info in pkgutil.walk_packages(tuner.__path__, "tuner."):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] not in OPTIONAL_PACKAGES:
                raise
        else:
            imported.append(info.name)
    assert {"tuner.cli.app", "tuner.driver.study", "tuner.worker.__main__"} <= set(imported)
    for name in tuner.__all__:
        home = "tuner._version" if name == "__version__" else tuner._EXPORTS[name]
        assert getattr(tuner, name) is getattr(importlib.import_module(home), name), name


def test_the_public_face_is_the_documented_api() -> None:
    documented = {"search", "lr_find", "load_study", "load_recommendation", "SearchResult"}
    documented |= {"LrFindResult", "ConfigError", "TunerError", "__version__"}
    assert set(tuner.__all__) == documented


def test_lazy_attributes() -> None:
    from tuner import api, load

    assert tuner.search is api.search
    assert tuner.load_recommendation is load.load_recommendation
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = tuner.nope  # type: ignore[attr-defined]


def test_completion_offers_the_api_and_no_helper() -> None:
    # 46: tuner.<TAB> in Jupyter offered import_module but not search (lazy exports).
    assert dir(tuner) == tuner.__all__
    assert {"search", "load_recommendation"} <= set(dir(tuner))
    # Every module of tuner's is bound once imported (tuner.api, ...); nothing else public.
    public = {name for name in vars(tuner) if not name.startswith("_")}
    assert all(isinstance(getattr(tuner, name), types.ModuleType) for name in public), public
