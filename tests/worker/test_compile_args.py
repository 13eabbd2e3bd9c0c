"""A build that compiles its model is honoured (issue 28, part 3): its own loss, metric and
optimizer objects are used, never round-tripped through serialisation (custom classes defined in
the build are found by nothing else), the optimizer is made again at the rule's rate, the spec's
names fill only what the build leaves out, and what is used is described by name."""

from __future__ import annotations

import keras
import pytest
from child_requests import inspect_request, run_request, workload

from tuner.worker import compiled, optim
from tuner.worker.check import check_workload
from tuner.worker.session import ModelRecipe

CUSTOM = "compiled_builds:custom_objects"
SGD_MAE = "compiled_builds:sgd_mae"
UNCOMPILED = "compiled_builds:uncompiled"
DATA = "compiled_builds:regression_data"


def recipe(model: str, **fields: object) -> ModelRecipe:
    request = run_request(model=model, data=DATA, learning_rate=2e-3, **fields)
    return ModelRecipe(request, None, _weights(model), "float32")


def _weights(model: str) -> list:
    import compiled_builds

    return getattr(compiled_builds, model.split(":")[1])().get_weights()


def compiled_builds_data() -> tuple:
    import compiled_builds

    return compiled_builds.regression_data()


def test_the_builds_own_custom_objects_are_used_and_the_optimizer_is_rebuilt_at_the_rate() -> None:
    made = recipe(CUSTOM)
    model = made.build()
    loss, metrics = model._compile_config.config["loss"], model._compile_config.config["metrics"]
    args = made.compile_args()
    assert args["loss"] is loss  # the object itself: no serialisation round trip
    assert args["metrics"] is metrics
    optimizer = args["optimizer"]
    assert type(optimizer).__name__ == "CarefulSGD" and optimizer.care == 0.25
    assert optimizer is not model.optimizer  # a fresh one, same class and settings
    assert float(optimizer.learning_rate) == pytest.approx(2e-3)
    assert float(optimizer.momentum) == pytest.approx(0.5)
    model.compile(**args)
    model.fit(*compiled_builds_data()[:2], batch_size=256, epochs=1, verbose=0)


def test_what_a_custom_build_compiled_is_described_by_class_and_module() -> None:
    made = recipe(CUSTOM)
    made.build()
    made.compile_args()
    described = made.describe()
    assert described == {
        "from_build": True,
        "loss": {"class": "CustomMSE", "module": "compiled_builds"},
        "optimizer": {"class": "CarefulSGD", "module": "compiled_builds"},
        "metrics": [{"class": "MeanAbsoluteErrorSum", "module": "compiled_builds"}],
    }


def test_the_build_wins_over_the_spec_and_the_difference_is_named() -> None:
    made = recipe(SGD_MAE, loss="mse", optimizer="adam")
    model = made.build()
    args = made.compile_args()
    assert type(args["optimizer"]) is keras.optimizers.SGD and args["loss"] == "mae"
    build = compiled.of_build(model)
    assert build is not None
    differ = compiled.spec_differences(build, workload(loss="mse", optimizer="adam"))
    assert differ == {"loss": "mse", "optimizer": "adam"}
    same = compiled.spec_differences(build, workload(loss="mean_absolute_error", optimizer="SGD"))
    assert same == {}


def test_names_keras_resolves_to_the_builds_objects_are_no_difference() -> None:
    build = {"loss": keras.losses.MeanSquaredError(), "optimizer": keras.optimizers.Adam(1e-4)}
    assert compiled.spec_differences(build, workload(loss="mse", optimizer="adam")) == {}


def test_the_spec_fills_what_the_build_leaves_out() -> None:
    build = {"optimizer": keras.optimizers.SGD(0.1)}  # compiled without a loss
    args = compiled.compile_args(build, workload(loss="mse", optimizer=None), 0.01, "m:f")
    assert args["loss"] == "mse" and float(args["optimizer"].learning_rate) == pytest.approx(0.01)
    alone = compiled.compile_args(build, workload(loss=None, optimizer=None), 0.01, "m:f")
    assert "loss" not in alone  # its own train_step computes the loss


def test_an_uncompiled_build_without_spec_names_trains_with_the_documented_defaults() -> None:
    args = compiled.compile_args(None, workload(loss=None, optimizer=None), 0.01, "m:f")
    assert args["loss"] == "mse"
    assert isinstance(args["optimizer"], keras.optimizers.Adam)
    assert float(args["optimizer"].learning_rate) == pytest.approx(0.01)
    named = compiled.compile_args(None, workload(loss="mae", optimizer="sgd"), 0.01, "m:f")
    assert named["loss"] == "mae" and isinstance(named["optimizer"], keras.optimizers.SGD)


def test_a_schedule_with_an_initial_rate_keeps_its_shape_at_the_rules_rate() -> None:
    schedule = keras.optimizers.schedules.ExponentialDecay(0.5, decay_steps=10, decay_rate=0.5)
    rebuilt = optim.at_learning_rate(keras.optimizers.SGD(schedule), 0.01)
    kept = rebuilt._learning_rate
    assert isinstance(kept, keras.optimizers.schedules.ExponentialDecay)
    assert kept.get_config()["initial_learning_rate"] == pytest.approx(0.01)
    assert kept.get_config()["decay_steps"] == 10
    assert optim.schedule_kept(rebuilt) is True
    assert optim.schedule_kept(keras.optimizers.SGD(0.1)) is None


def test_the_workload_check_reports_what_is_used_and_what_it_overrides() -> None:
    result = check_workload(inspect_request(model=SGD_MAE, data=DATA, loss="mse", optimizer="adam"))
    assert result["compiled_by_build"] is True
    compile_info = result["compile"]
    assert (compile_info["loss"], compile_info["optimizer"]) == ("mae", "SGD")
    assert compile_info["overrides"] == {"loss": "mse", "optimizer": "adam"}


def test_the_workload_check_takes_custom_objects_and_needs_no_spec_names() -> None:
    result = check_workload(inspect_request(model=CUSTOM, data=DATA, loss=None, optimizer=None))
    assert result["compile"]["loss"] == {"class": "CustomMSE", "module": "compiled_builds"}
    assert result["compile"]["overrides"] == {}


def test_the_workload_check_takes_an_uncompiled_build_without_spec_names() -> None:
    result = check_workload(inspect_request(model=UNCOMPILED, data=DATA, loss=None, optimizer=None))
    assert result["compiled_by_build"] is False


def test_a_models_own_compile_is_not_called_again_and_what_it_kept_stays() -> None:
    # keras-io's Distiller: compile(optimizer, metrics, student_loss_fn, distillation_loss_fn,
    # alpha, temperature) gives Keras only the first two and keeps the rest as attributes.
    from workloads import distiller

    model = distiller.build_model()
    kept = (model.student_loss_fn, model.distillation_loss_fn, model.alpha, model.temperature)
    build = compiled.of_build(model)
    assert build is not None and set(build) == {"optimizer", "metrics"}
    args = compiled.compile_args(build, workload(loss=None, optimizer=None), 2e-3, "m:f")
    compiled.compile_model(model, args)  # the class's compile would miss two arguments
    assert model.optimizer is args["optimizer"]
    assert float(model.optimizer.learning_rate) == pytest.approx(2e-3)
    assert (model.student_loss_fn, model.distillation_loss_fn, model.alpha, model.temperature) == (
        kept
    )
    x, y, _, _ = distiller.load_data()
    history = model.fit(x[:64], y[:64], batch_size=32, epochs=1, verbose=0)
    assert history.history["loss"][0] > 0


def test_a_model_no_build_compiled_is_compiled_by_its_own_compile() -> None:
    calls = []

    class Logged(keras.Sequential):
        def compile(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(kwargs)
            super().compile(*args, **kwargs)

    model = Logged([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    compiled.compile_model(model, {"optimizer": "sgd", "loss": "mse"})
    assert calls == [{"optimizer": "sgd", "loss": "mse"}] and model.compiled
    compiled.compile_model(model, {"optimizer": "adam", "loss": "mae"})  # compiled: Keras's own
    assert len(calls) == 1 and model.loss == "mae"


def test_optimizers_a_model_keeps_besides_its_compiled_one_are_named() -> None:
    # keras-io's GAN: compile(d_optimizer, g_optimizer, loss_fn) calls super().compile() bare.
    class GAN(keras.Model):
        def compile(self, d_optimizer, g_optimizer, loss_fn):  # type: ignore[no-untyped-def]
            super().compile()
            self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn

    model = GAN()
    model.compile(keras.optimizers.Adam(1e-4), keras.optimizers.Adam(1e-4), "binary_crossentropy")
    build = compiled.of_build(model)
    args = compiled.compile_args(build, workload(loss=None, optimizer=None), 2e-3, "m:GAN")
    compiled.compile_model(model, args)  # no TypeError
    assert compiled.own_optimizers(model) == ["d_optimizer", "g_optimizer"]
    assert compiled.own_optimizers(compiled_builds_model()) == []


def compiled_builds_model() -> keras.Model:
    import compiled_builds

    return compiled_builds.sgd_mae()
