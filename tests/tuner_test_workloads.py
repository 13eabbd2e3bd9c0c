"""Small workloads for the tests (importable as ``tuner_test_workloads:...`` from tests/)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tuner.workloads import regression


def small_regression_data() -> tuple[np.ndarray, ...]:
    """The built-in regression data, smaller: 4,096 training and 1,024 validation samples."""
    return regression.make_data(n_train=4096, n_val=1024)


MARKER_ENV = "TUNER_TEST_MARKER"
MARKER_LOG_ENV = "TUNER_TEST_MARKER_LOG"
HOLD_ENV = "TUNER_TEST_HOLD_S"


def orphaning_data() -> tuple[np.ndarray, ...]:
    """The small regression data, after starting three ``sleep 3001`` processes that would outlive
    their trial: a helper in the trial's session (as a data loader starts one), one in a session of
    its own (``start_new_session``) and one daemonized into its own session (its parent exits, so
    it is an orphan while the trial runs). Each is named ``$TUNER_TEST_MARKER-MODE-KIND`` (MODE:
    the request's mode; argv[0] by ``exec -a``), and their pids are appended to
    ``$TUNER_TEST_MARKER_LOG`` when set. In a ``trial`` it then sleeps ``$TUNER_TEST_HOLD_S`` s."""
    import json
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    mode = json.loads(Path(sys.argv[1]).read_text())["mode"]  # the worker's request
    marker = f"{os.environ[MARKER_ENV]}-{mode}"

    def sleeper(kind: str) -> str:
        return f"exec -a {marker}-{kind} sleep 3001"

    helper = subprocess.Popen(["bash", "-c", sleeper("helper")])
    session = subprocess.Popen(["bash", "-c", sleeper("session")], start_new_session=True)
    # A background subshell whose shell exits at once: an orphan in a session of its own.
    daemon = subprocess.run(
        ["bash", "-c", f"({sleeper('daemon')}) >/dev/null 2>&1 </dev/null & echo $!"],
        start_new_session=True,
        capture_output=True,
        text=True,
        check=True,
    )
    if os.environ.get(MARKER_LOG_ENV):
        pids = [helper.pid, session.pid, int(daemon.stdout)]
        with open(os.environ[MARKER_LOG_ENV], "a", encoding="utf-8") as log:
            log.write(json.dumps({"mode": mode, "pids": pids}) + "\n")
    if mode == "trial":
        time.sleep(float(os.environ.get(HOLD_ENV, "0")))
    return small_regression_data()


def wide_model() -> Any:
    """64 -> Dense(8192) -> 1: its activations grow fast with the batch (out-of-memory tests)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(8192, activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def wide_data() -> tuple[np.ndarray, ...]:
    """16,384 + 1,024 samples of 64 features for :func:`wide_model`."""
    rng = np.random.default_rng(0)
    x = rng.random((17_408, 64), dtype=np.float32)
    y = x[:, :1] * 2.0 - x[:, 1:2]
    return x[:16_384], y[:16_384], x[16_384:], y[16_384:]


def raising_data() -> tuple[np.ndarray, ...]:
    """A data function that fails, as a user's loader might."""
    raise FileNotFoundError("no such file: /data/train.npz")


def mismatched_data() -> tuple[np.ndarray, ...]:
    """Data with 7 features for a model that expects 10."""
    rng = np.random.default_rng(0)
    return (
        rng.random((512, 7), dtype=np.float32),
        rng.random((512, 1), dtype=np.float32),
        rng.random((64, 7), dtype=np.float32),
        rng.random((64, 1), dtype=np.float32),
    )


def tuned_mlp(hp: Any) -> Any:
    """A ``build(hp)`` as in KerasTuner's documentation: Int, Choice, Float with log sampling,
    a conditional scope; uncompiled."""
    import keras

    model = keras.Sequential([keras.Input(shape=(10,))])
    model.add(
        keras.layers.Dense(
            hp.Int("units", min_value=16, max_value=48, step=16),
            activation=hp.Choice("activation", ["relu", "tanh"]),
            kernel_regularizer=keras.regularizers.L2(
                hp.Float("l2", min_value=1e-6, max_value=1e-3, sampling="log")
            ),
        )
    )
    if hp.Boolean("dropout"):
        with hp.conditional_scope("dropout", [True]):
            model.add(keras.layers.Dropout(hp.Float("rate", 0.1, 0.3, step=0.1)))
    model.add(keras.layers.Dense(1))
    return model


def _compiled(hp: Any) -> Any:
    import keras

    model = tuned_mlp(hp)
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.5, momentum=0.7), loss="mae", metrics=["mse"]
    )
    return model


def compiled_mlp(hp: Any) -> Any:
    """:func:`tuned_mlp` compiled by the user: SGD with momentum 0.7 at a learning rate of 0.5
    (tuner must replace the rate and keep the momentum), MAE loss, an MSE metric."""
    return _compiled(hp)


def _hypermodel_classes() -> tuple[Any, Any]:
    import keras_tuner

    class TunedMLP(keras_tuner.HyperModel):
        def build(self, hp: Any) -> Any:
            return tuned_mlp(hp)

    class BatchSettingMLP(TunedMLP):
        def fit(self, hp: Any, model: Any, *args: Any, **kwargs: Any) -> Any:
            return model.fit(*args, batch_size=hp.Choice("batch_size", [32, 64]), **kwargs)

    return TunedMLP, BatchSettingMLP


TunedMLP, BatchSettingMLP = _hypermodel_classes()
tuned_instance = TunedMLP()


def wide_hypermodel(hp: Any) -> Any:
    """:func:`wide_model` with its width as a hyperparameter: 8192 runs out of memory at global
    batch 4096 under a 128 MiB cap per device, 256 does not."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(hp.Choice("width", [8192, 256]), activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def plain_model() -> Any:
    """The built-in regression model: a plain builder, no hyperparameters."""
    return regression.build_model()


# The analytic noise-scale problem: y = x·w* + ε, x ~ N(0, I_p), ε ~ N(0, σ²), a linear model
# without bias held at w = w* + d. Its true B_simple is ((p + 1)‖d‖² + pσ²) / ‖d‖².
ANALYTIC_P = 64
ANALYTIC = {"a": (1.0, 1.0), "b": (0.25, 1.0), "c": (1.0, 0.25)}  # name -> (‖d‖², σ²)


def _w_star() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(ANALYTIC_P, 1)).astype(np.float32)


def _linear(d_squared: float) -> Any:
    import keras

    direction = np.random.default_rng(11).normal(size=(ANALYTIC_P, 1))
    d = direction / np.linalg.norm(direction) * np.sqrt(d_squared)
    w = (_w_star() + d).astype(np.float32)
    return keras.Sequential(
        [
            keras.Input(shape=(ANALYTIC_P,)),
            keras.layers.Dense(
                1, use_bias=False, kernel_initializer=keras.initializers.Constant(w)
            ),
        ]
    )


def _linear_data(sigma_squared: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20_480, ANALYTIC_P)).astype(np.float32)
    y = x @ _w_star() + rng.normal(scale=np.sqrt(sigma_squared), size=(20_480, 1))
    y = y.astype(np.float32)
    return x[:16_384], y[:16_384], x[16_384:], y[16_384:]


def analytic_model_a() -> Any:
    return _linear(ANALYTIC["a"][0])


def analytic_data_a() -> tuple[np.ndarray, ...]:
    return _linear_data(ANALYTIC["a"][1])


def analytic_model_b() -> Any:
    return _linear(ANALYTIC["b"][0])


def analytic_data_b() -> tuple[np.ndarray, ...]:
    return _linear_data(ANALYTIC["b"][1])


def analytic_model_c() -> Any:
    return _linear(ANALYTIC["c"][0])


def analytic_data_c() -> tuple[np.ndarray, ...]:
    return _linear_data(ANALYTIC["c"][1])


# --- input forms (tf.data) ------------------------------------------------------------------------


def image_folder_data() -> tuple[Any, Any]:
    """A PNG folder per split (4 classes, 16x16), written once under $TUNER_CACHE and read with
    ``image_dataset_from_directory`` at its default batch of 32, with an augmentation map."""
    import keras
    import tensorflow as tf

    from tuner.workloads import generated

    def write(folder: Any) -> None:
        rng = np.random.default_rng(0)
        for split, count in (("train", 48), ("val", 16)):
            for label in range(4):
                (folder / split / f"c{label}").mkdir(parents=True)
                for i in range(count):
                    pixels = np.full((16, 16, 3), 60 * label, dtype=np.uint8)
                    pixels = np.clip(pixels + rng.integers(0, 40, pixels.shape), 0, 255)
                    png = tf.io.encode_png(pixels.astype(np.uint8)).numpy()
                    (folder / split / f"c{label}" / f"{i}.png").write_bytes(png)

    root = generated("test-images-v1", write)

    def read(split: str) -> Any:
        return keras.utils.image_dataset_from_directory(
            root / split, image_size=(16, 16), seed=0, verbose=False
        )

    def augment(images: Any, labels: Any) -> Any:
        return tf.image.random_flip_left_right(images) / 255.0, labels

    return read("train").map(augment).prefetch(2), read("val").map(lambda x, y: (x / 255.0, y))


def image_model() -> Any:
    """A tiny convnet for :func:`image_folder_data`."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(16, 16, 3)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(4, activation="softmax"),
        ]
    )


def _regression_dataset(x: np.ndarray, y: np.ndarray) -> Any:
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices((x, y))


def regression_datasets() -> tuple[Any, Any]:
    """The small regression data as unbatched ``(train, val)`` datasets."""
    x, y, xv, yv = small_regression_data()
    return _regression_dataset(x, y), _regression_dataset(xv, yv)


def virtual_datasets() -> tuple[Any, Any]:
    """10⁹ virtual training samples (``range(10**9).map(make_example)``) and 512 validation ones:
    nothing may read the whole training set."""
    import tensorflow as tf

    def make_example(i: Any) -> Any:
        seed = tf.stack([i, i + 1])
        x = tf.random.stateless_uniform([10], seed=seed)
        return x, tf.reduce_sum(x, keepdims=True) / 5.0

    return tf.data.Dataset.range(10**9).map(make_example), tf.data.Dataset.range(512).map(
        make_example
    )


DATASET_CALLS_ENV = "TUNER_TEST_DATASET_CALLS"


def slow_virtual_datasets() -> tuple[Any, Any]:
    """:func:`virtual_datasets` with a ``py_function`` in the training map that sleeps 0.5 ms a
    sample: the input pipeline, at about 2,000 samples a second, not the model (about 20,000),
    sets the pace."""
    import time

    import tensorflow as tf

    def slow(x: Any, y: Any) -> Any:
        def wait(value: Any) -> Any:
            time.sleep(0.0005)
            return value

        x = tf.py_function(wait, [x], tf.float32)
        x.set_shape([10])
        return x, y

    train, val = virtual_datasets()
    return train.map(slow), val


def dataset_function(split: str, batch_size: int, input_context: Any) -> Any:
    """A dataset function as TensorFlow's guide writes one: shard by ``input_context``, batch at the
    per-replica size. Each call is appended to the file ``$TUNER_TEST_DATASET_CALLS`` (JSON)."""
    import json
    import os

    x, y, xv, yv = small_regression_data()
    data = _regression_dataset(x, y) if split == "train" else _regression_dataset(xv, yv)
    if input_context is not None:
        data = data.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if os.environ.get(DATASET_CALLS_ENV):
        call = {
            "split": split,
            "batch_size": batch_size,
            "context": None
            if input_context is None
            else {
                "replicas": input_context.num_replicas_in_sync,
                "pipelines": input_context.num_input_pipelines,
            },
        }
        with open(os.environ[DATASET_CALLS_ENV], "a", encoding="utf-8") as log:
            log.write(json.dumps(call) + "\n")
    return data.batch(batch_size)


def bad_element_datasets() -> tuple[Any, Any]:
    """Datasets whose elements are bare tensors, not ``(x, y)``."""
    import tensorflow as tf

    x = small_regression_data()[0]
    return tf.data.Dataset.from_tensor_slices(x), tf.data.Dataset.from_tensor_slices(x)


def empty_datasets() -> tuple[Any, Any]:
    """An empty training dataset."""
    x, y, xv, yv = small_regression_data()
    return _regression_dataset(x[:0], y[:0]), _regression_dataset(xv, yv)


def nan_datasets() -> tuple[Any, Any]:
    """NaN in the first training batch."""
    x, y, xv, yv = small_regression_data()
    x = x.copy()
    x[3, 2] = np.nan
    return _regression_dataset(x, y), _regression_dataset(xv, yv)


def infinite_datasets() -> tuple[Any, Any]:
    """An infinite training stream (``repeat()``), which needs a sample budget."""
    train, val = regression_datasets()
    return train.repeat(), val


def out_of_range_label_datasets() -> tuple[Any, Any]:
    """Class labels 0-9 for :func:`image_model`'s 4 classes: they do not fit the loss."""
    data, val = image_folder_data()
    return data.map(lambda x, y: (x, y + 6)), val


def nan_label_data() -> tuple[np.ndarray, ...]:
    """The small regression data with every label NaN: each trial would diverge."""
    x, y, xv, yv = small_regression_data()
    return x, np.full_like(y, np.nan), xv, yv


def dict_feature_datasets() -> tuple[Any, Any]:
    """``({"a": (10,), "b": (3,)}, y)`` datasets, with inf in feature ``b`` of 8 training rows."""
    import tensorflow as tf

    rng = np.random.default_rng(0)

    def make(n: int, bad_rows: int) -> Any:
        a = rng.random((n, 10), dtype=np.float32)
        b = rng.random((n, 3), dtype=np.float32)
        b[:bad_rows, 1] = np.inf
        features = {"a": a, "b": b}
        return tf.data.Dataset.from_tensor_slices((features, a[:, :1] - b[:, :1]))

    return make(512, 8), make(128, 0)


def dict_feature_model() -> Any:
    """Two named inputs, ``a`` (10) and ``b`` (3), for :func:`dict_feature_datasets`."""
    import keras

    a, b = keras.Input(shape=(10,), name="a"), keras.Input(shape=(3,), name="b")
    joined = keras.layers.Concatenate()([a, b])
    return keras.Model({"a": a, "b": b}, keras.layers.Dense(1)(joined))


def class_label_data() -> tuple[np.ndarray, ...]:
    """10 features and integer class labels 0-9 (512 training, 128 validation samples)."""
    rng = np.random.default_rng(0)
    x = rng.random((640, 10), dtype=np.float32)
    y = rng.integers(0, 10, 640)
    return x[:512], y[:512], x[512:], y[512:]


def folding_in_training_model() -> Any:
    """A classifier with a bug only in training: there it folds its 20 outputs into rows of 10
    (twice the rows of the labels), with a width TensorFlow cannot know before running, so the
    workload check (which evaluates) passes and every trial fails inside the graph."""
    import keras
    import tensorflow as tf

    class Folding(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(20)

        def call(self, x: Any, training: bool = False) -> Any:
            h = self.dense(x)
            if not training:
                return h[:, :10]
            width = 10 + tf.cast(tf.reduce_min(tf.abs(h)) * 0.0, tf.int32)  # data-dependent
            return tf.reshape(h, [-1, width])

    model = Folding()
    model.build((None, 10))
    return model


# Models written the way Keras's guides write them, which the noise meter does not measure (or
# must wait for training to build): the trial trains, and the measurement is skipped or deferred.


def guide_multi_io_model() -> Any:
    """The functional-API guide's model with multiple inputs and outputs, small: a title and a
    body in, a priority (regression) and a department (classification) out, named outputs,
    a loss and a loss weight per output, compiled by the build."""
    import keras

    title = keras.Input(shape=(8,), name="title")
    body = keras.Input(shape=(16,), name="body")
    features = keras.layers.concatenate(
        [keras.layers.Dense(16, activation="relu")(title), keras.layers.Dense(16)(body)]
    )
    priority = keras.layers.Dense(1, name="priority")(features)
    department = keras.layers.Dense(4, name="department")(features)
    model = keras.Model(
        inputs=[title, body], outputs={"priority": priority, "department": department}
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss={
            "priority": keras.losses.MeanSquaredError(),
            "department": keras.losses.CategoricalCrossentropy(from_logits=True),
        },
        loss_weights={"priority": 1.0, "department": 0.2},
    )
    return model


def _guide_multi_io_dataset(n: int, seed: int) -> Any:
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    title = rng.normal(size=(n, 8)).astype(np.float32)
    body = rng.normal(size=(n, 16)).astype(np.float32)
    priority = (title[:, :1] + 0.1 * rng.normal(size=(n, 1))).astype(np.float32)
    department = np.eye(4, dtype=np.float32)[np.argmax(body[:, :4], axis=1)]
    weight = rng.uniform(0.5, 1.5, size=(n,)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(
        (
            {"title": title, "body": body},
            {"priority": priority, "department": department},
            {"priority": weight, "department": weight},
        )
    )


def guide_multi_io_datasets() -> tuple[Any, Any]:
    """``(x, y, sample_weight)`` elements of dicts keyed by input and output name, unbatched
    ``(train, val)`` datasets (2,048 and 512 examples)."""
    return _guide_multi_io_dataset(2048, 0), _guide_multi_io_dataset(512, 1)


def sequential_without_input() -> Any:
    """A ``Sequential`` as the guides often write it: no ``keras.Input``, so not built (it has no
    weights) until it first sees data."""
    import keras

    return keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])


# keras-io's variational autoencoder, small: its loss lives in train_step (compile names only an
# optimizer), so training reports a loss and evaluate has none to compute.


def vae_model() -> Any:
    """keras-io's VAE (generative/vae) on 8x8 images, a 2-d latent space: a ``Sampling`` layer,
    an encoder and a decoder, a ``keras.Model`` subclass whose ``train_step`` computes the
    reconstruction and KL losses and reports them with their total as ``loss``."""
    import keras
    import tensorflow as tf
    from keras import layers, ops

    class Sampling(layers.Layer):
        """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.seed_generator = keras.random.SeedGenerator(1337)

        def call(self, inputs: Any) -> Any:
            z_mean, z_log_var = inputs
            batch, dim = ops.shape(z_mean)[0], ops.shape(z_mean)[1]
            epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
            return z_mean + ops.exp(0.5 * z_log_var) * epsilon

    latent_dim = 2
    encoder_inputs = keras.Input(shape=(8, 8, 1))
    x = layers.Flatten()(encoder_inputs)
    x = layers.Dense(16, activation="relu")(x)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = Sampling()([z_mean, z_log_var])
    encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")
    latent_inputs = keras.Input(shape=(latent_dim,))
    x = layers.Dense(64, activation="sigmoid")(latent_inputs)
    decoder_outputs = layers.Reshape((8, 8, 1))(x)
    decoder = keras.Model(latent_inputs, decoder_outputs, name="decoder")

    class VAE(keras.Model):
        def __init__(self, encoder: Any, decoder: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.encoder = encoder
            self.decoder = decoder
            self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
            self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
            self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

        @property
        def metrics(self) -> list[Any]:
            return [self.total_loss_tracker, self.reconstruction_loss_tracker, self.kl_loss_tracker]

        def train_step(self, data: Any) -> Any:
            with tf.GradientTape() as tape:
                z_mean, z_log_var, z = self.encoder(data)
                reconstruction = self.decoder(z)
                reconstruction_loss = ops.mean(
                    ops.sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2))
                )
                kl_loss = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
                kl_loss = ops.mean(ops.sum(kl_loss, axis=1))
                total_loss = reconstruction_loss + kl_loss
            grads = tape.gradient(total_loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights, strict=True))
            self.total_loss_tracker.update_state(total_loss)
            self.reconstruction_loss_tracker.update_state(reconstruction_loss)
            self.kl_loss_tracker.update_state(kl_loss)
            return {
                "loss": self.total_loss_tracker.result(),
                "reconstruction_loss": self.reconstruction_loss_tracker.result(),
                "kl_loss": self.kl_loss_tracker.result(),
            }

    vae = VAE(encoder, decoder)
    vae.compile(optimizer=keras.optimizers.Adam())
    return vae


def vae_digits() -> tuple[Any, Any]:
    """8x8 "digits" in [0, 1], the images alone (no targets): ``(train, val)`` datasets."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    images = rng.random((320, 8, 8, 1), dtype=np.float32)
    split = tf.data.Dataset.from_tensor_slices
    return split(images[:256]), split(images[256:])


def mae_only_evaluation_model() -> Any:
    """The customizing-fit guide's model with its own ``test_step`` that reports metrics but no
    loss (``mae`` only), compiled in the build with ``mse``."""
    import keras

    class CustomModel(keras.Model):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")

        def test_step(self, data: Any) -> Any:
            x, y = data
            y_pred = self(x, training=False)
            self.mae_metric.update_state(y, y_pred)
            return {self.mae_metric.name: self.mae_metric.result()}

    inputs = keras.Input(shape=(10,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse")
    return model
