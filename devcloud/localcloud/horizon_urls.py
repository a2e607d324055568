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

"""Horizon's URLs, and its static files from STATIC_ROOT: the local cloud
has no web server in front of gunicorn, and Django serves them only in
DEBUG mode otherwise.
"""

from django.conf import settings
from django.urls import re_path
from django.views import static

from openstack_dashboard.urls import urlpatterns

urlpatterns = [re_path(r'^%s(?P<path>.*)$' % settings.STATIC_URL.lstrip('/'),
                       static.serve,
                       {'document_root': settings.STATIC_ROOT})] + urlpatterns
