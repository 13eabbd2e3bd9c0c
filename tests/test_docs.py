"""The documentation against the code: every table in docs/reference that restates code is checked
here (statuses, spec keys, exit codes, JSON keys, CLI flags), README.md stays short, and every
relative link in README.md and docs/ points to a file that exists.

Fast and pure: no training, no child process (``--help`` runs in-process through Typer's runner).
"""

from __future__ import annotations

import enum
import importlib
import inspect
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial
from typer.testing import CliRunner

from tuner.cli.app import app
from tuner.cli.errors import exit_code, guard
from tuner.console.signals import Terminated
from tuner.core import errors
from tuner.core.outcome import STATES
from tuner.core.recommend import recommend
from tuner.core.recommend._export import export_document

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
README = ROOT / "README.md"

# --- helpers -------------------------------------------------------------------------------------


def table_rows(text: str, header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header row starts with ``header``, as cells."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    assert len(starts) == 1, f"expected one table headed {header!r}"
    rows = []
    for line in lines[starts[0] + 2 :]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([cell.strip() for cell in cells])
    assert rows, f"the table headed {header!r} is empty"
    return rows


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


# --- README and links ----------------------------------------------------------------------------


def test_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the detail into docs/"


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file(page: Path) -> None:
    text = without_code_blocks(page.read_text(encoding="utf-8"))
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    broken = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_the_link_check_sees_links() -> None:
    # Guards the regex above: README links into docs/, so a check that finds nothing is wrong.
    text = without_code_blocks(README.read_text(encoding="utf-8"))
    assert "docs/reference/cli.md" in re.findall(r"\]\(([^)\s]+)\)", text)


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    missing = sorted(page for page in pages if page not in nav)
    assert not missing, f"pages missing from the nav in mkdocs.yml: {missing}"


# --- trial statuses ------------------------------------------------------------------------------


def test_status_table_matches_the_code() -> None:
    rows = table_rows((REFERENCE / "statuses.md").read_text(encoding="utf-8"), "| status |")
    documented = {code_spans(status)[0]: state for status, state, _ in rows}
    assert len(documented) == len(rows), "a status is listed twice"
    assert documented == STATES


# --- spec keys -----------------------------------------------------------------------------------


def load_spec_function() -> Any:
    """``load_spec(path, overrides)``, wherever the refactoring has put it."""
    for module in ("tuner.driver.setup.spec_file", "tuner.core.spec"):
        try:
            found = getattr(importlib.import_module(module), "load_spec", None)
        except ImportError:
            continue
        if found is not None:
            return found
    raise AssertionError(
        "load_spec is neither in tuner.driver.setup.spec_file nor in tuner.core.spec"
    )


def spec_table() -> list[tuple[str, str, str, str | None]]:
    """``(section, key, required, default)`` rows of docs/reference/spec.md; ``required`` is
    ``yes``, ``no`` or ``one of`` (exactly one key of the group marked so)."""
    rows = table_rows((REFERENCE / "spec.md").read_text(encoding="utf-8"), "| section |")
    table = []
    for section, key, required, default, _ in rows:
        assert required in ("yes", "no", "one of"), f"required: yes, no or one of, not {required!r}"
        literal = re.fullmatch(r"`([^`]+)`", default)
        table.append((code_spans(section)[0], code_spans(key)[0], required, literal and literal[1]))
    return table


def known_keys(load_spec: Any, section: str) -> set[str]:
    """The keys the spec validator accepts in ``section``, read from its unknown-key error."""
    with pytest.raises(errors.ConfigError) as caught:
        load_spec(None, {f"{section}.zz_not_a_key": 1})
    found = re.search(rf"known keys of \[{section}\]: (.+)$", str(caught.value))
    assert found, f"unexpected message: {caught.value}"
    return {key.strip() for key in found[1].split(",")}


def test_spec_key_table_lists_exactly_the_keys_the_validator_accepts() -> None:
    load_spec = load_spec_function()
    with pytest.raises(errors.ConfigError) as caught:
        load_spec(None, {"zz_not_a_section.key": 1})
    sections = re.search(r"known: (.+)$", str(caught.value))
    assert sections, f"unexpected message: {caught.value}"
    table = spec_table()
    documented: dict[str, set[str]] = {}
    for section, key, _, _ in table:
        documented.setdefault(section, set()).add(key)
    assert set(documented) == {name.strip() for name in sections[1].split(",")}
    for section, keys in documented.items():
        assert keys == known_keys(load_spec, section), f"[{section}] keys differ from the code"


def full_spec_toml() -> str:
    text = (REFERENCE / "spec.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "spec.md should hold one full TOML spec"
    return blocks[0]


def spec_value(spec: Any, section: str, key: str) -> Any:
    return spec.name if section == "study" else spec.to_dict()[section][key]  # the flat keys


def test_required_and_default_columns_match_the_validator(tmp_path: Path) -> None:
    load_spec = load_spec_function()
    full = tomllib.loads(full_spec_toml())
    for section, key, required, default in spec_table():
        if key not in full.get(section, {}):
            continue  # only keys the example sets can be left out of it
        tables = {name: dict(values) for name, values in full.items()}
        del tables[section][key]
        path = tmp_path / f"{section}-{key}.toml"
        path.write_text(
            "".join(
                f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in values.items())
                for name, values in tables.items()
            ),
            encoding="utf-8",
        )
        if required == "yes":
            with pytest.raises(errors.ConfigError, match=rf"{section}\.{key} is missing"):
                load_spec(path, None)
        elif required == "one of":
            with pytest.raises(errors.ConfigError, match=rf"\[{section}\].* needs exactly one of"):
                load_spec(path, None)
        else:
            spec = load_spec(path, None)
            if default is not None:
                expected = tomllib.loads(f"value = {default}")["value"]
                assert spec_value(spec, section, key) == expected, f"{section}.{key} default"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return repr(value)


def test_the_full_spec_example_loads_with_the_documented_values(tmp_path: Path) -> None:
    path = tmp_path / "full.toml"
    path.write_text(full_spec_toml(), encoding="utf-8")
    spec = load_spec_function()(path, None)
    full = tomllib.loads(full_spec_toml())
    for section, values in full.items():
        for key, value in values.items():
            loaded = spec_value(spec, section, key)
            assert (list(loaded) if isinstance(loaded, tuple) else loaded) == value


# --- exit codes ----------------------------------------------------------------------------------


def exit_code_table() -> dict[int, list[str]]:
    rows = table_rows((REFERENCE / "exit-codes.md").read_text(encoding="utf-8"), "| code |")
    return {int(code_spans(code)[0]): code_spans(raised) for code, _, raised in rows}


def test_exit_code_table_matches_the_cli_error_table() -> None:
    table = exit_code_table()
    assert set(table) == {0, 1, 2, 130, 143}
    assert table[0] == []
    for code in (1, 2):
        for name in table[code]:
            kind = getattr(errors, name)
            assert exit_code(kind("x")) == code, f"{name} exits with {exit_code(kind('x'))}"


def test_every_user_facing_error_has_a_documented_exit_code() -> None:
    table = exit_code_table()
    documented = {name for code in (1, 2) for name in table[code]}
    public = {
        name
        for name, kind in inspect.getmembers(errors, inspect.isclass)
        if issubclass(kind, errors.TunerError) and kind.__module__ == errors.__name__
    }
    assert public <= documented, f"undocumented errors: {sorted(public - documented)}"


@pytest.mark.parametrize(
    ("interrupt", "code"), [(KeyboardInterrupt, 130), (Terminated, 143)], ids=["ctrl-c", "sigterm"]
)
def test_interrupt_exit_codes(interrupt: type[BaseException], code: int) -> None:
    assert interrupt.__name__ in exit_code_table()[code]

    def stopped() -> None:
        raise interrupt()

    with pytest.raises(typer.Exit) as caught:
        guard(stopped)
    assert caught.value.exit_code == code


# --- the recommended-config JSON -----------------------------------------------------------------

# The keys fixed by the design (DESIGN.md §3): every export has them.
FIXED_KEYS = {
    "study_name",
    "trial_number",
    "global_batch_size",
    "per_replica_batch_size",
    "num_replicas",
    "devices",
    "learning_rate",
    "lr_rule",
    "base_lr",
    "base_batch_size",
    "throughput",
    "final_loss",
    "largest_feasible_batch_size",
    "oom_batch_sizes",
    "versions",
    "created_at",
}
SIGNATURE = "2x cpu"
DISTRIBUTIONS = {
    "global_batch_size": CategoricalDistribution([64, 128, 256]),
    "lr_rule": CategoricalDistribution(["none", "linear"]),
}


def trial(number: int, batch: int, status: str = "ok", **attrs: Any) -> FrozenTrial:
    complete = status == "ok"
    made = create_trial(
        state=TrialState.COMPLETE if complete else TrialState.PRUNED,
        values=[0.5, 100.0 * batch] if complete else None,
        params={"global_batch_size": batch, "lr_rule": "none"},
        distributions=DISTRIBUTIONS,
        user_attrs={
            "status": status,
            "device_signature": SIGNATURE,
            "per_replica_batch_size": batch // 2,
            "num_replicas": 2,
            "devices": ["/cpu:0", "/cpu:1"],
            "learning_rate": 1e-3,
            **attrs,
        },
    )
    made.number = number
    return made


def swept_trial(number: int, lr: float, loss: float) -> FrozenTrial:
    """A point of a 3-rate LR sweep at batch 64 (its own grid point: the rule is a parameter)."""
    made = trial(number, 64, lr_rule=f"sweep-{number + 1}/3", learning_rate=lr, final_loss=loss)
    made.params["lr_rule"] = f"sweep-{number + 1}/3"
    return made


def export(trials: list[FrozenTrial], **extra: Any) -> dict[str, Any]:
    rec = recommend(
        trials,
        study_name="docs",
        base_lr=1e-3,
        base_batch_size=64,
        versions={"tuner": "0"},
        created_at="2024-01-01T00:00:00Z",
        **extra,
    )
    chosen = next(t for t in trials if t.number == rec["trial_number"])
    return export_document(rec, chosen, {}, None)  # the sections, as `tuner export` adds them


def json_tables() -> tuple[dict[str, bool], set[str]]:
    """Top-level keys (-> marked *sometimes*) and the keys of a per-signature entry."""
    text = (REFERENCE / "json.md").read_text(encoding="utf-8")
    parts = text.split("Each entry of `per_device_signature`", 1)
    assert len(parts) == 2, "json.md should describe the per-signature entries"
    top = {
        code_spans(key)[0]: "*sometimes*" in what for key, what in table_rows(parts[0], "| key |")
    }
    per = {code_spans(key)[0] for key, _ in table_rows(parts[1], "| key |")}
    return top, per


def test_json_key_tables_match_what_recommend_produces() -> None:
    plain = export([trial(0, 64)])
    oom_and_probe = export(
        [trial(0, 64), trial(1, 128), trial(2, 256, status="oom")],
        baselines={SIGNATURE: {"throughput": 50.0}},
        probes={SIGNATURE: {"largest_fitting_batch": 128, "smallest_oom_batch": 256}},
    )
    space = {
        "kind": "function",
        "reference": "m:build",
        "space": [
            {
                "class_name": "Choice",
                "config": {"name": "width", "values": [8, 16], "default": 8, "conditions": []},
            }
        ],
    }
    hypermodel = export([trial(0, 64, model_hyperparameters={"width": 16})], hypermodel=space)
    target = export([trial(0, 64, reached_target=True, time_to_target_s=2.0)], target_loss=0.1)
    swept = export(  # an LR sweep of three rates: the law, and lr* as the recommended rate
        [
            swept_trial(n, lr, loss)
            for n, (lr, loss) in enumerate([(5e-4, 0.6), (1e-3, 0.5), (2e-3, 0.55)])
        ]
    )
    accumulated = export(  # batch 128 reached only by 2 micro-steps of 32 per replica
        [
            trial(0, 64),
            trial(1, 128, accumulation_steps=2, micro_batch_per_replica=32),
        ]
    )
    assert "accumulation" in accumulated, "the accumulated batch was not recommended"
    produced = set(plain) | set(oom_and_probe) | set(hypermodel) | set(target) | set(swept)
    produced |= set(accumulated)
    top, per = json_tables()
    assert set(top) == produced
    assert {key for key, sometimes in top.items() if sometimes} == produced - set(plain)
    assert set(plain) >= FIXED_KEYS
    assert per == set(plain["per_device_signature"][SIGNATURE])


# --- the CLI -------------------------------------------------------------------------------------


def help_flags(output: str) -> set[str]:
    """The long flags of a ``--help`` page: the option column (rich's boxes or click's plain)."""
    flags = set()
    for line in output.splitlines():
        line = line.removeprefix("│")
        indent = len(line) - len(line.lstrip(" "))
        if not 1 <= indent <= 3 or not line.lstrip().startswith("-"):
            continue  # not an option line (a wrapped help text is indented further)
        for token in re.split(r"[\s,/]+", line.strip()):
            if not token.startswith("-"):
                break
            assert "…" not in token, f"a flag is cut off in --help: {token}"
            if token.startswith("--"):
                flags.add(token)
    return flags - {"--help"}


def cli_sections() -> dict[str, set[str]]:
    """Command -> the flags in the first column of its table in docs/reference/cli.md."""
    text = (REFERENCE / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^## tuner (\S+)\s*$", text, flags=re.M)
    sections = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        rows = table_rows(body, "| flag |")
        sections[name] = {flag for row in rows for flag in code_spans(row[0]) if flag[:2] == "--"}
    return sections


def run_help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_reference_documents_every_command_and_flag() -> None:
    group = typer.main.get_command(app)
    commands = set(group.commands)  # type: ignore[attr-defined]
    root = run_help()
    for name in commands:
        assert re.search(rf"^\W*{name}\b", root, re.M), f"{name} missing from tuner --help"
    sections = cli_sections()
    assert set(sections) == commands
    for name in sorted(commands):
        shown = help_flags(run_help(name))
        declared = {
            opt
            for param in group.commands[name].params  # type: ignore[attr-defined]
            if not getattr(param, "hidden", False)  # a deprecated alias, kept out of --help
            for opt in [*param.opts, *param.secondary_opts]
            if opt.startswith("--") and opt != "--help"
        }
        assert shown == declared, f"tuner {name} --help shows {sorted(shown ^ declared)} oddly"
        assert sections[name] == shown, (
            f"tuner {name}: undocumented {sorted(shown - sections[name])}, "
            f"stale {sorted(sections[name] - shown)}"
        )
    cli_text = (REFERENCE / "cli.md").read_text(encoding="utf-8")
    for flag in help_flags(root):
        assert f"`{flag}`" in cli_text or f"tuner {flag}" in cli_text, f"global {flag}"


def flag_rows(name: str) -> list[list[str]]:
    """The rows docs/reference/cli.md should hold for ``tuner NAME``: flags, default as
    ``--help`` shows it (a literal in backticks, or the words of a spec-backed default), help."""
    group = typer.main.get_command(app)
    rows = []
    for param in group.commands[name].params:  # type: ignore[attr-defined]
        names = [opt for opt in [*param.opts, *param.secondary_opts] if opt.startswith("-")]
        if getattr(param, "hidden", False) or param.name == "help" or not names:
            continue
        help_text = (param.help or "").replace("|", "\\|")
        kind = param.type_descriptor.annotation
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            help_text += " One of: " + ", ".join(f"`{choice.value}`" for choice in kind) + "."
        flags = " / ".join(f"`{opt}`" for opt in names)
        rows.append([flags, default_cell(param), help_text])
    return rows


def default_cell(param: Any) -> str:
    shown, default = getattr(param, "show_default", None), param.default
    if isinstance(shown, str):
        return shown
    if getattr(param, "is_flag", False) and param.secondary_opts:
        return f"`{param.opts[0] if default else param.secondary_opts[0]}`"
    if default is None or default is False or shown is False:
        return ""
    return f"`{default.value if isinstance(default, enum.Enum) else default}`"


def test_cli_reference_rows_say_what_help_says() -> None:
    text = (REFERENCE / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^## tuner (\S+)\s*$", text, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        documented = [[cell.strip() for cell in row] for row in table_rows(body, "| flag |")]
        assert documented == flag_rows(name), f"tuner {name}: docs/reference/cli.md differs"
