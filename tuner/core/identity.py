"""What must match when a study is resumed: the stored spec less what may change between runs
(:func:`tuner.core.spec.identity_of`, beside the spec's sub-records whose defaults it fills in)."""

from tuner.core.spec import identity_of

__all__ = ["identity_of"]
