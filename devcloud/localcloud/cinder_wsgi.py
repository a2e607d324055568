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

"""Cinder's volume API for a WSGI server (``...cinder_wsgi:application``).

Cinder reads ``sys.argv`` with oslo.config, where the server's own
arguments do not belong: they are replaced by its configuration file,
``CINDER_CONFIG_FILE`` (Cinder has no variable of its own for it).
"""

import os
import sys

sys.argv = sys.argv[:1] + ['--config-file', os.environ['CINDER_CONFIG_FILE']]

from cinder.wsgi.api import application  # noqa: E402,F401
