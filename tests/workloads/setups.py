"""The zoo's table: each setup's ``model`` and ``data`` references and the spec it is searched
with (a tiny budget: one grid point, two CPU replicas). Pure Python: importing it imports no
framework, so the test collects and ``benchmarks/zoo_table.py`` starts fast."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Setup:
    """One zoo setup.

    ``loss``/``optimizer`` are the spec's (``None``: the build compiles, the spec names none): a
    Keras name, or an inline TOML table (``{class_name = ..., config = {...}}``, Keras's
    serialized form: the fresh script then compiles the loss the export names); ``objective``
    the spec's ``[workload] objective`` (``None``: the validation loss);
    ``search`` holds extra ``[search]`` lines; ``xfail`` the one-line failure it has today
    (``None``: it passes), for ``pytest.mark.xfail(strict=True)``; ``validate`` whether
    ``tuner validate`` applies to it (a plain model on ``fit``, not a hypermodel); ``expect``
    trial attributes every trial must store with these values, and ``noise_measured`` that the
    noise scale must be measured, not skipped (cases the zoo took over from e2e tests, which
    searched the same setups a second time to assert them), ``within`` trial attributes every
    trial must store within these bounds (``(key, low, high)``), and ``quiet`` warnings the
    search must not say; ``fresh_in_test`` whether the test also trains the export by the fresh
    script (``benchmarks/zoo_table.py`` always does);
    ``in_suite`` whether the test suite searches it (``TUNER_ZOO_HEAVY=1``: every setup);
    ``says`` lines the search must print on its stderr (a warning before any trial);
    ``metrics`` compiled metrics every trial must store in ``val_metrics`` (and ``tuner show``
    then shows).
    """

    id: str
    model: str
    data: str
    what: str
    loss: str | None = None
    optimizer: str | None = None
    backend: str = "tensorflow"
    objective: str | None = None
    base_batch_size: int = 64
    search: tuple[str, ...] = ("epochs = 2",)
    hypermodel: bool = False
    validate: bool = True
    xfail: str | None = None
    expect: tuple[tuple[str, object], ...] = ()
    within: tuple[tuple[str, float, float], ...] = ()
    quiet: tuple[str, ...] = ()
    noise_measured: bool = False
    fresh_in_test: bool = True
    in_suite: bool = True
    says: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()

    @property
    def compiled(self) -> bool:
        """Whether the build compiles (the spec then names no loss or optimizer)."""
        return self.loss is None

    @property
    def serialized_loss(self) -> bool:
        """Whether the spec gives its loss in Keras's serialized form (a TOML table)."""
        return self.loss is not None and self.loss.startswith("{")

    def spec(self, name: str) -> str:
        """The study spec of this setup (TOML)."""
        workload = [f'model = "workloads.{self.model}"', f'data = "workloads.{self.data}"']
        if self.loss is not None:
            workload.append(
                f"loss = {self.loss}" if self.serialized_loss else f'loss = "{self.loss}"'
            )
        if self.optimizer is not None:
            workload.append(f'optimizer = "{self.optimizer}"')
        if self.backend != "tensorflow":
            workload.append(f'backend = "{self.backend}"')
        if self.objective is not None:
            workload.append(f'objective = "{self.objective}"')
        search = [
            f"base_batch_size = {self.base_batch_size}",
            "batch_multipliers = [1]",
            'lr_rules = ["none"]',
            "base_lr = 1e-3",
            "noise_scale_steps = 2",
            *self.search,
        ]
        if self.hypermodel:
            search.append('model_hyperparameters = "defaults"')
        return "\n".join(
            ["[study]", f'name = "{name}"', "", "[workload]", *workload, "", "[search]", *search]
        )


ADD_LOSS_NOTE = (
    "add_loss() from a Keras loss object: Keras scales it by 1/2 twice on 2 replicas; "
    "multiplied by 2, so loss and gradients are one device's"
)
"""What a trial on two replicas stores of the endpoint layer's loss (issue 45)."""

# The keras.applications models are searched and exported in the test but not trained by the
# fresh script (fresh_in_test=False): an uncompiled build given the spec's loss and Adam on arrays
# is the path the light setups (subclassed, mnist_convnet_uncompiled) take through it, and for
# these models the fresh run is a second build and trace under MirroredStrategy (ResNet50: 107 s
# of 391 s, measured on two shared CPU cores). benchmarks/zoo_table.py trains them fresh.
SETUPS: tuple[Setup, ...] = (
    Setup(
        "mnist_convnet",
        "mnist_convnet:build_model",
        "mnist_convnet:load_data",
        "MNIST convnet (examples/vision/mnist_convnet), compiled in the build",
        metrics=("accuracy",),
    ),
    Setup(
        "mnist_convnet_uncompiled",
        "mnist_convnet:build_uncompiled",
        "mnist_convnet:load_data",
        "MNIST convnet, uncompiled, spec loss categorical_crossentropy + adam",
        loss="categorical_crossentropy",
        optimizer="adam",
    ),
    Setup(
        "mnist_convnet_jax",
        "mnist_convnet:build_uncompiled",
        "mnist_convnet:load_data",
        "MNIST convnet, uncompiled, Keras 3 on JAX",
        loss="categorical_crossentropy",
        optimizer="adam",
        backend="jax",
    ),
    Setup(
        "multi_io",
        "multi_io:build_model",
        "multi_io:load_data",
        "functional-API guide's title/body/tags -> priority/department, loss dict + "
        "loss_weights, tf.data of dicts, compiled in the build",
        noise_measured=True,
    ),
    Setup(
        "dict_arrays",
        "dict_arrays:build_model",
        "dict_arrays:load_data",
        "the same model fed dicts of arrays (x_train, y_train, x_val, y_val all dicts)",
        expect=(("input_form", "arrays"),),
    ),
    Setup(
        "sample_weights",
        "sample_weights:build_model",
        "sample_weights:load_data",
        "built-in-methods guide: (x, y, sample_weight) tf.data batched by 64, labels (N,), "
        "RMSprop + sparse CE compiled in the build",
        # the meter measures sample-weighted batches (no value at 2 steps: |G|² estimate <= 0)
        expect=(("noise_scale_steps", 4),),
    ),
    Setup(
        "sequential_no_input",
        "keras_tuner_guide:build_plain",
        "keras_tuner_guide:load_data",
        "KerasTuner guide's Sequential without keras.Input, uncompiled",
        loss="categorical_crossentropy",
        optimizer="adam",
        # no keras.Input: the noise meter measures it once training has built it
        expect=(("noise_scale_steps", 4),),
        noise_measured=True,
    ),
    Setup(
        "keras_tuner_hypermodel",
        "keras_tuner_guide:build_model",
        "keras_tuner_guide:load_data",
        "KerasTuner getting-started build_model(hp) (hp.Int/Choice/Boolean/Float), compiled",
        hypermodel=True,
        validate=False,
    ),
    Setup(
        "logits_from_toml",
        "custom_training_logits:build_model",
        "custom_training_logits:load_data",
        "KerasTuner custom-training guide's build_model(hp): a last Dense(10) without softmax "
        "(logits), uncompiled; the spec's loss in Keras's serialized form with from_logits",
        loss='{class_name = "SparseCategoricalCrossentropy", config = {from_logits = true}}',
        optimizer="adam",
        hypermodel=True,
        validate=False,
        # Trained on logits as logits: below chance (ln 10); as probabilities it was 3.6 here.
        within=(("final_loss", 0.0, 2.302585),),
        quiet=("expects probabilities",),
    ),
    Setup(
        "keras_tuner_fit_override",
        "keras_tuner_guide:MyHyperModel",
        "keras_tuner_guide:load_data",
        "KerasTuner getting-started HyperModel whose fit tunes normalize and shuffle (not called)",
        hypermodel=True,
        validate=False,
        says=(
            "keras_tuner_guide:MyHyperModel overrides HyperModel.fit, which tuner does not call: "
            "trials train with tuner's own batch size and learning rate, so the hyperparameters "
            "it declares (normalize, shuffle) are not used",
        ),
    ),
    Setup(
        "text_classification",
        "text_classification:build_model",
        "text_classification:load_data",
        "text classification from scratch as the example trains: TextVectorization in the "
        "tf.data pipeline (batched by 32), the model on word indices, compiled in the build",
    ),
    Setup(
        "text_end_to_end",
        "text_classification:build_end_to_end",
        "text_classification:raw_datasets",
        "the example's end-to-end model trained on raw strings: Input(dtype='string') + "
        "TextVectorization adapted in the build",
    ),
    Setup(
        "custom_train_step",
        "custom_train_step:build_model",
        "custom_train_step:load_data",
        "customizing fit(): train_step with compute_loss and metrics, compiled in the build",
    ),
    Setup(
        "jax_custom_train_step_mae",
        "jax_custom_train_step:build_model",
        "jax_custom_train_step:load_data",
        "customizing fit() with JAX: compute_loss_and_updates, a stateless train_step, a "
        "test_step reporting mae only; objective val_mae, compiled (optimizer only) in the build",
        backend="jax",
        objective="val_mae",
    ),
    Setup(
        "distiller",
        "distiller:build_model",
        "distiller:load_data",
        "knowledge distillation: a Distiller whose own compile(optimizer, metrics, "
        "student_loss_fn, distillation_loss_fn, alpha, temperature) keeps attributes its "
        "compute_loss reads, compiled in the build",
    ),
    Setup(
        "distiller_jax",
        "distiller:build_model",
        "distiller:load_data",
        "the same Distiller, Keras 3 on JAX",
        backend="jax",
        metrics=("sparse_categorical_accuracy",),
    ),
    Setup(
        "custom_loss",
        "custom_loss:build_model",
        "custom_loss:load_data",
        "training guide's CustomMSE (keras.losses.Loss subclass, unregistered) compiled in the "
        "build",
    ),
    Setup(
        "mobilenet_v2",
        "applications:mobilenet_v2",
        "applications:load_data",
        "keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)",
        loss="sparse_categorical_crossentropy",
        optimizer="adam",
        base_batch_size=32,
        fresh_in_test=False,
    ),
    Setup(
        "resnet50",
        "applications:resnet50",
        "applications:load_data",
        "keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)",
        loss="sparse_categorical_crossentropy",
        optimizer="adam",
        base_batch_size=32,
        fresh_in_test=False,
        # The suite's costliest test (112 s of a 40-minute run: its build and tracing), on the
        # path MobileNetV2 takes (keras.applications, BatchNormalization, the spec's loss):
        # benchmarks/zoo_table.py and TUNER_ZOO_HEAVY=1 search it.
        in_suite=False,
    ),
    Setup(
        "subclassed",
        "subclassed:build_model",
        "subclassed:load_data",
        "keras.Model subclass with call() and Dropout in training",
        loss="sparse_categorical_crossentropy",
        optimizer="adam",
    ),
    Setup(
        "structured_data",
        "structured_data:build_model",
        "structured_data:load_data",
        "structured data from scratch: Normalization/StringLookup/IntegerLookup adapted in the "
        "build, BatchNorm, labels (N,) vs a (N, 1) sigmoid, compiled in the build",
    ),
    Setup(
        "tfrecord",
        "tfrecord:build_model",
        "tfrecord:load_data",
        "TFRecord file written once, read with TFRecordDataset + parse_single_example",
        loss="sparse_categorical_crossentropy",
        optimizer="adam",
        search=("train_samples = 1024", "val_samples = 192"),
        # the sample budget read from an unbatched stream, not rebatched
        expect=(("train_samples_used", 1024), ("input_rebatched", False)),
    ),
    Setup(
        "pydataset",
        "pydataset:build_model",
        "pydataset:load_data",
        "a keras.utils.PyDataset subclass as (train, val)",
        loss="sparse_categorical_crossentropy",
        optimizer="adam",
    ),
    Setup(
        "pydataset_jax",
        "pydataset:build_model",
        "pydataset:load_data",
        "a keras.utils.PyDataset subclass as (train, val), Keras 3 on JAX",
        loss="sparse_categorical_crossentropy",
        optimizer="adam",
        backend="jax",
    ),
    Setup(
        "uneven_validation",
        "uneven_validation:build_model",
        "uneven_validation:load_data",
        "a tiny MLP on arrays, 256 training rows and 61 validation rows: at a global batch of "
        "64 on two replicas the validation batch splits 31/30, compiled in the build",
        # every row evaluated: none dropped, none padded (issue 45)
        expect=(("val_samples_used", 61),),
    ),
    Setup(
        "add_loss_endpoint",
        "add_loss_endpoint:build_model",
        "add_loss_endpoint:load_data",
        "the guides' LogisticEndpoint: the loss from add_loss() in call(), inputs and targets "
        "as a dict, compiled with an optimizer and no loss",
        expect=(("add_loss_note", ADD_LOSS_NOTE),),
        # binary cross-entropy on random targets, as on one device (~0.71), not half of it
        within=(("final_loss", 0.6, 0.8),),
    ),
)

BY_ID = {setup.id: setup for setup in SETUPS}
