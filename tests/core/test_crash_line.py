"""The error a child that died without a result leaves in its trial's ``error``: its last real
error line, never TensorFlow's start-up logging that often ends a dead child's stderr (pure:
:func:`tuner.core.outcome.classify` on stderr tails as TensorFlow 2.16–2.20 write them)."""

from __future__ import annotations

import pytest

from tuner.core.oom import last_message
from tuner.core.outcome import ChildRun, classify

TF_START = [  # the older C++ format (TF <= 2.17) and absl's (TF >= 2.18), as a CPU machine shows
    "2025-03-04 10:11:12.345678: I external/local_xla/xla/tsl/cuda/cudart_stub.cc:32] Could not "
    "find cuda drivers on your machine, GPU will not be used.",
    "2025-03-04 10:11:12.400001: E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:485] "
    "Unable to register cuFFT factory: Attempting to register factory for plugin cuFFT when one "
    "has already been registered",
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "E0000 00:00:1741083072.412345   12345 cuda_dnn.cc:8310] Unable to register cuDNN factory: "
    "Attempting to register factory for plugin cuDNN when one has already been registered",
    "W0000 00:00:1741083072.498765   12345 computation_placer.cc:177] computation placer already "
    "registered. Please check linkage and avoid linking the same target more than once.",
    "2025-03-04 10:11:13.101010: I tensorflow/core/util/port.cc:153] oneDNN custom operations "
    "are on. You may see slightly different numerical results due to floating-point round-off "
    "errors from different computation orders. To turn them off, set the environment variable "
    "`TF_ENABLE_ONEDNN_OPTS=0`.",
    "2025-03-04 10:11:13.200000: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT "
    "Warning: Could not find TensorRT",
    "2025-03-04 10:11:13.300000: I tensorflow/core/platform/cpu_feature_guard.cc:210] This "
    "TensorFlow binary is optimized to use available CPU instructions in performance-critical "
    "operations.",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.",
]


def tail(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_an_error_followed_by_start_up_logging_is_the_stored_line() -> None:
    stderr = tail(
        "Traceback (most recent call last):",
        '  File "/work/models.py", line 7, in build_model',
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
        *TF_START,  # a second import of TensorFlow, in a thread still loading when it exited
    )
    out = classify(ChildRun(1, None, stderr_tail=stderr), memory_capped=False)
    assert out.error == (
        "child exited with code 1 without a result: ImportError: libcudnn.so.9: cannot open "
        "shared object file: No such file or directory"
    )


def test_a_segfault_names_python_s_fatal_error_not_its_stack_or_modules() -> None:
    stderr = tail(
        *TF_START,
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007f3b2c1ff740 (most recent call first):",
        '  File "/work/ops.py", line 31 in call',
        '  File "/venv/lib/python3.11/site-packages/keras/src/layers/layer.py", line 901 in '
        "__call__",
        "",
        "Extension modules: numpy._core._multiarray_umath, numpy.linalg._umath_linalg, "
        "h5py._errors, tensorflow.python.framework.fast_tensor_util (total: 87)",
    )
    out = classify(ChildRun(-11, None, stderr_tail=stderr), memory_capped=False)
    assert out.error == "child died by SIGSEGV: Fatal Python error: Segmentation fault"


def test_a_fatal_check_in_tensorflow_s_own_log_is_the_error() -> None:
    fatal = (
        "F0000 00:00:1741083075.000001   12345 cuda_executor.cc:223] Check failed: "
        "cuInit(0) == CUDA_SUCCESS (999 vs. 0)"
    )
    stderr = tail(*TF_START, fatal, "*** Check failure stack trace: ***", "    @ 0x7f00 (unknown)")
    out = classify(ChildRun(-6, None, stderr_tail=stderr), memory_capped=False)
    assert out.error == f"child died by SIGABRT: {fatal}"


@pytest.mark.parametrize("returncode", [-6, 1])
def test_nothing_but_start_up_logging_stores_no_line_of_it(returncode: int) -> None:
    out = classify(ChildRun(returncode, None, stderr_tail=tail(*TF_START)), memory_capped=False)
    assert out.error in ("child died by SIGABRT", "child exited with code 1 without a result")
    assert last_message(tail(*TF_START)) == ""
