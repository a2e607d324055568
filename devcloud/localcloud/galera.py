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

"""The local cloud's database cluster (``up --galera 3``) and the HAProxy
in front of it and of the controllers' nova-api (``--controllers 2``).

Three MariaDB Galera nodes on loopback, each a process of the cloud
(``galera1``..``galera3``), state in data/galera; HAProxy sends every
database connection of the cloud to one of them (the others are backups,
as Kolla-Ansible and OpenStack-Ansible run it) or, with `writers` "all", to
each in turn (multi-writer).  HAProxy also spreads the compute API over
the controllers' nova-api processes.
"""

import os
import shutil
import socket
import subprocess
import time
from typing import Callable, Optional

import pymysql

from devcloud.localcloud import debian
from devcloud import mariadb

HOST = '127.0.0.1'
NODES = 3
# The cluster's address for the cloud (HAProxy) and each node's.
PORT = 13300
SQL_PORTS = {n: 13300 + n for n in range(1, NODES + 1)}
# Galera's group communication, incremental and snapshot transfers.
GCOMM_PORTS = {n: 14560 + n for n in range(1, NODES + 1)}
IST_PORTS = {n: 14570 + n for n in range(1, NODES + 1)}
SST_PORTS = {n: 14580 + n for n in range(1, NODES + 1)}
PROVIDER = '/usr/lib/galera/libgalera_smm.so'
CLUSTER = 'nrsv_localcloud'
# Every process of the cloud keeps a pool of connections to each database
# it uses.
MAX_CONNECTIONS = 1000
# The user of HAProxy's health check (no password: it only logs in).
CHECK_USER = 'haproxy'


def name(node: int) -> str:
    return 'galera%d' % node


class Cluster:
    """The Galera nodes and the HAProxy of a local cloud.

    `start(name, *cmd)` and `stop(name)` are the cloud's: each node and
    HAProxy is one of its processes, stopped by `down` with the others.
    """

    def __init__(self, data: str, etc: str, logs: str, start: Callable,
                 stop: Callable, running: Callable) -> None:
        self.dir = os.path.join(data, 'galera')
        self.etc = etc
        self.logs = logs
        self._start = start
        self._stop = stop
        self._running = running
        self.haproxy_socket = os.path.join(self.dir, 'haproxy-db.sock')

    # ------------------------------------------------------------ nodes
    def datadir(self, node: int) -> str:
        return os.path.join(self.dir, 'node%d' % node)

    def socket(self, node: int) -> str:
        return os.path.join(self.dir, 'node%d.sock' % node)

    def _config(self, node: int) -> str:
        path = os.path.join(self.etc, 'galera%d.cnf' % node)
        members = ','.join('%s:%d' % (HOST, p) for p in GCOMM_PORTS.values())
        options = ';'.join((
            'gmcast.listen_addr=tcp://%s:%d' % (HOST, GCOMM_PORTS[node]),
            'ist.recv_addr=%s:%d' % (HOST, IST_PORTS[node]),
            'gcache.size=64M',
            # A node that is gone is noticed within seconds.
            'evs.suspect_timeout=PT3S', 'evs.inactive_timeout=PT6S',
            'pc.wait_prim_timeout=PT10S'))
        settings = dict(
            user='mysql', datadir=self.datadir(node),
            socket=self.socket(node),
            pid_file=os.path.join(self.dir, 'node%d.pid' % node),
            port=SQL_PORTS[node], bind_address=HOST, skip_name_resolve='ON',
            character_set_server='utf8mb4',
            collation_server='utf8mb4_general_ci',
            max_connections=MAX_CONNECTIONS,
            innodb_buffer_pool_size='64M', innodb_log_file_size='16M',
            # A cloud for tests: durability comes from the other nodes.
            innodb_flush_log_at_trx_commit=0, sync_binlog=0,
            binlog_format='ROW', default_storage_engine='InnoDB',
            innodb_autoinc_lock_mode=2,
            wsrep_on='ON', wsrep_provider=PROVIDER,
            wsrep_cluster_name=CLUSTER,
            wsrep_cluster_address='gcomm://' + members,
            wsrep_node_name=name(node),
            wsrep_node_address='%s:%d' % (HOST, GCOMM_PORTS[node]),
            wsrep_provider_options='"%s"' % options,
            wsrep_sst_method='rsync',
            wsrep_sst_receive_address='%s:%d' % (HOST, SST_PORTS[node]),
            wsrep_slave_threads=2,
            # Reads wait for the writes the cluster has committed: with
            # writes sent to every node, a service reads what it has just
            # written through another connection (Nova does).
            wsrep_sync_wait=1)
        with open(path, 'w') as f:
            f.write('[mysqld]\n' + ''.join(
                '%s = %s\n' % (k.replace('_', '-'), v)
                for k, v in settings.items()))
        return path

    def start_node(self, node: int, bootstrap: bool = False) -> None:
        """Start a node (it joins the cluster, or founds it) and wait
        until it is synced.
        """
        os.makedirs(self.datadir(node), exist_ok=True)
        shutil.chown(self.datadir(node), 'mysql', 'mysql')
        args = ['--defaults-file=' + self._config(node)]
        if bootstrap:
            args.append('--wsrep-new-cluster')
        self._start(name(node), '/usr/sbin/mariadbd', *args)
        _wait('%s synced' % name(node), lambda: self.state(node) == 'Synced',
              alive=lambda: name(node) in self._running(), timeout=180)

    def state(self, node: int) -> Optional[str]:
        """The node's wsrep_local_state_comment ("Synced", ...), or None
        if it does not answer.
        """
        try:
            conn = pymysql.connect(unix_socket=self.socket(node),
                                   user='root', connect_timeout=2,
                                   **mariadb.CONNECT)
        except pymysql.err.MySQLError:
            return None
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW STATUS LIKE 'wsrep_local_state_comment'")
                row = cur.fetchone()
                return row[1] if row else None
        finally:
            conn.close()

    def sql(self, *statements: str) -> None:
        """Run statements as root on a node that is synced."""
        node = next(n for n in range(1, NODES + 1)
                    if name(n) in self._running() and
                    self.state(n) == 'Synced')
        run_sql(statements, unix_socket=self.socket(node), user='root')

    def up(self, fresh: bool) -> None:
        """Found the cluster on one node, then let the others join."""
        _ensure_installed()
        if fresh:
            shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir, exist_ok=True)
        shutil.chown(self.dir, 'mysql', 'mysql')
        if not os.path.isdir(os.path.join(self.datadir(1), 'mysql')):
            for node in range(1, NODES + 1):
                shutil.rmtree(self.datadir(node), ignore_errors=True)
            with open(os.path.join(self.logs, 'setup.log'), 'ab') as log:
                subprocess.run(
                    ['mariadb-install-db',
                     '--defaults-file=' + self._config(1),
                     '--auth-root-authentication-method=socket',
                     '--skip-test-db'], check=True, stdout=log,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            first = 1
        else:
            first = self._safe_to_bootstrap()
        self.start_node(first, bootstrap=True)
        self.sql("CREATE USER IF NOT EXISTS '%s'@'%s'" % (CHECK_USER, HOST))
        for node in range(1, NODES + 1):
            if node != first:
                self.start_node(node)

    def _safe_to_bootstrap(self) -> int:
        """The node to found the cluster again from: the one Galera marks
        safe (the last to stop); node 1 if none is (all were killed: a
        test cloud may lose the last writes).
        """
        for node in range(1, NODES + 1):
            path = os.path.join(self.datadir(node), 'grastate.dat')
            if os.path.exists(path):
                with open(path) as f:
                    if 'safe_to_bootstrap: 1' in f.read():
                        return node
        path = os.path.join(self.datadir(1), 'grastate.dat')
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            with open(path, 'w') as f:
                f.write(text.replace('safe_to_bootstrap: 0',
                                     'safe_to_bootstrap: 1'))
        return 1

    def stop_nodes(self) -> None:
        """The last node stopped is the one to found the cluster again."""
        for node in range(NODES, 0, -1):
            self._stop(name(node), timeout=60)

    def writer(self) -> Optional[int]:
        """The node HAProxy sends connections to now (single writer)."""
        for line in self.haproxy('show servers state galera').splitlines():
            fields = line.split()
            # srv_op_state 2: running; the first running non-backup, else
            # the first running backup, is the one in use.
            if len(fields) > 5 and fields[3].startswith('node') and \
                    fields[5] == '2':
                return int(fields[3][4:])
        return None

    def rejoin(self, node: int) -> None:
        """Start a node that stopped (or was killed) again; HAProxy sends
        it nothing until it has caught up with the cluster.
        """
        server = 'galera/node%d' % node
        self.haproxy('disable server ' + server)
        self.start_node(node)
        self.haproxy('enable server ' + server)

    def serving(self) -> list:
        """The nodes HAProxy has sent connections to since it started."""
        found = []
        for line in self.haproxy('show stat').splitlines():
            fields = line.split(',')
            # pxname, svname, ..., stot (the 8th field): sessions so far.
            if fields[0] == 'galera' and fields[1].startswith('node') and \
                    int(fields[7] or 0) > 0:
                found.append(int(fields[1][4:]))
        return found

    # ----------------------------------------------------------- HAProxy
    def write_haproxy(self, writers: str = 'one') -> str:
        """The configuration of the database cluster's HAProxy, on PORT:
        one writer and two backups, or (`writers` "all") each node in turn.
        """
        check = ('check inter 1s fall 2 rise 3 on-marked-down '
                 'shutdown-sessions')
        lines = _proxy_head(self.haproxy_socket) + [
            # Pooled database connections stay idle for long.
            '  timeout client 2h', '  timeout server 2h',
            'listen galera', '  bind %s:%d' % (HOST, PORT),
            '  option mysql-check user %s post-41' % CHECK_USER,
            '  balance %s' % ('roundrobin' if writers == 'all' else 'first')]
        for node in range(1, NODES + 1):
            backup = ' backup' if writers != 'all' and node > 1 else ''
            lines.append('  server node%d %s:%d %s%s' % (
                node, HOST, SQL_PORTS[node], check, backup))
        return self._write('haproxy-db.cfg', lines)

    def write_api_proxy(self, controllers: dict, port: int) -> str:
        """The configuration of the controllers' HAProxy: the compute API
        on `port`, each of `controllers` ({name: port}) in turn.
        """
        lines = _proxy_head(os.path.join(self.dir, 'haproxy-api.sock')) + [
            '  timeout client 2m', '  timeout server 2m',
            'listen nova-api', '  bind %s:%d' % (HOST, port),
            '  balance roundrobin']
        lines += ['  server %s %s:%d check inter 1s fall 2 rise 2'
                  % (n, HOST, p) for n, p in controllers.items()]
        return self._write('haproxy-api.cfg', lines)

    def _write(self, name: str, lines: list) -> str:
        path = os.path.join(self.etc, name)
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        return path

    def start_haproxy(self, process: str, config: str, port: int) -> None:
        """Start an HAProxy; ready once it answers on `port`."""
        os.makedirs(self.dir, exist_ok=True)
        self._start(process, 'haproxy', '-db', '-f', config)
        _wait(process, lambda: _port_open(port),
              alive=lambda: process in self._running())

    def haproxy(self, command: str) -> str:
        """A command of HAProxy's runtime API; its answer."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.haproxy_socket)
            s.sendall(command.encode() + b'\n')
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b''.join(chunks).decode()


def run_sql(statements, **connect) -> None:
    """Run statements in autocommit, connected with `connect`
    (pymysql.connect's arguments).
    """
    conn = pymysql.connect(autocommit=True, **connect, **mariadb.CONNECT)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _proxy_head(admin_socket: str) -> list:
    return ['global', '  maxconn 4000',
            '  stats socket %s mode 600 level admin' % admin_socket,
            'defaults', '  mode tcp', '  timeout connect 3s']


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((HOST, port)) == 0


def _wait(what: str, check: Callable, timeout: float = 120,
          alive: Callable = lambda: True) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not alive():
            raise RuntimeError('%s: the process died' % what)
        if check():
            return
        time.sleep(0.5)
    raise RuntimeError('timed out waiting for %s' % what)


def _ensure_installed() -> None:
    """Galera's provider, rsync (its snapshot transfer) and HAProxy, from
    Debian where missing.
    """
    missing = [package for package, present in (
        ('galera-4', os.path.exists(PROVIDER)),
        ('rsync', shutil.which('rsync')),
        ('haproxy', shutil.which('haproxy'))) if not present]
    if missing:
        debian.install(*missing)
