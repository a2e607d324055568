"""Scheduler filters of nova-reservation."""

from nova_reservation.filters.reservation_filter import ReservationFilter  # noqa: F401,E501
