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

"""nova-api for a WSGI server (``...nova_api_wsgi:application``).

Nova's WSGI module reads ``sys.argv`` with oslo.config, where the server's
own arguments do not belong: they are dropped first.  The configuration
files come from ``OS_NOVA_CONFIG_DIR`` and ``OS_NOVA_CONFIG_FILES``.
"""

import sys

sys.argv = sys.argv[:1]

from nova.wsgi.osapi_compute import application  # noqa: E402,F401
