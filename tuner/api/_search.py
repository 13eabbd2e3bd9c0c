"""``tuner.search(model=..., data=..., **options)``: the CLI's search, called from Python."""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.api._functions import Shipment
from tuner.api._result import SearchResult
from tuner.core.errors import ConfigError, TunerError
from tuner.core.options import DEFAULT_STORAGE, named, naming, option, spec_only
from tuner.core.typos import closest

if TYPE_CHECKING:
    from tuner.console.search_view import SearchView

_REQUIRED_SEARCH = ("base_batch_size", "batch_multipliers", "lr_rules", "base_lr", "epochs")
"""What a spec file must name; without a file, the built-in workload's values stand."""

Function = Callable[..., Any] | str


def search(
    *,
    model: Function | Any | None = None,
    data: Function | None = None,
    dataset: Function | None = None,
    loss: Any = None,
    optimizer: Any = None,
    spec: str | Path | None = None,
    storage: str = DEFAULT_STORAGE,
    study_name: str | None = None,
    progress: bool = True,
    **options: Any,
) -> SearchResult | None:
    """Run (or resume) a study on your own functions and return its :class:`SearchResult`
    (``docs/guide/python.md``); on a gang's rank other than 0 (``hosts=``, ``rank=``), ``None``
    once rank 0 says the search is over.

    ``model`` builds a ``keras.Model`` (compiled or not) or is a KerasTuner ``HyperModel``;
    ``data`` returns what ``[workload] data`` returns, or ``dataset(split, batch_size,
    input_context)`` a split: each a function or a ``"module:function"`` string. ``loss`` and
    ``optimizer``: Keras names, serialized forms or objects of Keras's own classes. ``spec``: a
    TOML spec whose ``[workload]`` these replace (else the built-in grid). Every other option is
    ``tuner search``'s flag with underscores, or a spec-only ``[search]`` key; ``progress=False``
    shows nothing. Raises :class:`~tuner.core.errors.ConfigError` for bad input (nothing stored)
    and :class:`~tuner.core.errors.TunerError` at run time, with the CLI's lines.
    """
    from tuner.driver.options import SearchOptions, spec_and_plan
    from tuner.driver.search import follow
    from tuner.driver.search import search as run

    with naming("search", keywords=True):
        check_known("tuner.search", options, SearchOptions, {"spec", "storage", "study_name"})
        options = {key: checked("search", key, value) for key, value in options.items()}
        spec_values = {r.key: options.pop(r.key) for r in spec_only(None) if r.key in options}
        tables = _tables(spec, loss=loss, optimizer=optimizer)
        name = study_name or tables["study"].get("name") or _default_name(model)
        tables["study"]["name"] = name
        shipment = Shipment(_shipping_folder(storage, name))
        ship_workload(shipment, tables["workload"], "tuner.search", model, data, dataset)
        search_options = SearchOptions(
            spec=tables, storage=storage, study_name=name, spec_values=spec_values, **options
        )
        spec_and_plan(search_options, search_options.trial_timeout)  # bad input: nothing written
    shipment.write()
    front = _front() if progress else None
    try:  # the run's refusals name keywords too (storage=, not --storage)
        with naming("search", keywords=True), shipment.importable(), front or nullcontext():
            followed = follow(search_options, front)  # a gang's rank ≠ 0: no study here
            if followed is not None:
                _followed(followed)
                return None
            report = run(search_options, front)
    except ConfigError:
        shipment.discard()  # refused (another grid, in memory, ...): nothing of this call stays
        raise
    result = SearchResult(report.study, storage, shipped=shipment.shipped)
    if progress:
        result.show()
    return result


def _followed(code: int) -> None:
    """A follower's end: ``None`` once rank 0 said the search is over, else the error."""
    if code == 2:
        raise ConfigError("this rank was refused by rank 0 of its gang (the line above says why)")
    if code != 0:
        raise TunerError("this rank's gang ended without rank 0's word (the line above says why)")
    return None


def ship_workload(
    shipment: Shipment,
    workload: dict[str, Any],
    caller: str,
    model: Any,
    data: Any,
    dataset: Any,
) -> None:
    """Name the given functions in the spec's ``[workload]`` table (shipped by value where no
    child can import them); ``caller`` names the refusal of a workload without model or data."""
    for role, value in (("model", model), ("data", data), ("dataset", dataset)):
        if value is not None:
            workload[role] = shipment.reference(value, role)
            workload.pop({"data": "dataset", "dataset": "data"}.get(role, ""), None)
    if "model" not in workload or not ({"data", "dataset"} & workload.keys()):
        raise ConfigError(f"{caller} needs model= and data= (or dataset=), or a spec= naming them")


def check_known(caller: str, options: Mapping[str, Any], kind: type, taken: set[str]) -> None:
    """Refuse an option that is no field of ``kind`` but ``taken`` nor a spec-only key, naming
    the nearest known one."""
    names = {field.name for field in dataclasses.fields(kind)}
    known = names - taken - {"spec_values"}
    if "spec_values" in names:  # SearchOptions: its spec-only keys are keywords too
        known |= {row.key for row in spec_only(None)}
    for key in sorted(options.keys() - known):
        near = closest(key, sorted(known))
        hint = f"did you mean {near}=?" if near else f"known: {', '.join(sorted(known))}"
        raise ConfigError(f"{caller} got an unknown option {key}=; {hint}")


def _tables(spec: str | Path | None, *, loss: Any, optimizer: Any) -> dict[str, Any]:
    """The spec's tables: the file's, or the built-in grid with an empty workload."""
    from tuner.core.spec import spec_from_dict
    from tuner.driver.setup.spec_file import read_toml

    if spec is not None:
        raw = read_toml(Path(spec))
        tables = {
            key: dict(value) if isinstance(value, dict) else value for key, value in raw.items()
        }
    else:
        builtin = spec_from_dict(None).to_dict()["search"]
        tables = {"workload": {}, "search": {key: builtin[key] for key in _REQUIRED_SEARCH}}
    for section in ("study", "workload", "search"):
        tables.setdefault(section, {})
    for role, value in (("loss", loss), ("optimizer", optimizer)):
        if value is not None:
            tables["workload"][role] = keras_object(role, value)
    return tables


def keras_object(role: str, value: Any) -> str | dict[str, Any]:
    """A ``loss=`` or ``optimizer=`` as the spec holds it: a name or serialized form as given, an
    object of Keras's own classes serialized; any other object is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if _keras_function(value):  # keras.losses.huber: Keras finds it by its name
        return str(value.__name__)
    if type(value).__module__.split(".")[0] == "keras":
        import keras

        module = keras.losses if role == "loss" else keras.optimizers
        serialized = module.serialize(value)
        return {key: item for key, item in serialized.items() if item is not None}
    example = "mse" if role == "loss" else "adam"
    raise ConfigError(
        f"{role}= takes a Keras name such as {example!r}; also Keras's serialized form or an "
        f"object of a Keras class; for a {type(value).__name__} object, compile it in your model "
        "function (tuner uses the build's compile)"
    )


def _keras_function(value: Any) -> bool:
    """A function of Keras's own (``keras.losses.huber``)."""
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, types.FunctionType) and module.split(".")[0] == "keras"


def _default_name(model: Any) -> str:
    """A study named after the model's function (``build_model``), else ``tuner``."""
    if isinstance(model, str):
        return model.rpartition(":")[2] or "tuner"
    name = getattr(model, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "tuner"


def _shipping_folder(storage: str, study_name: str) -> Path:
    """Where a study's shipped functions live: beside a SQLite file, else in the user's cache."""
    import hashlib

    from tuner.storage.places import locate

    place = locate(storage)
    if place.path is not None:
        root = place.path.parent / "shipped"
    else:
        root = Path.home() / ".cache" / "tuner" / "shipped"
    where = str(place.path.resolve()) if place.path is not None else storage
    return root / f"{study_name}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"


def _front() -> SearchView:
    """The CLI's view: bars in a terminal, timestamped lines elsewhere."""
    from tuner.console.logs import NORMAL, configure
    from tuner.console.pages import err
    from tuner.console.search_view import SearchView

    configure(NORMAL, err)
    return SearchView()


_ACCEPTED: dict[type, Any] = {
    Path: str | os.PathLike,
    tuple: str | list | tuple,
    float: int | float,
}
_KIND_WORDS: dict[type, str] = {
    bool: "True or False",
    int: "an integer",
    float: "a number",
    str: "a string",
    Path: "a path (str or Path)",
    tuple: "a list or comma-separated text",
}


def checked(command: str, key: str, value: Any) -> Any:
    """``value`` for ``command``'s option ``key``, checked against its type as a flag is."""
    kind = option(key, command).kind
    if value is None:
        return value
    number = kind in (int, float)  # a bool is an int to Python, not to a flag
    if isinstance(value, _ACCEPTED.get(kind, kind)) and not (number and isinstance(value, bool)):
        return Path(value) if kind is Path else value
    wanted = _KIND_WORDS.get(kind, kind.__name__)
    raise ConfigError(f"{named(key)} takes {wanted}, got {type(value).__name__} {value!r}")
