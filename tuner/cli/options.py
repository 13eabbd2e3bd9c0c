"""What the CLI's commands share: option types, consoles, spec and device loading, JSON output."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from tuner.cli.secrets import storage_from_file
from tuner.core.errors import ConfigError
from tuner.files import atomic_write_text

if TYPE_CHECKING:
    from tuner.core.devices import DevicePlan
    from tuner.core.spec import StudySpec

# Piped output (a file, CI logs) gets a wide page instead of rich's 80 columns, so that tables are
# not truncated; a terminal keeps its own width.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

StorageOpt = Annotated[
    str,
    typer.Option(
        "--storage",
        envvar="TUNER_STORAGE",
        show_envvar=True,
        callback=storage_from_file,
        help="Optuna storage URL (or set TUNER_STORAGE, or TUNER_STORAGE_FILE naming a file "
        "that holds it: either keeps a password out of `ps`).",
    ),
]
StudyNameOpt = Annotated[str, typer.Option("--study-name", help="Name of the study.")]
NewStudyNameOpt = Annotated[
    str | None,
    typer.Option(
        "--study-name",
        help="Study name (default: the spec's name); letters, digits, '.', '_' or '-'.",
    ),
]
SpecOpt = Annotated[
    Path | None, typer.Option("--study", help="Study spec (TOML); default: built-in regression.")
]
GpusOpt = Annotated[str | None, typer.Option(help="GPU indices, e.g. 0,1 (default: all).")]
CpuReplicasOpt = Annotated[
    int | None, typer.Option(help="Run on N logical CPU devices instead of GPUs.")
]
MemoryLimitOpt = Annotated[
    str | None, typer.Option(help="Memory cap per device, e.g. 512MiB or 14GiB.")
]
BaseBatchOpt = Annotated[int | None, typer.Option(help="Base global batch B.")]
BaseLrOpt = Annotated[float | None, typer.Option(help="Learning rate at batch B.")]
EpochsOpt = Annotated[int | None, typer.Option(help="Epochs per run (at least 2).")]
TrainSamplesOpt = Annotated[
    int | None,
    typer.Option(help="Samples every trial trains on, whatever its batch (instead of --epochs)."),
]
ValSamplesOpt = Annotated[
    int | None,
    typer.Option(help="The fixed validation set: its first N samples, in order."),
]
LoopOpt = Annotated[
    str | None, typer.Option(help="Training loop: fit (Keras fit) or custom (strategy.run).")
]
UpdateOnOpt = Annotated[
    str | None,
    typer.Option(help="Where the weights are updated: replicas, or cpu (needs --loop custom)."),
]
ResolutionOpt = Annotated[
    int | None,
    typer.Option(help="Probe resolution in samples (default: an eighth of the base batch)."),
]
MultipliersOpt = Annotated[
    str | None, typer.Option(help="Global batches as multiples of B, e.g. 1,2,4.")
]
RulesOpt = Annotated[str | None, typer.Option(help="Learning-rate rules: none,linear,sqrt.")]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds before a child run is killed.")]


def overrides(
    base_batch_size: int | None,
    base_lr: float | None,
    epochs: int | None,
    loop: str | None,
    update_on: str | None,
) -> dict[str, Any]:
    """The spec overrides that search and validate share (``None``: keep the spec's value)."""
    return {
        "search.base_batch_size": base_batch_size,
        "search.base_lr": base_lr,
        "search.epochs": epochs,
        "search.loop": loop,
        "search.update_on": update_on,
    }


def budget_overrides(train_samples: int | None, val_samples: int | None) -> dict[str, Any]:
    """The sample budget's spec overrides (``--train-samples`` replaces the spec's epochs)."""
    return {"search.train_samples": train_samples, "search.val_samples": val_samples}


def grid_overrides(batch_multipliers: str | None, lr_rules: str | None) -> dict[str, Any]:
    """The grid's spec overrides from their comma-separated flags."""
    from tuner.core.spec_fields import parse_int_list, parse_name_list

    return {
        "search.batch_multipliers": batch_multipliers
        and parse_int_list(batch_multipliers, "--batch-multipliers"),
        "search.lr_rules": lr_rules and parse_name_list(lr_rules, "--lr-rules"),
    }


def spec_and_plan(
    study: Path | None,
    gpus: str | None,
    cpu_replicas: int | None,
    memory_limit: str | None,
    timeout: float,
    overrides: dict[str, Any],
) -> tuple[StudySpec, DevicePlan]:
    """Load and check the spec and the devices (shared by search and validate)."""
    from tuner.driver.devices import plan_devices
    from tuner.driver.spec_file import load_spec

    if not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"--trial-timeout must be a positive number of seconds, got {timeout}")
    spec = load_spec(study, overrides)
    plan, notice = plan_devices(gpus, cpu_replicas, memory_limit)
    if notice:
        err.print(f"[yellow]{escape(notice)}[/]", highlight=False)
    return spec, plan


def check_output(path: Path, flag: str) -> None:
    """Refuse, before any work is done, an output file that cannot be written: a folder, or a
    path whose folder is missing, is not a folder, or may not be written to."""
    folder = path.parent
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a directory; give a file name")
    if not folder.exists():
        raise ConfigError(f"{flag} {path}: folder {folder} does not exist; create it first")
    if not folder.is_dir():
        raise ConfigError(f"{flag} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: folder {folder} is not writable")


def warn(message: str) -> None:
    """``warning: MESSAGE`` on stderr, the message printed literally (it quotes paths and URLs)."""
    err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically; an unwritable path is bad input."""
    try:
        atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
