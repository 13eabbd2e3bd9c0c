"""What the driver reports while a search works; the CLI draws it with rich."""

from __future__ import annotations

from typing import Any, Protocol

from tuner.core.outcome import TrialOutcome


class SearchObserver(Protocol):
    """Progress of a search: trials starting and finishing, epochs, and one-line notes."""

    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None: ...

    def epoch_finished(self, event: dict[str, Any]) -> None: ...

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None: ...

    def note(self, message: str) -> None: ...


class QuietObserver:
    """A :class:`SearchObserver` that shows nothing."""

    def note(self, message: str) -> None:
        pass

    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None:
        pass

    def epoch_finished(self, event: dict[str, Any]) -> None:
        pass

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        pass
