"""The event engine (``nova-reservation-engine``)."""
