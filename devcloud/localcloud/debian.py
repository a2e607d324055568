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

"""Debian's packages that the local cloud and its tests need (MariaDB,
RabbitMQ, Galera, HAProxy, Chromium), installed where missing.

One installation at a time on the machine: clouds side by side and their
tests may ask at once, and apt-get fails at once on another's lock.
"""

import fcntl
import os
import subprocess
import tempfile

LOCK = os.path.join(tempfile.gettempdir(), 'nova-reservation-apt.lock')


def install(*packages: str) -> None:
    """Install `packages` from Debian."""
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    # Another apt (not ours) may hold dpkg's lock for a while.
    wait = ('-o', 'DPkg::Lock::Timeout=600')
    with open(LOCK, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for args in (('update', '-qq'), ('install', '-y', '-qq') + packages):
            subprocess.run(('apt-get',) + wait + args, check=True, env=env,
                           stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
