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

"""Django settings of the local cloud's Horizon, with blazar-dashboard
(``DJANGO_SETTINGS_MODULE=devcloud.localcloud.horizon_settings``).

Horizon's own settings, with the local cloud's Keystone, its files under
the cloud's data directory (``LOCALCLOUD_DIR``), sessions in files (no
memcached) and blazar-dashboard's panels enabled as if its ``enabled``
files were in Horizon's ``local/enabled``, without touching the installed
packages.
"""

import contextlib
import os

import blazar_dashboard.enabled
from horizon.utils import secret_key
from openstack_dashboard.utils import settings as settings_utils

from devcloud.localcloud import cloud
import nova_reservation.dashboard.enabled

_CLOUD = cloud.LocalCloud(os.environ.get('LOCALCLOUD_DIR'))


@contextlib.contextmanager
def _as_if_installed():
    """While Horizon's settings load: blazar-dashboard's enabled files
    and this project's join Horizon's (same order and merging as in
    ``local/enabled``), and the secret key Horizon would write next to its
    own code when no local settings give one is the cloud's.
    """
    update, generate = (settings_utils.update_dashboards,
                        secret_key.generate_or_read_from_file)

    def update_dashboards(modules, *args):
        return update(list(modules) + [
            blazar_dashboard.enabled, nova_reservation.dashboard.enabled],
            *args)

    settings_utils.update_dashboards = update_dashboards
    secret_key.generate_or_read_from_file = (
        lambda *args, **kwargs: generate(_CLOUD.horizon_secret))
    try:
        yield
    finally:
        settings_utils.update_dashboards = update
        secret_key.generate_or_read_from_file = generate


with _as_if_installed():
    from openstack_dashboard.settings import *  # noqa: E402,F401,F403,H303

DEBUG = False
ALLOWED_HOSTS = [cloud.HOST, 'localhost']
SECRET_KEY = secret_key.generate_or_read_from_file(_CLOUD.horizon_secret)

OPENSTACK_KEYSTONE_URL = cloud.url('keystone')
OPENSTACK_KEYSTONE_DEFAULT_DOMAIN = 'Default'

# One gunicorn worker: its memory is the only cache; sessions in files
# outlive its restarts.
CACHES = {'default': {
    'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}
SESSION_ENGINE = 'django.contrib.sessions.backends.file'
SESSION_FILE_PATH = _CLOUD.horizon_sessions

# Built once by `collectstatic` and `compress` (LocalCloud.build_horizon),
# served by Django itself (there is no web server in front).
STATIC_ROOT = _CLOUD.horizon_static
COMPRESS_OFFLINE = True
ROOT_URLCONF = 'devcloud.localcloud.horizon_urls'
