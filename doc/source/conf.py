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

"""The documentation: the install, user, administrator and contributor
guides, with the configuration and policy references generated from the
code.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..'))
import theme  # noqa: E402

globals().update(theme.SETTINGS)
extensions = [
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_policy.sphinxext',
]
project = 'nova-reservation'
