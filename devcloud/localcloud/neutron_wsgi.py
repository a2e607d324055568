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

"""Neutron's API for a WSGI server (``...neutron_wsgi:application``).

As for nova-api, the server's arguments are dropped before Neutron reads
``sys.argv``; its configuration files come from ``OS_NEUTRON_CONFIG_DIR``
and ``OS_NEUTRON_CONFIG_FILES`` (``;``-separated).
"""

import sys

sys.argv = sys.argv[:1]

from neutron.wsgi.api import application  # noqa: E402,F401
