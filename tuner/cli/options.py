"""What the CLI's commands share: option types, consoles, the notices and lines, JSON output."""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape

from tuner.cli.choices import Backend, Loop, LrRule, UpdateOn, value
from tuner.cli.logs import say_info
from tuner.cli.secrets import storage_from_file
from tuner.core.errors import ConfigError
from tuner.files import atomic_write_text

if TYPE_CHECKING:
    from tuner.driver.options import SpecOptions

Options = TypeVar("Options", bound="SpecOptions")

PIPED_WIDTH = 160
"""The page width of piped output (a file, a CI log) when ``COLUMNS`` does not say."""


class PageConsole(Console):
    """A rich console whose page width is decided at each print, not at import: ``COLUMNS`` when
    set, else a terminal's own width, else :data:`PIPED_WIDTH` (rich's 80 columns would leave
    a log or a file narrower than the screen it is read on)."""

    def __init__(self, **options: Any) -> None:
        # Rich reads COLUMNS itself when built (and crashes on one like "²"); this console
        # reads it at each print instead, so rich is given an environment without it.
        environ = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
        super().__init__(_environ=environ, **options)

    @property
    def size(self) -> ConsoleDimensions:
        height = super().size.height
        columns = os.environ.get("COLUMNS", "")
        if columns.isdecimal() and int(columns) > 0:
            return ConsoleDimensions(int(columns), height)
        if self.is_terminal:
            return super().size
        return ConsoleDimensions(PIPED_WIDTH, height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:  # settable as in rich; unused by tuner
        self._width, self._height = new_size


out = PageConsole()
err = PageConsole(stderr=True)


def spec_default(key: str) -> str:
    """How ``--help`` shows the default of a flag that overrides the spec: the spec's value,
    and the built-in spec's (one form for every such flag)."""
    from tuner.core.spec import spec_from_dict

    spec = spec_from_dict()
    found = getattr(spec.workload if key == "backend" else spec.search, key)
    if isinstance(found, bool):
        shown = "on" if found else "off"
    else:
        shown = ",".join(map(str, found)) if isinstance(found, tuple) else found
    return f"spec, else {shown}"


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
StudyNameOpt = Annotated[
    str | None,
    typer.Option(
        "--study-name",
        help="Name of the study.",
        show_default="the storage's only study",
    ),
]
NewStudyNameOpt = Annotated[
    str | None,
    typer.Option(
        "--study-name",
        help="Study name: letters, digits, '.', '_' or '-'.",
        show_default="the spec's name",
    ),
]
SpecOpt = Annotated[
    Path | None,
    typer.Option("--spec", help="Study spec (TOML file).", show_default="built-in regression"),
]
OldSpecOpt = Annotated[
    Path | None,
    typer.Option("--study", hidden=True, help="Deprecated alias of --spec."),
]
GpusOpt = Annotated[
    str | None,
    typer.Option(help="GPU indices, e.g. 0,1.", show_default="all visible; none: 2 CPU replicas"),
]
CpuReplicasOpt = Annotated[
    int | None, typer.Option(help="Run on N logical CPU devices instead of GPUs.")
]
MemoryLimitOpt = Annotated[
    str | None, typer.Option(help="Memory cap per device, e.g. 512MiB or 14GiB.")
]
BaseBatchOpt = Annotated[
    int | None,
    typer.Option(help="Base global batch B.", show_default=spec_default("base_batch_size")),
]
BaseLrOpt = Annotated[
    float | None,
    typer.Option(help="Learning rate at batch B.", show_default=spec_default("base_lr")),
]
EpochsOpt = Annotated[
    int | None,
    typer.Option(help="Epochs per run (at least 2).", show_default=spec_default("epochs")),
]
TrainSamplesOpt = Annotated[
    int | None,
    typer.Option(help="Samples every trial trains on, whatever its batch (instead of --epochs)."),
]
ValSamplesOpt = Annotated[
    int | None,
    typer.Option(help="The fixed validation set: its first N samples, in order."),
]
LoopOpt = Annotated[
    Loop | None,
    typer.Option(
        help="Training loop: Keras fit, or custom (strategy.run).",
        show_default=spec_default("loop"),
    ),
]
UpdateOnOpt = Annotated[
    UpdateOn | None,
    typer.Option(
        help="Where the weights are updated (cpu needs --loop custom).",
        show_default=spec_default("update_on"),
    ),
]
BackendOpt = Annotated[
    Backend | None,
    typer.Option(
        help="Keras backend: tensorflow (MirroredStrategy) or jax (keras.distribution).",
        show_default=spec_default("backend"),
    ),
]
PrecisionsOpt = Annotated[
    str | None,
    typer.Option(
        help="Precisions, comma-separated, from: float32, mixed_bfloat16, mixed_float16.",
        show_default=spec_default("precisions"),
    ),
]
ResolutionOpt = Annotated[
    int | None,
    typer.Option(help="Probe resolution in samples (default: an eighth of the base batch)."),
]
MultipliersOpt = Annotated[
    str | None,
    typer.Option(
        help="Global batches as multiples of B, e.g. 1,2,4.",
        show_default=spec_default("batch_multipliers"),
    ),
]
RulesOpt = Annotated[
    str | None,
    typer.Option(
        "--lr-rules",
        "--lr-rule",
        help=f"Learning-rate rules, comma-separated, from: {', '.join(LrRule)}.",
        show_default=spec_default("lr_rules"),
    ),
]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds before a child run is killed.")]


def options_of(kind: type[Options], flags: dict[str, Any]) -> Options:
    """A command's options from its Typer parameters, which are named as the options' fields:
    the spec file of ``--spec`` or of its deprecated alias ``--study``, each choice as its plain
    string."""
    given: dict[str, Any] = {
        key: value(flag) if isinstance(flag, StrEnum) else flag for key, flag in flags.items()
    }
    given["spec"] = spec_path(given["spec"], given.pop("study"))
    return kind(**given)


class LineView:
    """A command drawn as lines on stderr (a :class:`tuner.driver.search.Front`): its notices
    (:func:`notice`), and its notes as info lines (hidden by ``-q``)."""

    def notice(self, message: str) -> None:
        notice(message)

    def note(self, message: str) -> None:
        say_info(message)


def notice(message: str) -> None:
    """A line the user should read even with ``-q``, in yellow, printed literally."""
    err.print(f"[yellow]{escape(message)}[/]", highlight=False)


def spec_path(spec: Path | None, old_flag: Path | None) -> Path | None:
    """The spec file of ``--spec``, or of its deprecated alias ``--study`` (with a warning)."""
    if old_flag is None:
        return spec
    if spec is not None:
        raise ConfigError("give the spec file once, with --spec (--study is its old name)")
    warn("--study is deprecated: use --spec (--study-name names the study)")
    return old_flag


def warn(message: str) -> None:
    """``warning: MESSAGE`` on stderr, the message printed literally (it quotes paths and URLs)."""
    err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically; an unwritable path is bad input."""
    try:
        atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
