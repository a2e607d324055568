"""nova-api for a WSGI server (``...nova_api_wsgi:application``).

Nova's WSGI module reads ``sys.argv`` with oslo.config, where the server's
own arguments do not belong: they are dropped first.  The configuration
files come from ``OS_NOVA_CONFIG_DIR`` and ``OS_NOVA_CONFIG_FILES``.
"""

import sys

sys.argv = sys.argv[:1]

from nova.wsgi.osapi_compute import application  # noqa: E402,F401
