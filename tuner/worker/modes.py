"""Inside the child: each mode's runner, typed by its own request, dispatched by ``match`` on the
request's type, so mypy checks that every mode has its runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tuner.core.protocol import (
    InspectRequest,
    LrFindRequest,
    ProbeRequest,
    Request,
    Result,
    TrialRequest,
    ValidateRequest,
)
from tuner.worker.meters import Emit


@dataclass(frozen=True)
class Modes:
    """Each mode's runner ``(request, emit) -> result``; it raises on failure."""

    inspect: Callable[[InspectRequest, Emit], Result]
    trial: Callable[[TrialRequest, Emit], Result]
    probe: Callable[[ProbeRequest, Emit], Result]
    validate: Callable[[ValidateRequest, Emit], Result]
    lr_find: Callable[[LrFindRequest, Emit], Result]

    def answer(self, request: Request, emit: Emit) -> Result:
        """Run ``request`` with its mode's runner."""
        match request:
            case InspectRequest():
                return self.inspect(request, emit)
            case TrialRequest():
                return self.trial(request, emit)
            case ProbeRequest():
                return self.probe(request, emit)
            case ValidateRequest():
                return self.validate(request, emit)
            case LrFindRequest():
                return self.lr_find(request, emit)
