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

"""A local multi-process cloud for tests and demos, on loopback only.

Real Keystone, Glance, Placement, Neutron, Cinder's API, nova-api and
Horizon (with blazar-dashboard) under gunicorn; nova-conductor,
nova-scheduler and several nova-compute processes (fake driver, small
hosts, stable node identities); cinder-scheduler and cinder-volume (Cinder's
fake driver); the reservation engine(s); on the machine's MariaDB and
RabbitMQ with their own databases and vhost.  Neutron is ML2 with no agent:
its one stand-in is the mechanism driver that binds ports
(``ml2_binding``), for the data plane that can not run here.  Each project
has a network and a router to the external network ``public``.  Nova is
configured for nova-reservation by ``nova_reservation.deploy``, the code
that the devstack plugin runs too.
"""

import contextlib
import functools
import grp
import hashlib
from importlib import metadata
import json
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Optional

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from devcloud import accelerators
from devcloud import baremetal
from devcloud import lanes
from devcloud.localcloud import debian
from devcloud.localcloud import galera
from devcloud import mariadb
from nova_reservation import deploy

HOST = '127.0.0.1'
# Clouds side by side on one machine: LOCALCLOUD_INSTANCE=N (0 by default)
# gives cloud N ports 100 x N higher, databases and vhosts named with _N,
# and the directory .localcloud-N (LOCALCLOUD_DIR overrides it).  One of
# them at a time may run the Galera cluster (its ports are fixed).
INSTANCE = int(os.environ.get('LOCALCLOUD_INSTANCE') or 0)
_SHIFT = 100 * INSTANCE
_SUFFIX = '_%d' % INSTANCE if INSTANCE else ''
PORTS = {name: port + _SHIFT for name, port in dict(
    keystone=15000, nova=18774, placement=18778, image=19292,
    network=19696, volume=18776, dashboard=18080).items()}
# With `up --controllers 2`: each controller's nova-api, behind HAProxy on
# PORTS['nova'] (their names: nova-api, nova-api2).
CONTROLLER_PORTS = {1: 18784 + _SHIFT, 2: 18785 + _SHIFT}
# Where the usage enforcement service is looked for: nothing listens there
# but the stand-in of the test that checks enforcement, and a service that
# is not there lets leases through (`ENFORCEMENT`).
ENFORCEMENT_PORT = 18799 + _SHIFT
ENFORCEMENT = dict(
    enabled_filters='ExternalServiceFilter',
    external_service_base_endpoint='http://%s:%d/v1/' % (HOST,
                                                         ENFORCEMENT_PORT),
    external_service_on_failure='accept', external_service_timeout='5')
DB_USER = DB_PASSWORD = 'nrsv_localcloud'
DATABASES = {name: 'nrsv_lc_' + name + _SUFFIX for name in (
    'keystone', 'glance', 'nova_api', 'nova', 'nova_cell0', 'nova_cell2',
    'placement', 'neutron', 'cinder')}
VHOST = 'nrsv_localcloud' + _SUFFIX
# cell2 (``up --cells 2``): its own database (above) and message queue, its
# own conductor and every second compute.
CELL2_VHOST = 'nrsv_localcloud_cell2' + _SUFFIX
REGION = 'RegionOne'
# name: (project, roles); every password is "<name>-secret".
USERS = {
    'admin': ('admin', ('admin',)),
    'alice': ('alpha', ('member', 'reader')),
    'bob': ('beta', ('member', 'reader')),
    'nova': ('service', ('admin', 'service')),
    'placement': ('service', ('admin', 'service')),
    'glance': ('service', ('admin', 'service')),
    'neutron': ('service', ('admin', 'service')),
    'cinder': ('service', ('admin', 'service')),
    'nova-reservation': ('service', ('admin',)),
}
FLAVORS = {'m1.tiny': (1, 512, 1), 'm1.small': (1, 2048, 20),
           'm1.large': (4, 8192, 80)}
IMAGE = 'cirros'
# Each project's network (<project>-net, its subnet <project>-subnet and its
# router <project>-router to the external network).
PROJECT_NETWORKS = {'admin': '10.0.0.0/24', 'alpha': '10.0.1.0/24',
                    'beta': '10.0.2.0/24'}
# The external network (flat, admin's), where routers have their gateway
# and floating IPs come from.
PUBLIC = dict(name='public', cidr='172.24.4.0/24', gateway='172.24.4.1',
              pool=('172.24.4.10', '172.24.4.200'))
CELL2_RABBIT = 'rabbit://guest:guest@%s:5672/%s' % (HOST, CELL2_VHOST)
BIN = os.path.dirname(sys.executable)
PACKAGE = 'devcloud.localcloud'
# The checkout, first on the services' import path: they import this
# package (the WSGI modules, Neutron's binding driver, Cinder's volume
# driver), which is not installed,
# and nova_reservation from the same tree.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def password(user: str) -> str:
    return '%s-secret' % user


def url(service: str) -> str:
    path = {'keystone': '/v3', 'nova': '/v2.1', 'volume': '/v3'}.get(
        service, '')
    return 'http://%s:%d%s' % (HOST, PORTS[service], path)


def db_url(name: str, port: int = 3306) -> str:
    return 'mysql+pymysql://%s:%s@%s:%d/%s?charset=utf8&%s' % (
        DB_USER, DB_PASSWORD, HOST, port, DATABASES[name],
        mariadb.URL_QUERY)


def _wait(what: str, check, timeout: float = 120,
          alive=lambda: True) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not alive():
            raise RuntimeError('%s: the process died' % what)
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.5)
    raise RuntimeError('timed out waiting for %s' % what)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((HOST, port)) == 0


def _environ(extra: Optional[dict] = None) -> dict:
    """This process's environment with the checkout first on the import
    path, and `extra`: what a service or setup command of the cloud runs
    with (its PYTHONPATH, if any, before the checkout).
    """
    extra = dict(extra or {})
    path = [p for p in (extra.pop('PYTHONPATH', '').split(os.pathsep) +
                        [ROOT] + os.environ.get('PYTHONPATH', '').split(
                            os.pathsep)) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path), **extra)


def _run(*cmd: str, env: Optional[dict] = None, log=None) -> None:
    subprocess.run(cmd, check=True, env=env, stdin=subprocess.DEVNULL,
                   stdout=log or subprocess.DEVNULL,
                   stderr=subprocess.STDOUT if log else subprocess.DEVNULL)


def _serve_devstack_paths(api_paste: str) -> None:
    """Serve the compute API under /compute/v2.1 too, where devstack puts
    it: Blazar's own API tests address it there, beside /reservation/v1.
    """
    with open(api_paste) as f:
        text = f.read()
    text = deploy.mount(text, ['/compute: oscomputeversions',
                               '/compute/v2.1: oscomputeversion_v2',
                               '/compute/v2.1/+: openstack_compute_api_v21'])
    with open(api_paste, 'w') as f:
        f.write(text)


class LocalCloud:

    def __init__(self, base: Optional[str] = None) -> None:
        self.base = os.path.abspath(base or os.environ.get(
            'LOCALCLOUD_DIR') or '.localcloud' + (
                '-%d' % INSTANCE if INSTANCE else ''))
        self.etc = os.path.join(self.base, 'etc')
        self.data = os.path.join(self.base, 'data')
        self.logs = os.path.join(self.base, 'log')
        self.run_dir = os.path.join(self.base, 'run')
        horizon = os.path.join(self.data, 'horizon')
        self.horizon_secret = os.path.join(horizon, 'secret_key')
        self.horizon_sessions = os.path.join(horizon, 'sessions')
        # Outside data/horizon: kept by `up --fresh` (see build_horizon).
        self.horizon_static = os.path.join(self.data, 'horizon-static')
        self.cluster = galera.Cluster(self.data, self.etc, self.logs,
                                      self.start, self.stop, self.running)
        # The topology of the cloud that runs, or ran last.
        self.state = dict(engines=1, computes=3, cells=1, controllers=1,
                          galera=1, accelerators=False)
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(self.base, 'state.json')) as f:
                self.state.update(json.load(f))

    @property
    def lanes(self) -> int:
        """The lanes of its capacity (`devcloud.lanes`)."""
        return int(self.state.get('lanes', 1))

    @property
    def db_port(self) -> int:
        """Where the cloud's databases answer: the machine's MariaDB, or
        HAProxy in front of the Galera cluster.
        """
        return galera.PORT if self.state['galera'] > 1 else 3306

    def db_url(self, name: str) -> str:
        return db_url(name, self.db_port)

    # ---------------------------------------------------------- processes
    def _pidfile(self, name: str) -> str:
        return os.path.join(self.run_dir, name + '.pid')

    def running(self) -> list:
        if not os.path.isdir(self.run_dir):
            return []
        names = []
        for f in sorted(os.listdir(self.run_dir)):
            with open(os.path.join(self.run_dir, f)) as pidfile:
                pid = int(pidfile.read())
            try:
                os.kill(pid, 0)
                names.append(f[:-4])
            except ProcessLookupError:
                pass
        return names

    def start(self, name: str, *cmd: str, env: Optional[dict] = None) -> int:
        """Start a service in a session of its own (it outlives `up`)."""
        with open(os.path.join(self.logs, name + '.log'), 'ab') as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                cwd=self.base, env=_environ(env))
        with open(self._pidfile(name), 'w') as f:
            f.write(str(proc.pid))
        return proc.pid

    def stop(self, name: str, timeout: float = 15) -> None:
        """Stop a service and what it forked (by its pid file only)."""
        self.stop_all([name], timeout)

    def stop_all(self, names: list, timeout: float = 15) -> None:
        """Stop services at once: each is sent SIGTERM, then SIGKILL if
        it has not ended within `timeout`.
        """
        pids = {}
        for name in names:
            path = self._pidfile(name)
            if os.path.exists(path):
                with open(path) as f:
                    pids[path] = int(f.read())
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5)):
            alive = [pid for pid in pids.values() if _group_alive(pid)]
            for pid in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, sig)
            deadline = time.time() + wait
            while alive and time.time() < deadline:
                time.sleep(0.2)
                alive = [pid for pid in alive if _group_alive(pid)]
        for path in pids:
            os.unlink(path)

    def kill(self, name: str) -> None:
        """kill -9 of a service and what it forked, as a crash does."""
        path = self._pidfile(name)
        with open(path) as f:
            pid = int(f.read())
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        while _group_alive(pid):
            time.sleep(0.1)
        os.unlink(path)

    def _gunicorn(self, name: str, app: str, port: int,
                  env: dict, workers: int = 1) -> None:
        if _port_open(port):
            raise RuntimeError('%s: port %d is taken by another process'
                               % (name, port))
        # Idle connections kept a minute (gunicorn's default is 2 s): a
        # client that polls every few seconds would otherwise send on a
        # connection the server is closing, and read a reset.
        self.start(name, os.path.join(BIN, 'gunicorn'), '-b',
                   '%s:%d' % (HOST, port), '-w', str(workers),
                   '--threads', '8',
                   '--timeout', '120', '--keep-alive', '75',
                   # No limit on a request line: Nova lists the ports of
                   # every server of a page in one query string.
                   '--limit-request-line', '0',
                   '--no-control-socket', app, env=env)

    # -------------------------------------------------- MariaDB, RabbitMQ
    def ensure_mariadb(self) -> None:
        """Reuse the MariaDB that runs; install and start one otherwise."""
        if not _port_open(3306):
            if not os.path.exists('/usr/sbin/mariadbd'):
                debian.install('mariadb-server')
            # Where Debian's MariaDB keeps its socket (made by its init
            # script, which does not run in a container).
            os.makedirs('/run/mysqld', exist_ok=True)
            shutil.chown('/run/mysqld', 'mysql', 'mysql')
            _run('start-stop-daemon', '--start', '--oknodo', '--background',
                 '--exec', '/usr/sbin/mariadbd')
            _wait('MariaDB', lambda: _port_open(3306))
        _wait('MariaDB', lambda: self._root_sql('SELECT 1') or True)
        # Every Nova process of two cells holds connections to three
        # databases or four: MariaDB's default of 151 is too few, as for
        # the Galera nodes (galera.py).  Until MariaDB restarts.
        self._root_sql('SET GLOBAL max_connections = GREATEST('
                       '@@max_connections, %d)' % galera.MAX_CONNECTIONS)

    @staticmethod
    def _root_sql(*statements: str) -> None:
        """As MariaDB's root, through its socket as Debian sets it up
        (unix_socket authentication), else over TCP with no password.
        """
        if shutil.which('mariadb'):
            _run('mariadb', '-u', 'root', '-e', ';\n'.join(statements))
            return
        galera.run_sql(statements, host=HOST, user='root', password='')

    def ensure_database_server(self, fresh: bool) -> None:
        """The machine's MariaDB, or (``--galera 3``) the cluster and the
        HAProxy in front of it.
        """
        if self.state['galera'] > 1:
            self.cluster.up(fresh)
            self.start_haproxy()
        else:
            self.ensure_mariadb()

    def start_haproxy(self, writers: str = 'one') -> None:
        """The database cluster's HAProxy (process haproxy-db), again with
        the other `writers` mode if it runs: every connection through it is
        cut, as at a failover.
        """
        if 'haproxy-db' in self.running():
            self.stop('haproxy-db')
        self.cluster.start_haproxy('haproxy-db',
                                   self.cluster.write_haproxy(writers),
                                   galera.PORT)

    def start_api_proxy(self) -> None:
        """The controllers' HAProxy (process haproxy), on PORTS['nova']."""
        self.cluster.start_haproxy('haproxy', self.cluster.write_api_proxy({
            'nova-api%s' % ('' if n == 1 else n): CONTROLLER_PORTS[n]
            for n in range(1, self.state['controllers'] + 1)},
            PORTS['nova']), PORTS['nova'])

    def create_databases(self, fresh: bool) -> None:
        statements = ["CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY "
                      "'%s'" % (DB_USER, HOST, DB_PASSWORD)]
        for name in DATABASES.values():
            if fresh:
                statements.append('DROP DATABASE IF EXISTS %s' % name)
            statements += ['CREATE DATABASE IF NOT EXISTS %s' % name,
                           "GRANT ALL PRIVILEGES ON %s.* TO '%s'@'%s'"
                           % (name, DB_USER, HOST)]
        if self.state['galera'] > 1:
            self.cluster.sql(*statements)
        else:
            self._root_sql(*statements)

    def ensure_rabbitmq(self) -> None:
        """Reuse the RabbitMQ that runs; install and start one otherwise;
        then the cloud's own vhost.
        """
        if not _port_open(5672):
            if not shutil.which('rabbitmq-server'):
                debian.install('rabbitmq-server')
            _run('rabbitmq-server', '-detached')
            _wait('RabbitMQ', lambda: _port_open(5672), timeout=180)
        _wait('RabbitMQ', lambda: subprocess.run(
            ['rabbitmqctl', '-q', 'status'], capture_output=True
        ).returncode == 0, timeout=180)
        vhosts = subprocess.run(['rabbitmqctl', '-q', 'list_vhosts'],
                                capture_output=True, text=True).stdout
        for vhost in (VHOST, CELL2_VHOST):
            if vhost not in vhosts.split():
                _run('rabbitmqctl', '-q', 'add_vhost', vhost)
            _run('rabbitmqctl', '-q', 'set_permissions', '-p', vhost,
                 'guest', '.*', '.*', '.*')

    # ------------------------------------------------------ configuration
    def write_config(self) -> None:
        os.makedirs(self.etc, exist_ok=True)
        auth = dict(auth_url=url('keystone'), auth_type='password',
                    project_name='service', user_domain_name='Default',
                    project_domain_name='Default', region_name=REGION)

        def service_auth(user):
            return dict(auth, username=user, password=password(user))

        def authtoken(user):
            return dict(service_auth(user), www_authenticate_uri=url(
                'keystone'), service_token_roles_required='true')

        self._write_ini('keystone.conf', {
            'DEFAULT': dict(log_file=os.path.join(self.logs,
                                                  'keystone-app.log')),
            'database': dict(connection=self.db_url('keystone')),
            'token': dict(provider='fernet'),
            'fernet_tokens': dict(key_repository=os.path.join(
                self.data, 'keystone', 'fernet-keys')),
            'credential': dict(key_repository=os.path.join(
                self.data, 'keystone', 'credential-keys')),
            # A cloud for tests: the cheapest password hashes bcrypt has
            # (each CLI run logs in), and Keystone's caches in its one
            # process (token validations, role assignments).
            'identity': dict(password_hash_rounds='4'),
            'cache': dict(enabled='true', backend='oslo_cache.dict',
                          expiration_time='600'),
        })
        self._write_ini('placement.conf', {
            'api': dict(auth_strategy='keystone'),
            'keystone_authtoken': authtoken('placement'),
            'placement_database': dict(connection=self.db_url('placement')),
        })
        glance = os.path.join(self.data, 'glance')
        self._write_ini('glance-api.conf', {
            'DEFAULT': dict(log_file=os.path.join(self.logs,
                                                  'glance-app.log'),
                            enabled_backends='fs:file'),
            'database': dict(connection=self.db_url('glance')),
            'paste_deploy': dict(flavor='keystone', config_file=os.path.join(
                sys.prefix, 'etc', 'glance', 'glance-api-paste.ini')),
            'keystone_authtoken': authtoken('glance'),
            'glance_store': dict(default_backend='fs'),
            'fs': dict(filesystem_store_datadir=os.path.join(glance,
                                                             'images')),
            'os_glance_staging_store': dict(
                filesystem_store_datadir=os.path.join(glance, 'staging')),
            'os_glance_tasks_store': dict(
                filesystem_store_datadir=os.path.join(glance, 'tasks')),
            'oslo_concurrency': dict(lock_path=os.path.join(glance, 'lock')),
        })
        rabbit = 'rabbit://guest:guest@%s:5672/%s' % (HOST, VHOST)
        # Neutron: ML2 with no agent (none could run here); ports are
        # bound by the local cloud's own mechanism driver (ml2_binding).
        neutron = os.path.join(self.data, 'neutron')
        self._write_ini('neutron.conf', {
            'DEFAULT': dict(
                host='controller', state_path=neutron,
                transport_url=rabbit, core_plugin='ml2',
                service_plugins='router', auth_strategy='keystone',
                api_workers='1', allow_overlapping_ips='true',
                # No DHCP agent to tell.
                dhcp_agent_notification='false',
                api_paste_config=os.path.join(sys.prefix, 'etc', 'neutron',
                                              'api-paste.ini'),
                # network-vif-plugged, -changed and -deleted, as in
                # production.
                notify_nova_on_port_status_changes='true',
                notify_nova_on_port_data_changes='true',
                send_events_interval='1',
                default_log_levels='amqp=WARN,oslo.messaging=INFO,'
                'oslo_messaging=INFO,sqlalchemy=WARN,stevedore=WARN,'
                'urllib3.connectionpool=WARN,keystoneauth=WARN,'
                'keystonemiddleware=WARN,oslo_policy=INFO,'
                'neutron.wsgi=WARN'),
            'database': dict(connection=self.db_url('neutron')),
            'keystone_authtoken': authtoken('neutron'),
            'nova': dict(service_auth('neutron'), endpoint_type='public'),
            'oslo_concurrency': dict(lock_path=os.path.join(neutron,
                                                            'lock')),
            'oslo_messaging_notifications': dict(driver='noop'),
            # A cloud for tests: no limit on what the tests make.
            'quotas': dict(quota_network='-1', quota_subnet='-1',
                           quota_port='-1', quota_router='-1',
                           quota_floatingip='-1'),
        })
        self._write_ini('ml2_conf.ini', {
            'ml2': dict(type_drivers='local,flat,vlan',
                        project_network_types='local',
                        mechanism_drivers='localcloud',
                        extension_drivers='port_security'),
            'ml2_type_flat': dict(flat_networks=PUBLIC['name']),
        })
        # Cinder: api, scheduler and volume, with Cinder's fake driver
        # (cinder_driver).
        cinder = os.path.join(self.data, 'cinder')
        self._write_ini('cinder.conf', {
            'DEFAULT': dict(
                host='controller', my_ip=HOST, state_path=cinder,
                transport_url=rabbit, auth_strategy='keystone',
                enabled_backends='fake',
                api_paste_config=os.path.join(sys.prefix, 'etc', 'cinder',
                                              'api-paste.ini'),
                rootwrap_config=os.path.join(sys.prefix, 'etc', 'cinder',
                                             'rootwrap.conf'),
                # Which filters the API takes (volume list --name, ...).
                resource_query_filters_file=os.path.join(
                    sys.prefix, 'etc', 'cinder', 'resource_filters.json'),
                default_log_levels='amqp=WARN,oslo.messaging=INFO,'
                'oslo_messaging=INFO,sqlalchemy=WARN,stevedore=WARN,'
                'urllib3.connectionpool=WARN,keystoneauth=WARN,'
                'keystonemiddleware=WARN,oslo_policy=INFO'),
            'database': dict(connection=self.db_url('cinder')),
            # Nova's service token is required to detach a volume that Nova
            # attached (Cinder checks that Nova agrees).
            'keystone_authtoken': authtoken('cinder'),
            'nova': dict(service_auth('cinder'), interface='public'),
            'fake': dict(volume_driver=PACKAGE + '.cinder_driver.'
                         'ClonedImageDriver', volume_backend_name='fake'),
            'oslo_concurrency': dict(lock_path=os.path.join(cinder, 'lock')),
            'oslo_messaging_notifications': dict(driver='noop'),
            'quota': dict(volumes='-1', snapshots='-1', gigabytes='-1'),
        })
        nova = {
            'DEFAULT': dict(
                host='controller', my_ip=HOST,
                state_path=os.path.join(self.data, 'nova'),
                transport_url=rabbit,
                compute_driver='fake.FakeDriverWithoutFakeNodes',
                # The fake driver has 1000 vCPUs, 800000 MiB and 600000 GB:
                # what it keeps back leaves each node the size of a small
                # real host (4 vCPUs, 8 GiB, 80 GB), so tests reach limits.
                reserved_host_cpus=str(1000 - 4),
                reserved_host_memory_mb=str(800000 - 8192),
                reserved_host_disk_mb=str((600000 - 80) * 1024),
                cpu_allocation_ratio='1.0', ram_allocation_ratio='1.0',
                disk_allocation_ratio='1.0',
                # Ports are bound by a driver, not plugged by an agent:
                # a boot does not wait long for network-vif-plugged.
                vif_plugging_is_fatal='false', vif_plugging_timeout='5',
                use_rootwrap_daemon='false', max_concurrent_builds='10',
                max_concurrent_snapshots='10',
                default_log_levels='amqp=WARN,oslo.messaging=INFO,'
                'oslo_messaging=INFO,sqlalchemy=WARN,stevedore=WARN,'
                'urllib3.connectionpool=WARN,keystoneauth=WARN,'
                'keystonemiddleware=WARN,oslo_policy=INFO'),
            'wsgi': dict(api_paste_config=os.path.join(self.etc,
                                                       'api-paste.ini')),
            'keystone_authtoken': authtoken('nova'),
            'placement': dict(service_auth('nova'),
                              valid_interfaces='public'),
            'neutron': dict(service_auth('nova'), valid_interfaces='public'),
            'cinder': dict(service_auth('nova'), os_region_name=REGION),
            # The user's token and Nova's: Cinder lets only Nova detach
            # what Nova attached.
            'service_user': dict(service_auth('nova'),
                                 send_service_user_token='true'),
            'glance': dict(valid_interfaces='public', region_name=REGION),
            'keystone': dict(valid_interfaces='public', region_name=REGION),
            'conductor': dict(workers='1'),
            'scheduler': dict(workers='1',
                              discover_hosts_in_cells_interval='-1'),
            'filter_scheduler': dict(enabled_filters=','.join((
                'ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter'))),
            'compute': dict(heal_instance_info_cache_interval='-1'),
            'quota': dict(instances='-1', cores='-1', ram='-1'),
            'oslo_concurrency': dict(lock_path=os.path.join(
                self.data, 'nova', 'lock')),
            'vnc': dict(enabled='false'),
            'oslo_messaging_notifications': dict(driver='noop'),
            # A test cloud: what a crash leaves is repaired within a
            # minute.
            'reservation': dict(reconcile_interval='15',
                                creating_timeout='30',
                                preempt_check_interval='5',
                                preempt_notice='2', preempt_margin='1',
                                default_lease_tag='reservation:default_lease',
                                quota_tag='reservation-quota',
                                wait_interval='10',
                                # Leases of a project so tagged wait for
                                # an admin, a minute at most.
                                approval_tag='reservation:approval',
                                approval_hold='60',
                                approval_check_interval='5'),
            'enforcement': ENFORCEMENT,
        }
        self._write_ini('nova.conf', nova)
        # Only for the processes that use the databases: nova-compute must
        # not see them.
        self._write_ini('nova-db.conf', {
            'api_database': dict(connection=self.db_url('nova_api')),
            'database': dict(connection=self.db_url('nova')),
        })
        # What cell2's processes read after those: its message queue (its
        # conductor and computes) and its database (its conductor).
        self._write_ini('nova-cell2-mq.conf', {
            'DEFAULT': dict(transport_url=CELL2_RABBIT)})
        self._write_ini('nova-cell2-db.conf', {
            'database': dict(connection=self.db_url('nova_cell2'))})
        # The second controller's services are Nova services of their own.
        self._write_ini('nova-controller2.conf', {
            'DEFAULT': dict(host='controller2')})
        shipped = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
        shutil.copy(shipped, os.path.join(self.etc, 'api-paste.ini'))
        # What an operator (or the devstack plugin) does to plug in.
        r = service_auth('nova-reservation')
        deploy.configure(
            os.path.join(self.etc, 'nova.conf'),
            os.path.join(self.etc, 'api-paste.ini'),
            {k: r[k] for k in ('auth_url', 'username', 'password',
                               'project_name', 'user_domain_name',
                               'project_domain_name', 'region_name')})
        _serve_devstack_paths(os.path.join(self.etc, 'api-paste.ini'))

    def _write_ini(self, name: str, sections: dict) -> None:
        lines = []
        for section, options in sections.items():
            lines.append('[%s]' % section)
            lines += ['%s = %s' % item for item in options.items()]
            lines.append('')
        with open(os.path.join(self.etc, name), 'w') as f:
            f.write('\n'.join(lines))

    def _nova_args(self, db: bool = True) -> list:
        args = ['--config-file', os.path.join(self.etc, 'nova.conf')]
        if db:
            args += ['--config-file', os.path.join(self.etc, 'nova-db.conf')]
        return args

    def _controller_args(self, controller: int) -> list:
        """What the second controller's processes read after
        `_nova_args`: their host name.
        """
        return [] if controller == 1 else [
            '--config-file', os.path.join(self.etc, 'nova-controller2.conf')]

    def _cell2_args(self, db: bool = True) -> list:
        """What cell2's processes read after `_nova_args`."""
        args = ['--config-file', os.path.join(self.etc, 'nova-cell2-mq.conf')]
        if db:
            args += ['--config-file',
                     os.path.join(self.etc, 'nova-cell2-db.conf')]
        return args

    # ----------------------------------------------------------- services
    def _setup(self, *cmd: str, env: Optional[dict] = None) -> None:
        """A setup command (a database sync, ...), logged to setup.log."""
        with open(os.path.join(self.logs, 'setup.log'), 'ab') as log:
            _run(*cmd, env=_environ(env), log=log)

    def start_keystone(self, fresh: bool) -> None:
        manage = [os.path.join(BIN, 'keystone-manage'), '--config-file',
                  os.path.join(self.etc, 'keystone.conf')]
        if fresh:
            user = pwd.getpwuid(os.getuid()).pw_name
            group = grp.getgrgid(os.getgid()).gr_name
            self._setup(*manage, 'db_sync')
            for keys in ('fernet_setup', 'credential_setup'):
                self._setup(*manage, keys, '--keystone-user', user,
                            '--keystone-group', group)
            self._setup(*manage, 'bootstrap', '--bootstrap-password',
                        password('admin'), '--bootstrap-region-id', REGION,
                        '--bootstrap-admin-url', url('keystone'),
                        '--bootstrap-internal-url', url('keystone'),
                        '--bootstrap-public-url', url('keystone'))
        self._gunicorn('keystone', PACKAGE + '.keystone_wsgi:application',
                       PORTS['keystone'],
                       dict(OS_KEYSTONE_CONFIG_DIR=self.etc,
                            OS_KEYSTONE_CONFIG_FILES='keystone.conf'))
        _wait('Keystone', lambda: self.session('admin').get(
            url('keystone') + '/auth/projects').ok,
            alive=lambda: 'keystone' in self.running())

    def session(self, user: str) -> ks_session.Session:
        project = USERS[user][0]
        return ks_session.Session(auth=v3.Password(
            auth_url=url('keystone'), username=user,
            password=password(user), project_name=project,
            user_domain_name='Default', project_domain_name='Default'))

    def create_identities(self) -> None:
        """Projects, users, roles and the catalog (idempotent)."""
        admin = self.session('admin')
        ks = url('keystone')

        def find_or_create(kind: str, body: dict, **query) -> str:
            found = admin.get('%s/%s' % (ks, kind), params=query or {
                'name': body['name']}).json()[kind]
            if found:
                return found[0]['id']
            return admin.post('%s/%s' % (ks, kind), json={
                kind[:-1]: body}).json()[kind[:-1]]['id']

        roles = {name: find_or_create('roles', {'name': name})
                 for name in ('admin', 'member', 'reader', 'service')}
        for user, (project, user_roles) in USERS.items():
            project_id = find_or_create('projects', {
                'name': project, 'domain_id': 'default'})
            user_id = find_or_create('users', {
                'name': user, 'domain_id': 'default',
                'password': password(user)})
            for role in user_roles:
                admin.put('%s/projects/%s/users/%s/roles/%s' % (
                    ks, project_id, user_id, roles[role]))
        catalog = {
            'compute': ('nova', url('nova')),
            'placement': ('placement', url('placement')),
            'image': ('glance', url('image')),
            'network': ('neutron', url('network')),
            'volumev3': ('cinderv3', url('volume') + '/%(project_id)s'),
            # The lease API in nova-api; Blazar's clients add /leases.
            'reservation': ('nova-reservation',
                            'http://%s:%d/reservation/v1'
                            % (HOST, PORTS['nova'])),
        }
        for kind, (name, endpoint) in catalog.items():
            service_id = find_or_create('services', {
                'name': name, 'type': kind}, type=kind)
            for interface in ('public', 'internal', 'admin'):
                found = admin.get(ks + '/endpoints', params=dict(
                    service_id=service_id,
                    interface=interface)).json()['endpoints']
                if not found:
                    admin.post(ks + '/endpoints', json={'endpoint': dict(
                        service_id=service_id, interface=interface,
                        url=endpoint, region_id=REGION)})
                elif found[0]['url'] != endpoint:
                    admin.patch('%s/endpoints/%s' % (ks, found[0]['id']),
                                json={'endpoint': {'url': endpoint}})

    # ------------------------------------------------- Neutron and Cinder
    def register_binding_driver(self) -> str:
        """Declare the binding driver's entry point; the directory to put
        on Neutron's import path.

        ML2 loads mechanism drivers by entry point only
        (``neutron.ml2.mechanism_drivers``).  The product's setup.cfg is
        no place for a test-only driver, and the virtual environment is
        shared with what else runs from it: the entry point is declared
        by a distribution's metadata (``*.dist-info/entry_points.txt``, as
        pip writes it) in a directory of the cloud's own, which only
        Neutron's processes have on their import path.
        """
        path = os.path.join(self.base, 'python')
        info = os.path.join(path, 'nrsv_localcloud_ml2-1.0.dist-info')
        os.makedirs(info, exist_ok=True)
        files = {
            'METADATA': 'Metadata-Version: 2.1\nName: nrsv-localcloud-ml2\n'
                        'Version: 1.0\n',
            'entry_points.txt': '[neutron.ml2.mechanism_drivers]\n'
                                'localcloud = %s.ml2_binding:BindingDriver\n'
                                % PACKAGE,
        }
        for name, text in files.items():
            with open(os.path.join(info, name), 'w') as f:
                f.write(text)
        return path

    def _neutron_env(self) -> dict:
        return dict(OS_NEUTRON_CONFIG_DIR=self.etc,
                    OS_NEUTRON_CONFIG_FILES='neutron.conf;ml2_conf.ini',
                    PYTHONPATH=self.register_binding_driver())

    def sync_neutron(self) -> None:
        os.makedirs(os.path.join(self.data, 'neutron', 'lock'),
                    exist_ok=True)
        self._setup(os.path.join(BIN, 'neutron-db-manage'), '--config-file',
                    os.path.join(self.etc, 'neutron.conf'), '--config-file',
                    os.path.join(self.etc, 'ml2_conf.ini'), 'upgrade',
                    'heads', env=self._neutron_env())

    def start_neutron(self) -> None:
        self._gunicorn('neutron', PACKAGE + '.neutron_wsgi:application',
                       PORTS['network'], self._neutron_env())

    def wait_neutron(self) -> None:
        admin = self.session('admin')
        _wait('Neutron', lambda: admin.get(
            url('network') + '/v2.0/networks').ok,
            alive=lambda: 'neutron' in self.running())

    def sync_cinder(self) -> None:
        os.makedirs(os.path.join(self.data, 'cinder', 'lock'),
                    exist_ok=True)
        self._setup(os.path.join(BIN, 'cinder-manage'), '--config-file',
                    os.path.join(self.etc, 'cinder.conf'), 'db', 'sync')

    def start_cinder(self) -> None:
        conf = os.path.join(self.etc, 'cinder.conf')
        self.start_cinder_api()
        for service in ('scheduler', 'volume'):
            self.start('cinder-' + service,
                       os.path.join(BIN, 'cinder-' + service),
                       '--config-file', conf)

    def start_cinder_api(self) -> None:
        self._gunicorn('cinder-api', PACKAGE + '.cinder_wsgi:application',
                       PORTS['volume'], dict(CINDER_CONFIG_FILE=os.path.join(
                           self.etc, 'cinder.conf')))

    def wait_cinder(self) -> None:
        """Until the API answers and the scheduler and the volume service
        are up.
        """
        admin = self.session('admin')
        services = admin.get_endpoint(service_type='volumev3',
                                      interface='public') + '/os-services'

        def up():
            found = admin.get(services).json()['services']
            return {s['binary'] for s in found if s['state'] == 'up'} >= {
                'cinder-scheduler', 'cinder-volume'}
        _wait('Cinder', up, timeout=180, alive=lambda: {
            'cinder-api', 'cinder-scheduler', 'cinder-volume'} <= set(
                self.running()))

    def create_networks(self) -> None:
        """The external network and each project's network, subnet and
        router (idempotent).

        A router for each project, as a project has it in production:
        its gateway on ``public``, an interface on the project's subnet;
        the project's floating IPs go through it.
        """
        admin = self.session('admin')
        api = url('network') + '/v2.0'
        ks = url('keystone')

        def find_or_create(kind: str, body: dict) -> dict:
            query = {k: body[k] for k in ('name', 'project_id')
                     if k in body}
            found = admin.get('%s/%ss' % (api, kind),
                              params=query).json()[kind + 's']
            if found:
                return found[0]
            return admin.post('%s/%ss' % (api, kind),
                              json={kind: body}).json()[kind]

        projects = {p['name']: p['id'] for p in admin.get(
            ks + '/projects').json()['projects']}
        public = find_or_create('network', {
            'name': PUBLIC['name'], 'project_id': projects['admin'],
            'router:external': True, 'provider:network_type': 'flat',
            'provider:physical_network': PUBLIC['name']})
        start, end = PUBLIC['pool']
        find_or_create('subnet', {
            'name': PUBLIC['name'] + '-subnet', 'project_id': projects[
                'admin'], 'network_id': public['id'], 'ip_version': 4,
            'cidr': PUBLIC['cidr'], 'gateway_ip': PUBLIC['gateway'],
            'enable_dhcp': False,
            'allocation_pools': [{'start': start, 'end': end}]})
        for project, cidr in PROJECT_NETWORKS.items():
            owner = projects[project]
            net = find_or_create('network', {
                'name': project + '-net', 'project_id': owner})
            subnet = find_or_create('subnet', {
                'name': project + '-subnet', 'project_id': owner,
                'network_id': net['id'], 'ip_version': 4, 'cidr': cidr})
            router = find_or_create('router', {
                'name': project + '-router', 'project_id': owner,
                'external_gateway_info': {'network_id': public['id']}})
            ports = admin.get(api + '/ports', params=dict(
                device_id=router['id'], network_id=net['id'])).json()[
                'ports']
            if not ports:
                admin.put('%s/routers/%s/add_router_interface' % (
                    api, router['id']), json={'subnet_id': subnet['id']})

    def start_glance(self) -> None:
        for d in ('images', 'staging', 'tasks', 'lock'):
            os.makedirs(os.path.join(self.data, 'glance', d), exist_ok=True)
        self._setup(os.path.join(BIN, 'glance-manage'), '--config-file',
                    os.path.join(self.etc, 'glance-api.conf'), 'db_sync')
        self._gunicorn('glance', 'glance.wsgi.api:application',
                       PORTS['image'], dict(OS_GLANCE_CONFIG_DIR=self.etc))
        _wait('Glance', lambda: _port_open(PORTS['image']),
              alive=lambda: 'glance' in self.running())

    def start_placement(self) -> None:
        env = dict(OS_PLACEMENT_CONFIG_DIR=self.etc)
        self._setup(os.path.join(BIN, 'placement-manage'), '--config-file',
                    os.path.join(self.etc, 'placement.conf'), 'db', 'sync',
                    env=env)
        self._gunicorn('placement', 'placement.wsgi.api:application',
                       PORTS['placement'], env)
        _wait('Placement', lambda: _port_open(PORTS['placement']),
              alive=lambda: 'placement' in self.running())

    def sync_nova(self, fresh: bool, cells: int = 1) -> None:
        manage = [os.path.join(BIN, 'nova-manage')] + self._nova_args()
        self._setup(*manage, 'api_db', 'sync')
        if fresh:
            self._setup(*manage, 'cell_v2', 'map_cell0',
                        '--database_connection', self.db_url('nova_cell0'))
            self._setup(*manage, 'cell_v2', 'create_cell', '--name', 'cell1')
        self._setup(*manage, 'db', 'sync')
        if cells > 1:
            if 'cell2' not in subprocess.run(
                    manage + ['cell_v2', 'list_cells'], capture_output=True,
                    text=True, env=_environ()).stdout:
                self._setup(*manage, 'cell_v2', 'create_cell', '--name',
                            'cell2', '--database_connection',
                            self.db_url('nova_cell2'), '--transport-url',
                            CELL2_RABBIT)
            self._setup(*manage, *self._cell2_args(), 'db', 'sync')
        self._setup(os.path.join(BIN, 'nova-reservation-manage'),
                    *self._nova_args(), 'db', 'sync')

    def start_nova_api(self, controller: int = 1) -> None:
        """A controller's nova-api: the one on PORTS['nova'], or with
        several controllers, each behind HAProxy with workers of its own.
        """
        several = self.state['controllers'] > 1
        self._gunicorn(
            'nova-api%s' % ('' if controller == 1 else controller),
            PACKAGE + '.nova_api_wsgi:application',
            CONTROLLER_PORTS[controller] if several else PORTS['nova'],
            dict(OS_NOVA_CONFIG_DIR=self.etc,
                 OS_NOVA_CONFIG_FILES='api-paste.ini;nova.conf;nova-db.conf'
                 + ('' if controller == 1 else ';nova-controller2.conf')),
            workers=2 if several else 1)

    def wait_nova_api(self) -> None:
        admin = self.session('admin')
        _wait('nova-api', lambda: admin.get(url('nova') + '/flavors').ok,
              alive=lambda: 'nova-api' in self.running())

    def start_nova(self, computes: int, cells: int = 1) -> None:
        controllers = self.state['controllers']
        if controllers > 1:
            self.start_api_proxy()
        for controller in range(1, controllers + 1):
            self.start_nova_api(controller)
            # Each controller's conductor and scheduler.
            for service in ('conductor', 'scheduler'):
                self.start('nova-%s%s' % (service, '' if controller == 1
                                          else controller),
                           os.path.join(BIN, 'nova-' + service),
                           *self._nova_args(), *self._controller_args(
                               controller))
        if cells > 1:
            self.start('nova-conductor-cell2',
                       os.path.join(BIN, 'nova-conductor'),
                       *self._nova_args(), *self._cell2_args())
        for lane in range(self.lanes):
            for i in range(1, computes + 1):
                self.start_compute(i, lane, cells)
        nodes = computes * self.lanes
        if self.state.get('baremetal'):
            for lane in range(self.lanes):
                self.start_baremetal(lane)
            nodes += len(baremetal.NODES) * self.lanes
        self.wait_nova_api()
        admin = self.session('admin')
        placement = url('placement')
        # Root providers: a node's physical GPUs are providers too.
        _wait('%d compute nodes in Placement' % nodes, lambda: len([
            rp for rp in admin.get(placement + '/resource_providers', headers={
                'OpenStack-API-Version': 'placement 1.14'}).json()[
                'resource_providers']
            if rp['uuid'] == rp['root_provider_uuid']]) >= nodes,
            timeout=180)
        self._setup(os.path.join(BIN, 'nova-manage'), *self._nova_args(),
                    'cell_v2', 'discover_hosts')

        def services_up():
            services = admin.get(url('nova') + '/os-services').json()[
                'services']
            up = [s for s in services if s['state'] == 'up']
            return len(up) >= (2 * controllers + cells - 1 + self.lanes * (
                computes + bool(self.state.get('baremetal'))))
        _wait('Nova services up', services_up, timeout=180)
        _wait('the hypervisors', lambda: len(admin.get(
            url('nova') + '/os-hypervisors').json()['hypervisors']
        ) >= nodes)

    def start_compute(self, number: int, lane: int, cells: int) -> None:
        """Lane `lane`'s nova-compute `number` (from 1), serving one node
        named as it; every second one is cell2's (with two cells).
        """
        host = lanes.node('compute%d' % number, lane, self.lanes)
        state = os.path.join(self.data, host)
        os.makedirs(state, exist_ok=True)
        options: dict = {}
        inventories: dict = {}
        if self.state.get('accelerators'):
            options, inventories = accelerators.of_compute(number)
        sections = self._node_sections(host, state, lane, inventories)
        if self.state.get('accelerators'):
            sections['DEFAULT']['compute_driver'] = accelerators.DRIVER
            sections[accelerators.DRIVER_GROUP] = {
                k: str(v) for k, v in options.items()}
        self._write_ini(host + '.conf', sections)
        in_cell2 = cells > 1 and number % 2 == 0
        self.start('nova-' + host, sys.executable, '-m',
                   PACKAGE + '.nova_compute', *self._nova_args(db=False),
                   *(self._cell2_args(db=False) if in_cell2 else []),
                   '--config-file', os.path.join(self.etc, host + '.conf'))

    def start_baremetal(self, lane: int = 0) -> None:
        """Lane `lane`'s nova-compute (in cell1) that serves the bare-metal
        nodes, as Ironic's does, each reporting its class and trait as
        Ironic's driver does (``up --baremetal``).
        """
        host = lanes.node(baremetal.SERVICE, lane, self.lanes)
        state = os.path.join(self.data, host)
        os.makedirs(state, exist_ok=True)
        sections = self._node_sections(host, state, lane, {})
        sections['DEFAULT']['compute_driver'] = baremetal.DRIVER
        sections[baremetal.DRIVER_GROUP] = baremetal.options(
            lambda node: lanes.node(node, lane, self.lanes))
        self._write_ini(host + '.conf', sections)
        self.start('nova-' + host, sys.executable, '-m',
                   PACKAGE + '.nova_compute', *self._nova_args(db=False),
                   '--config-file', os.path.join(self.etc, host + '.conf'))

    def _node_sections(self, host: str, state: str, lane: int,
                       inventories: dict) -> dict:
        """The sections of a nova-compute's own configuration: its host
        and state, and a provider config file with the custom
        `inventories` of its nodes and their lane's trait, if any.
        """
        sections = {'DEFAULT': dict(
            host=host, state_path=state,
            instances_path=os.path.join(state, 'instances'))}
        lane_trait = lanes.trait(lane, self.lanes)
        if inventories or lane_trait:
            location = os.path.join(state, 'provider_config')
            os.makedirs(location, exist_ok=True)
            with open(os.path.join(location, 'devices.yaml'), 'w') as f:
                f.write(accelerators.provider_config(
                    inventories, (lane_trait,) if lane_trait else ()))
            sections['compute'] = dict(provider_config_location=location)
        return sections

    def start_engines(self, engines: int) -> None:
        """Start the engines; ready once each says it runs its events
        (an engine that dies at start-up fails `up`).
        """
        names = ['engine%d' % i for i in range(1, engines + 1)]
        logs = {n: os.path.join(self.logs, n + '.log') for n in names}
        seen = {n: os.path.getsize(logs[n]) if os.path.exists(logs[n])
                else 0 for n in names}
        pids = {name: self.start(
            name, os.path.join(BIN, 'nova-reservation-engine'),
            *self._nova_args()) for name in names}

        def running(name: str) -> bool:
            with open(logs[name], 'rb') as f:
                f.seek(seen[name])
                return b' running' in f.read()

        def alive(pid: int) -> bool:
            # Our child: a dead one is a zombie until reaped here.
            try:
                return os.waitpid(pid, os.WNOHANG)[0] == 0
            except ChildProcessError:
                return False

        for name in names:
            _wait(name, functools.partial(running, name),
                  alive=functools.partial(alive, pids[name]))

    def create_resources(self) -> None:
        """Flavors, the image and the freepool aggregate (idempotent)."""
        admin = self.session('admin')
        nova = url('nova')
        have = {f['name'] for f in admin.get(nova + '/flavors').json()[
            'flavors']}
        flavors = {name: (*size, {}) for name, size in FLAVORS.items()}
        if self.state.get('accelerators'):
            flavors.update(accelerators.FLAVORS)
        if self.state.get('baremetal'):
            flavors.update(baremetal.FLAVORS)
        if self.lanes > 1:
            # Each lane's copy of each flavor asks for the lane's nodes.
            flavors.update({
                lanes.flavor(name, lane, self.lanes): (
                    *size, dict(specs, **lanes.extra_specs(lane, self.lanes)))
                for name, (*size, specs) in list(flavors.items())
                for lane in range(self.lanes)})
        for name, (vcpus, ram, disk, specs) in flavors.items():
            if name in have:
                continue
            made = admin.post(nova + '/flavors', json={'flavor': dict(
                name=name, vcpus=vcpus, ram=ram, disk=disk)}).json()
            if specs:
                admin.post('%s/flavors/%s/os-extra_specs' % (
                    nova, made['flavor']['id']), json={'extra_specs': specs})
        image = url('image') + '/v2/images'
        if not admin.get(image, params={'name': IMAGE}).json()['images']:
            made = admin.post(image, json=dict(
                name=IMAGE, visibility='public', container_format='bare',
                disk_format='raw', min_disk=0, min_ram=0)).json()
            admin.put('%s/%s/file' % (image, made['id']),
                      data=b'The fake compute driver never reads image data.',
                      headers={'Content-Type': 'application/octet-stream'})
        aggregates = admin.get(nova + '/os-aggregates').json()['aggregates']
        if 'freepool' not in {a['name'] for a in aggregates}:
            admin.post(nova + '/os-aggregates', json={
                'aggregate': {'name': 'freepool'}})

    # ---------------------------------------------------------- dashboard
    def _horizon_env(self) -> dict:
        return dict(DJANGO_SETTINGS_MODULE=PACKAGE + '.horizon_settings',
                    LOCALCLOUD_DIR=self.base)

    def build_horizon(self) -> None:
        """Horizon's static files, collected and compressed (offline, as
        in production): once for the installed packages (Horizon,
        blazar-dashboard, the XStatic ones) and these settings, not at
        every `up`.
        """
        for d in (os.path.dirname(self.horizon_secret),
                  self.horizon_sessions):
            os.makedirs(d, exist_ok=True)
        stamp = os.path.join(self.horizon_static, '.built')
        digest = hashlib.sha256()
        with open(os.path.join(os.path.dirname(__file__),
                               'horizon_settings.py'), 'rb') as f:
            digest.update(f.read())
        digest.update(json.dumps(sorted(
            '%s %s' % (d.metadata['Name'], d.version)
            for d in metadata.distributions())).encode())
        built = digest.hexdigest()
        if os.path.exists(stamp):
            with open(stamp) as f:
                if f.read() == built:
                    return
        shutil.rmtree(self.horizon_static, ignore_errors=True)
        django = [sys.executable, '-m', 'django']
        self._setup(*django, 'collectstatic', '--noinput',
                    env=self._horizon_env())
        self._setup(*django, 'compress', '--force', env=self._horizon_env())
        with open(stamp, 'w') as f:
            f.write(built)

    def start_horizon(self) -> None:
        self._gunicorn('horizon', 'django.core.wsgi:get_wsgi_application()',
                       PORTS['dashboard'], self._horizon_env())
        login = url('dashboard') + '/auth/login/'
        _wait('Horizon', lambda: ks_session.Session().get(
            login, raise_exc=False).status_code == 200,
            alive=lambda: 'horizon' in self.running())

    # ------------------------------------------------------------ commands
    def up(self, engines: int = 1, computes: int = 3,
           fresh: bool = False, cells: int = 1, controllers: int = 1,
           galera: int = 1, accelerators: bool = False,
           baremetal: bool = False, lanes: int = 1) -> None:
        if self.running():
            raise SystemExit('the local cloud runs already (%s): '
                             'tools/localcloud down first'
                             % ', '.join(self.running()))
        fresh = fresh or not os.path.exists(os.path.join(self.base,
                                                         'state.json'))
        if fresh:
            shutil.rmtree(self.logs, ignore_errors=True)
            for d in os.listdir(self.data) if os.path.isdir(
                    self.data) else ():
                if os.path.join(self.data, d) != self.horizon_static:
                    shutil.rmtree(os.path.join(self.data, d))
        for d in (self.etc, self.data, self.logs, self.run_dir):
            os.makedirs(d, exist_ok=True)
        self.state = dict(engines=engines, computes=computes, cells=cells,
                          controllers=controllers, galera=galera,
                          accelerators=accelerators, baremetal=baremetal,
                          lanes=lanes)
        steps = [
            ('database server%s' % (
                ' (a Galera cluster of 3 behind HAProxy)' if galera > 1
                else ''), lambda: self.ensure_database_server(fresh)),
            ('databases', lambda: self.create_databases(fresh)),
            ('RabbitMQ', self.ensure_rabbitmq),
            ('configuration', self.write_config),
            # Their databases and processes need neither Keystone nor
            # Nova: they are set up and started while those start, and
            # waited for where they are first needed.
            ('Neutron and Cinder: databases and processes started in the '
             'background', lambda: background.update(
                 neutron=_Background(self.sync_neutron, self.start_neutron),
                 cinder=_Background(self.sync_cinder, self.start_cinder))),
            ('Keystone', lambda: self.start_keystone(fresh)),
            ('users, projects and catalog', self.create_identities),
            ('Glance', self.start_glance),
            ('Placement', self.start_placement),
            ('Nova databases', lambda: self.sync_nova(fresh, cells)),
            ('Nova', lambda: self.start_nova(computes, cells)),

            ('networks and routers: made in the background',
             lambda: background.update(networks=_Background(
                 background['neutron'].result, self.wait_neutron,
                 self.create_networks))),
            ('dashboard static files', self.build_horizon),
            ('dashboard', self.start_horizon),
            ('flavors, image, freepool', self.create_resources),
            ('Neutron, networks and routers',
             lambda: background['networks'].result()),
            ('Cinder', lambda: background['cinder'].result() or
             self.wait_cinder()),
            ('%d engine(s)' % engines, lambda: self.start_engines(engines)),
        ]
        background: dict = {}
        t0 = time.time()
        for name, step in steps:
            try:
                step()
            except (subprocess.CalledProcessError, RuntimeError,
                    ks_exceptions.ClientException) as e:
                print('local cloud: %s failed: %s (logs in %s)'
                      % (name, e, self.logs), file=sys.stderr)
                raise SystemExit(1)
            print('[%5.1fs] %s%s' % (time.time() - t0, name, '' if (
                'background' in name) else ' ready'), file=sys.stderr)
        with open(os.path.join(self.base, 'state.json'), 'w') as f:
            json.dump(dict(self.state, ports=PORTS, vhost=VHOST,
                           databases=DATABASES, db_port=self.db_port), f)

    def down(self) -> None:
        names = self.running()
        # The dashboard, the engines and Nova first, Keystone last.
        first = [n for n in names
                 if n.startswith(('horizon', 'engine', 'nova'))]
        # The database cluster after every process that uses it, and
        # HAProxy in front of it just before.
        last = [n for n in names if n == 'keystone']
        self.stop_all(first)
        self.stop_all([n for n in names if n not in first + last and
                       not n.startswith(('galera', 'haproxy'))])
        self.stop_all(last + ['haproxy', 'haproxy-db'])
        self.cluster.stop_nodes()
        if os.path.isdir(self.run_dir):
            for f in os.listdir(self.run_dir):
                os.unlink(os.path.join(self.run_dir, f))

    def status(self) -> str:
        """The running processes, and where the dashboard is."""
        names = self.running()
        if not names:
            return 'not running'
        lines = names[:]
        if 'horizon' in names:
            lines.append('dashboard: %s/ (admin, alice or bob, password '
                         '<name>-secret)' % url('dashboard'))
        return '\n'.join(lines)

    def env(self, user: str) -> str:
        """Shell exports for the nova and openstack CLIs as `user`."""
        return ''.join('export %s=%s\n' % (name, shlex.quote(value))
                       for name, value in self.variables(user).items())

    def variables(self, user: str) -> dict:
        """The OS_* variables of `user` (admin, alice or bob)."""
        if user not in ('admin', 'alice', 'bob'):
            raise SystemExit('no user %r: admin, alice or bob' % user)
        return dict(
            OS_AUTH_URL=url('keystone'), OS_AUTH_TYPE='password',
            OS_IDENTITY_API_VERSION='3', OS_USERNAME=user,
            OS_PASSWORD=password(user), OS_PROJECT_NAME=USERS[user][0],
            OS_USER_DOMAIN_NAME='Default', OS_PROJECT_DOMAIN_NAME='Default',
            OS_REGION_NAME=REGION, OS_INTERFACE='public',
            OS_COMPUTE_API_VERSION='2.latest',
            PATH='%s:%s' % (BIN, os.environ.get('PATH', '')))


class _Background(threading.Thread):
    """Steps run one after the other in a thread of their own, from
    now; `result` waits for them and raises what one raised.
    """

    def __init__(self, *steps) -> None:
        super().__init__(daemon=True)
        self.steps = steps
        self.error: Optional[Exception] = None
        self.start()

    def run(self) -> None:
        try:
            for step in self.steps:
                step()
        except Exception as e:
            self.error = e

    def result(self) -> None:
        self.join()
        if self.error is not None:
            raise self.error


def _group_alive(pid: int) -> bool:
    # A process this one started (a node started again by a test) stays a
    # zombie, and its group alive, until it is reaped here.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.killpg(pid, 0)
        return True
    except ProcessLookupError:
        return False
