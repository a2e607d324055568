"""The boot-hint hook of nova-api (paste filter)."""

from nova_reservation.hooks.middleware import filter_factory  # noqa: F401
