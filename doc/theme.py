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

"""The settings every Sphinx build of the project shares (the
documentation, the API reference, the release notes): its conf.py takes
them with ``globals().update(theme.SETTINGS)``.
"""

SETTINGS = dict(
    copyright='nova-reservation developers',
    master_doc='index',
    html_theme='openstackdocs',
    openstackdocs_repo_name='openstack/nova-reservation',
    openstackdocs_use_storyboard=False,
    openstackdocs_auto_name=False,
    pygments_style='native',
)
