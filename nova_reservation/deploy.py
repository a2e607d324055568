"""How nova-reservation plugs into Nova: the exact configuration lines.

The test harness, the demo and the deployment tools all take the
configuration from here, so that what is tested is what operators get.
"""

import re

PASTE_FILTER_NAME = 'reservation'
PASTE_SECTIONS = """
[filter:reservation]
paste.filter_factory = nova_reservation.hooks:filter_factory

[pipeline:reservation_api]
pipeline = cors http_proxy_to_wsgi compute_req_id request_log authtoken \
keystonecontext reservation_app

[app:reservation_app]
paste.app_factory = nova_reservation.api:app_factory
"""
API_MOUNT = '/reservation: reservation_api'

FILTER_CLASS = 'nova_reservation.filters.ReservationFilter'
FILTER_NAME = 'ReservationFilter'


def add_to_api_paste(text: str) -> str:
    """Change a shipped api-paste.ini as an operator does.

    The boot-hint hook goes right after ``keystonecontext`` in every /v2.1
    pipeline, and the lease API is mounted at /reservation in the
    osapi_compute urlmap, behind the same authentication as Nova.
    """
    if '[filter:reservation]' in text:
        return text
    text = re.sub(r'(\bkeystonecontext)(?= )',
                  r'\1 %s' % PASTE_FILTER_NAME, text)
    text = re.sub(r'(\[composite:osapi_compute\]\nuse = [^\n]*\n)',
                  r'\1%s\n' % API_MOUNT, text)
    return text.rstrip('\n') + '\n' + PASTE_SECTIONS


def scheduler_filters(enabled: list) -> list:
    """Nova's enabled filters with ReservationFilter added last."""
    return list(enabled) + ([FILTER_NAME] if FILTER_NAME not in enabled
                            else [])
