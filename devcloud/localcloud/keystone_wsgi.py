#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Keystone for a WSGI server (``...keystone_wsgi:application``).

As for nova-api, the server's arguments are dropped before Keystone reads
``sys.argv``; its configuration file comes from
``OS_KEYSTONE_CONFIG_DIR`` and ``OS_KEYSTONE_CONFIG_FILES``.
"""

import sys

sys.argv = sys.argv[:1]

from keystone.wsgi.api import application  # noqa: E402,F401
