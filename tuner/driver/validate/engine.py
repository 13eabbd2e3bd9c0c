"""What both proofs of ``tuner validate`` share: a child that trains a validation request and
writes its weights, the control run (each batch's examples reversed: the same training in another
float32 rounding order), and the one JSON report."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.outcome import ok_payload
from tuner.core.protocol import ValidateRequest
from tuner.core.spec import StudySpec
from tuner.driver.children import ChildRunner
from tuner.driver.validate.checks import REORDER_ENV, Check


@dataclass(frozen=True)
class Engine:
    """Runs one validation's children, each killed after ``timeout_s``, weights in ``folder``."""

    runner: ChildRunner
    timeout_s: float
    folder: Path

    def run(
        self,
        request: ValidateRequest,
        plan: DevicePlan,
        name: str,
        *,
        env: dict[str, str] | None = None,
        control: bool = False,
    ) -> tuple[dict[str, Any], Path]:
        """Run ``request`` on ``plan`` (``env`` added to the plan's environment; ``control``:
        each batch's examples reversed); its result and the file its weights are in."""
        path = self.folder / f"weights-{name}{'-control' if control else ''}.npz"
        child_env = {**plan.child_environment(), **(env or {})}
        if control:
            child_env[REORDER_ENV] = "1"
        run = self.runner.run(replace(request, weights_file=str(path)), child_env, self.timeout_s)
        capped = plan.memory_limit_bytes is not None
        failed = f"the {plan.num_replicas}-device validation run failed"  # raised, naming the run
        return ok_payload(run, memory_capped=capped, failed=failed), path


def report(
    spec: StudySpec,
    plan: DevicePlan,
    checks: Iterable[Check],
    last: dict[str, Any],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The JSON report of a validation: settings, checks, warnings, what the run did."""
    checks = list(checks)
    batch = int(settings["global_batch_size"])
    return {
        "passed": all(c.passed for c in checks),
        "backend": spec.workload.backend,
        "loop": spec.search.run.loop,
        "update_on": spec.search.run.update_on,
        "num_replicas": plan.num_replicas,
        "per_replica_batch_size": batch // plan.num_replicas,
        "device_signature": plan.device_signature,
        **settings,
        "checks": {
            c.name.replace(" ", "_"): {
                "passed": c.passed,
                "summary": c.summary,
                **({"warning": c.warning} if c.warning else {}),
                **c.figures,
            }
            for c in checks
        },
        "warnings": list(dict.fromkeys(c.warning for c in checks if c.warning)),
        "deterministic_layers": list(last.get("deterministic_layers", [])),
        "versions": last.get("versions", {}),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
