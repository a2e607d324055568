"""Keystone for a WSGI server (``...keystone_wsgi:application``).

As for nova-api, the server's arguments are dropped before Keystone reads
``sys.argv``; its configuration file comes from
``OS_KEYSTONE_CONFIG_DIR`` and ``OS_KEYSTONE_CONFIG_FILES``.
"""

import sys

sys.argv = sys.argv[:1]

from keystone.wsgi.api import application  # noqa: E402,F401
