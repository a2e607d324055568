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

"""The cloud as big clouds run it (``tools/localcloud up --cells 2
--controllers 2 --galera 3``): leases made and changed through both
controllers' nova-api, ordinary boots and due events, while the Galera node
that HAProxy sends writes to is killed (``kill -9``), or while writes go to
every node at once.  No answer is a 500; a request that met the failure is
a 503 that says to try again; afterwards no lease is lost or half-written,
no node is promised more than it has at any instant seen, every event has
run once and in order, and nothing is stuck.
"""

import datetime
import sys
import threading
import time
import traceback

import pymysql
import testtools

from devcloud.localcloud import cloud
from devcloud.localcloud import galera
from devcloud import mariadb
from nova_reservation.tests.integration import base

# Each controller's lease API, reached without HAProxy.
CONTROLLERS = ['http://%s:%d/reservation/v1/leases' % (cloud.HOST, port)
               for port in cloud.CONTROLLER_PORTS.values()]
# And their compute API.
NOVA = ['http://%s:%d/v2.1' % (cloud.HOST, port)
        for port in cloud.CONTROLLER_PORTS.values()]
WRITERS = 4
# Seconds of load before the fault (it meets the first boots and leases
# in flight), and after it.
BEFORE, AFTER = 3.5, 20
RESERVATION = dict(resource_type='virtual:instance', vcpus=1,
                   memory_mb=512, disk_gb=1, amount=1, affinity=None)


def _date(seconds: float) -> str:
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(seconds=seconds)).strftime(
        '%Y-%m-%d %H:%M:%S')


class ClusterTest(base.CloudTestCase):

    def setUp(self) -> None:
        super().setUp()
        state = base.CLOUD.state
        if state['galera'] < 3 or state['controllers'] < 2:
            self.skipTest('the local cloud is not up with --controllers 2 '
                          '--galera 3')
        self.answers: list = []   # (what, status code or exception)
        self.created: dict = {}   # lease id: name
        self.overbooked: list = []
        self.stop = threading.Event()
        self.image = self.openstack('alice', 'image', 'show', 'cirros')['id']
        self.flavor_id = self.openstack('alice', 'flavor', 'show',
                                        self.flavor('m1.tiny'))['id']

    # ------------------------------------------------------------ load
    def _answer(self, what: str, call) -> object:
        try:
            resp = call()
        except Exception as e:   # no answer at all: counted as a failure
            self.answers.append((what, type(e).__name__, str(e)[:200]))
            return None
        self.answers.append((what, resp.status_code, resp.text[:2000]))
        return resp

    def _leases(self, worker: int) -> None:
        """Create a lease that starts and ends within the scenario (its
        events are due during it), then extend it, through each
        controller in turn.
        """
        session = base.CLOUD.session('alice')
        i = 0
        while not self.stop.is_set():
            api = CONTROLLERS[(worker + i) % len(CONTROLLERS)]
            name = 'cluster-%d-%d-%s' % (worker, i, self.suffix)
            i += 1
            resp = self._answer('create', lambda: session.post(
                api, json=dict(name=name, start_date=_date(10 + worker),
                               end_date=_date(25 + worker), events=[],
                               reservations=[RESERVATION]),
                raise_exc=False, timeout=120))
            if resp is None or resp.status_code != 201:
                time.sleep(0.5)
                continue
            lease_id = resp.json()['lease']['id']
            self.created[lease_id] = name
            other = CONTROLLERS[(worker + i) % len(CONTROLLERS)]
            self._answer('update', lambda: session.put(
                '%s/%s' % (other, lease_id),
                json=dict(end_date=_date(30 + worker)),
                raise_exc=False, timeout=120))

    def _boots(self, controller: int) -> None:
        """Ordinary boots (no hint) through one controller's nova-api,
        one a second, each deleted: with the other controller's, two
        boots are often scheduled at once by the two schedulers.
        """
        session = base.CLOUD.session('alice')
        servers = NOVA[controller] + '/servers'
        i = 0
        while not self.stop.is_set():
            i += 1
            resp = self._answer('boot', lambda: session.post(
                servers, json={'server': dict(
                    name='cluster-boot-%d-%d-%s' % (controller, i,
                                                    self.suffix),
                    flavorRef=self.flavor_id, imageRef=self.image,
                    networks='auto')},
                headers={'OpenStack-API-Version': 'compute 2.91'},
                raise_exc=False, timeout=120))
            if resp is not None and resp.status_code == 202:
                self.addCleanup(self.delete_server,
                                resp.json()['server']['id'])
            time.sleep(1)

    def _watch(self) -> None:
        """The ledger's promises against the nodes, every few seconds:
        those made (the leases answered), not those of leases being
        written (an ordinary boot in flight may take what one was given,
        and it is then refused).
        """
        def pending(lease: dict) -> bool:
            return lease['name'].startswith('cluster-') and \
                lease['id'] not in self.created
        while not self.stop.wait(3):
            try:
                found = self.violations(pending)
            except Exception:
                continue   # the store or an API is between two nodes
            self.overbooked += [v for v in found if ' is promised ' in v and
                                v not in self.earlier]

    def load(self, fault) -> None:
        """The load, `fault()` after BEFORE seconds of it, AFTER more."""
        threads = [threading.Thread(target=self._leases, args=(w,),
                                    daemon=True) for w in range(WRITERS)]
        threads += [threading.Thread(target=self._boots, args=(c,),
                                     daemon=True)
                    for c in range(len(NOVA))]
        threads.append(threading.Thread(target=self._watch, daemon=True))
        for t in threads:
            t.start()
        try:
            time.sleep(BEFORE)
            fault()
            time.sleep(AFTER)
        finally:
            self.stop.set()
            for t in threads:
                t.join(timeout=300)
        self.addCleanup(self.remove_leases)
        stuck = [t for t in threads if t.is_alive()]
        if stuck:
            frames = sys._current_frames()
            self.fail('requests that never ended: %s' % '\n'.join(
                ''.join(traceback.format_stack(frames[t.ident]))
                for t in stuck))

    def remove_leases(self) -> None:
        for lease_id in self.created:
            self.delete_lease(lease_id)

    # -------------------------------------------------------- checks
    def check(self) -> None:
        self.addDetail('answers', testtools.content.text_content(
            '\n'.join(repr(a) for a in self.answers)))
        codes = [a[1] for a in self.answers]
        # A lease API request that met the failure says to try again.
        failed = [a for a in self.answers if not isinstance(a[1], int) or
                  a[1] >= 500 and not (a[1] == 503 and 'try again' in a[2])]
        self.assertEqual([], failed)
        self.assertGreater(codes.count(201), 0, self.answers)
        # What a request cut short left being created is repaired by the
        # reconciler; then each lease answered 201 is there whole, and a
        # lease the answer of which was lost (a 503 after its commit) is
        # there whole too.
        self.wait_for('no lease left being created', lambda: all(
            r['status'] != 'CREATING' for r in self.leases().values()),
            timeout=150, interval=5)
        found = self.leases()
        self.addDetail('leases', testtools.content.text_content(
            repr(found)))
        self.assertEqual([], [i for i in self.created if i not in found])
        unanswered = set(found) - set(self.created)
        self.assertLessEqual(len(unanswered), sum(
            1 for a in self.answers if a[0] == 'create' and a[1] == 503))
        self.assertEqual([], [r for r in found.values()
                              if r['reservations'] != 1])
        self.assertEqual([], self.overbooked)
        # Every event due has run (the leases end within the scenario).
        self.wait_for('every lease to end', lambda: all(
            r['status'] == 'TERMINATED' for r in self.leases().values()),
            timeout=180, interval=5)

    def leases(self) -> dict:
        """{id: row} of the scenario's leases that are not deleted, each
        with the count of its reservations.
        """
        return {r['id']: r for r in self.store(
            'SELECT l.id, l.status, COUNT(r.id) AS reservations FROM '
            'rsv_leases l LEFT JOIN rsv_reservations r ON r.lease_id = l.id '
            "WHERE l.name LIKE %s AND l.status != 'DELETED' "
            'GROUP BY l.id, l.status', 'cluster-%%-' + self.suffix)}

    def cluster_status(self, variable: str) -> int:
        """A Galera status counter, summed over the running nodes."""
        total = 0
        for node in range(1, galera.NODES + 1):
            if galera.name(node) not in base.CLOUD.running():
                continue
            conn = pymysql.connect(unix_socket=base.CLOUD.cluster.socket(
                node), user='root', **mariadb.CONNECT)
            try:
                with conn.cursor() as cur:
                    cur.execute('SHOW STATUS LIKE %s', variable)
                    total += int(cur.fetchone()[1])
            finally:
                conn.close()
        return total

    def one_writer(self) -> None:
        """Back to one writer; the test's own connections, cut, are
        made again.
        """
        base.CLOUD.start_haproxy()
        self._store.dispose()

    # --------------------------------------------------------- the tests
    def kill_writer(self) -> int:
        """kill -9 of the node HAProxy sends connections to (the first of
        them, with every node a writer); started again after the test.
        """
        cluster = base.CLOUD.cluster
        writer = cluster.writer()
        self.assertIsNotNone(writer)
        base.CLOUD.kill(galera.name(writer))
        self.addCleanup(cluster.rejoin, writer)
        return writer

    def test_writer_node_killed(self):
        killed = []
        self.load(lambda: killed.append(self.kill_writer()))
        # HAProxy moved on to another node.
        self.assertNotIn(base.CLOUD.cluster.writer(), (None, killed[0]))
        self.check()

    def test_every_node_a_writer(self):
        # Connections to every node in turn, from the start of the load
        # (the switch cuts every connection: no request is under way).
        base.CLOUD.start_haproxy(writers='all')
        self.addCleanup(self.one_writer)
        self._store.dispose()
        conflicts = self.conflicts()
        self.load(self.kill_writer)
        self.check()
        self.assertGreaterEqual(len(base.CLOUD.cluster.serving()), 2)
        # Writes on one node met writes on another, and were run again.
        self.addDetail('conflicts', testtools.content.text_content(
            '%d before, %d after' % (conflicts, self.conflicts())))

    def conflicts(self) -> int:
        """Certification failures and the transactions they aborted, over
        the running nodes.
        """
        return sum(self.cluster_status(v) for v in (
            'wsrep_local_cert_failures', 'wsrep_local_bf_aborts'))
