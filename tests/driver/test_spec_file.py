"""Reading a study spec from a TOML file: the shipped specs, file errors, and labels that name the
file (validation itself is tested, without files, in tests/core/spec/test_spec.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.core.errors import ConfigError
from tuner.driver.setup.spec_file import load_spec

STUDIES = Path(__file__).resolve().parents[2] / "studies"

VALID = """\
[study]
name = "unit"

[workload]
model = "tuner.workloads.regression:build_model"
data = "tuner.workloads.regression:load_data"

[search]
base_batch_size = 64
batch_multipliers = [1, 2]
lr_rules = ["none", "linear", "sqrt"]
base_lr = 1e-3
epochs = 3
"""


def spec_file(tmp_path: Path, text: str = VALID) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_builtin_equals_regression_toml() -> None:
    builtin = load_spec()
    from_file = load_spec(STUDIES / "regression.toml")
    assert builtin == from_file
    assert builtin.to_dict() == from_file.to_dict()
    assert builtin.source == "built-in regression workload"
    assert from_file.source == str(STUDIES / "regression.toml")


@pytest.mark.parametrize(
    ("filename", "name", "data", "budget"),
    [
        ("mnist.toml", "mnist", "tuner.workloads.mnist:load_datasets", (None, 180_000, 10_000)),
        (
            "mnist-synthetic.toml",
            "mnist-synthetic",
            "tuner.workloads.mnist:load_synthetic_data",
            (3, None, None),
        ),
    ],
)
def test_mnist_specs_load(
    filename: str, name: str, data: str, budget: tuple[int | None, ...]
) -> None:
    spec = load_spec(STUDIES / filename)
    assert spec.name == name
    assert spec.workload.model == "tuner.workloads.mnist:build_model"
    assert spec.workload.data == data
    assert spec.workload.loss == "sparse_categorical_crossentropy"
    assert spec.search.grid.global_batch_sizes == (32, 64, 128)
    assert spec.search.grid.lr_rules == ("none", "linear", "sqrt")
    run = spec.search.run
    assert (run.epochs, run.train_samples, run.val_samples) == budget


@pytest.mark.parametrize("filename", ["images.toml", "records.toml"])
def test_the_tf_data_examples_load_with_a_sample_budget(filename: str) -> None:
    spec = load_spec(STUDIES / filename)
    assert (
        spec.search.run.epochs is None
        and spec.search.run.train_samples
        and spec.search.run.val_samples
    )


def test_path_may_be_a_string(tmp_path: Path) -> None:
    path = spec_file(tmp_path)
    assert load_spec(str(path)) == load_spec(path)


def test_overrides_apply_to_a_file(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path), {"search.epochs": 7})
    assert spec.search.run.epochs == 7
    assert spec.name == "unit"


def test_field_errors_name_the_file(tmp_path: Path) -> None:
    path = spec_file(tmp_path, VALID.replace("epochs = 3", "epochs = 1"))
    with pytest.raises(ConfigError, match="must be at least 2") as info:
        load_spec(path)
    assert f"search.epochs in {path}" in str(info.value)


def test_override_errors_name_the_flag_not_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--epochs must be at least 2"):
        load_spec(spec_file(tmp_path), {"search.epochs": 1})


def test_section_not_a_table_names_the_file(tmp_path: Path) -> None:
    path = spec_file(tmp_path, 'study = "x"\n' + VALID.replace('[study]\nname = "unit"\n', ""))
    with pytest.raises(ConfigError, match=r"\[study\] in .* must be a table") as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="does not exist") as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_directory_is_not_a_spec(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_spec(tmp_path)


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[study\nname = = 'x'\n")
    with pytest.raises(ConfigError, match="is not valid TOML") as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "binary.toml"
    path.write_bytes(b"\xff\xfe\x00name")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_spec(path)


def test_a_utf8_bom_is_read(tmp_path: Path) -> None:
    # Windows Notepad (before 2019) and PowerShell 5's Out-File -Encoding utf8 start UTF-8 files
    # with a byte-order mark, which TOML does not allow.
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + VALID.encode("utf-8"))
    assert load_spec(path) == load_spec(spec_file(tmp_path))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_utf16_or_utf32_file_is_refused_naming_the_encoding(
    tmp_path: Path, encoding: str
) -> None:
    path = tmp_path / "wide.toml"
    path.write_bytes(VALID.encode(encoding))  # with its byte-order mark, as Notepad's "Unicode"
    with pytest.raises(ConfigError, match=rf"{encoding.upper()} text.*save it as UTF-8") as info:
        load_spec(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
