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

"""Leases above an operator's thresholds wait for an admin's approval
(PENDING_APPROVAL), holding their slots: approved, rejected, expired, or
rejected at their start, through the lease API and boots with
lease_params, on real Nova."""

import concurrent.futures
import datetime
import time

import fixtures
import requests

from devcloud import invariants
from nova_reservation.capacity import epoch
from nova_reservation.clients import project_tags
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()
# ONE_PER_NODE has 2 vCPUs: one is below the threshold, two above it.
THRESHOLD = 2


def body(amount, start, minutes=60, name='big'):
    """A flavor:instance lease of `amount` from `start` seconds from now."""
    return {'name': name, 'start_date': base.soon(start),
            'end_date': base.soon(start + minutes * 60), 'events': [],
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': base.ONE_PER_NODE,
                              'amount': amount, 'affinity': 'None'}]}


def at_once(*calls) -> list:
    """The answers of `calls` (no-argument functions) made side by side."""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return [f.result() for f in [pool.submit(c) for c in calls]]


class ApprovalTest(base.SharingTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.flags(approval_vcpus=THRESHOLD, group='reservation')
        self.capture_notifications()
        self.reader_rsv = self.lease_api('reader-user', roles=('reader',))

    def make(self, amount, start, api=None, **extra):
        resp = (api or self.rsv)('POST', '/leases', body(amount, start,
                                                         **extra))
        self.assertEqual(201, resp.status_code, resp.text)
        return resp.json()['lease']

    def decide(self, lease, action, api=None, reason=None):
        return (api or self.admin_rsv)(
            'POST', '/leases/%s/%s' % (lease['id'], action),
            None if reason is None else {'reason': reason})

    def show(self, lease, api=None):
        return (api or self.rsv)('GET', '/leases/%s' % lease['id'])

    def told(self, step: str) -> list:
        """(lease id, reason) of each lease.approval.<step> sent (by an
        engine, which sends what nova-api stored).
        """
        self.clock.now = max(self.clock.now,
                             epoch.to_epoch(db_api.utcnow()))
        self.engine.outbox.flush()
        return [(p['lease_id'], p['reason'])
                for _, p in self.notified('lease.approval.%s' % step)]

    def assert_nothing_left(self, lease) -> None:
        """The lease is gone, with its slots and its private flavor."""
        self.run_engine()
        self.assertEqual(404, self.show(lease, self.admin_rsv).status_code)
        rid = lease['reservations'][0]['id']
        self.assertEqual([], db_ledger.slots(STORE, rid))
        self.assertEqual(404, self.admin_api.api_get(
            '/flavors/%s' % rid, check_response_status=False).status)

    def test_approved_lease_held_its_place_and_goes_on_as_any(self):
        small = self.make(1, 7200, name='small')
        self.assertEqual('PENDING', small['status'])
        lease = self.make(3, 3)   # every node
        self.assertEqual('PENDING_APPROVAL', lease['status'])
        self.assertIn('it reserves 6 vCPUs, more than 2 (approval_vcpus)',
                      lease['status_reason'])
        self.assertEqual([(lease['id'], lease['status_reason'])],
                         self.told('requested'))
        rid = lease['reservations'][0]['id']
        # Its slots are held: another project's lease does not fit then.
        other = self.shared_rsv('POST', '/leases', body(1, 3))
        self.assertEqual(409, other.status_code, other.text)
        self.assertEqual(3, len(db_ledger.slots(STORE, rid)))
        # It can not be booted into, nor changed, while it waits.
        self.wait_start(lease)
        boot = self.boot_into(rid)
        self.assertEqual(409, boot.status, boot.content)
        self.assertIn('PENDING_APPROVAL', boot.content.decode())
        change = self.rsv('PUT', '/leases/%s' % lease['id'],
                          {'name': 'renamed'})
        self.assertEqual(409, change.status_code, change.text)
        self.assertIn('until an admin approves it', change.text)
        # Only admins decide: a member, a reader, another project's member.
        for api in (self.rsv, self.reader_rsv, self.shared_rsv):
            for action in ('approve', 'reject'):
                resp = self.decide(lease, action, api)
                self.assertEqual(403, resp.status_code, resp.text)
        # Admins list what waits; a member sees only their own project's.
        listed = self.admin_rsv('GET', '/leases?status=PENDING_APPROVAL')
        self.assertEqual([lease['id']], [x['id'] for x in listed.json()[
            'leases']])
        self.assertEqual([], self.shared_rsv(
            'GET', '/leases?status=PENDING_APPROVAL').json()['leases'])
        bad = self.admin_rsv('GET', '/leases?status=pending%00')
        self.assertEqual(400, bad.status_code, bad.text)
        self.assertIn('status: must be one of', bad.text)

        # Two approvals at once: one is made, the other finds it made.
        answers = at_once(lambda: self.decide(lease, 'approve', reason='ok'),
                          lambda: self.decide(lease, 'approve'))
        self.assertEqual([200, 409], sorted(a.status_code for a in answers))
        refused = next(a for a in answers if a.status_code == 409)
        self.assertIn('is PENDING: it does not wait for approval',
                      refused.text)
        shown = self.show(lease).json()['lease']
        self.assertEqual('PENDING', shown['status'])
        self.assertIn('approved by admin', shown['status_reason'])
        self.assertEqual(1, len(self.told('approved')))
        self.assertEqual(409, self.decide(lease, 'reject').status_code)
        # Approved, it is any lease: it starts and takes boots.
        self.run_engine()
        self.assertEqual('ACTIVE', self.show(lease).json()['lease']['status'])
        boot = self.boot_into(rid)
        self.assertEqual(202, boot.status, boot.content)
        self.node_of(boot.body['server']['id'])
        self.run_engine()

    def wait_start(self, lease) -> None:
        """Wait (in real time: boots read it) until its start has come."""
        start = datetime.datetime.strptime(lease['start_date'],
                                           '%Y-%m-%dT%H:%M:%S.%f')
        delay = (start - db_api.utcnow()).total_seconds()
        if delay > 0:
            time.sleep(delay + 0.1)

    def test_reject_expiry_and_races_leave_nothing(self):
        first = self.make(2, 3600)
        second = self.make(2, 3 * 3600)
        # Hostile input: nothing is decided.
        for path, payload, code, words in (
                ('/leases/x/approve', None, 404, 'lease x not found'),
                ('/leases/%s/approve' % ('9' * 300), None, 404, 'not found'),
                ('/leases/%s/approve' % first['id'], {'reason': 5}, 400,
                 'reason'),
                ('/leases/%s/reject' % first['id'], [], 400, 'body'),
                ('/leases/%s/reject' % first['id'], {'reason': 'a\x00'},
                 400, 'reason'),
                ('/leases/%s/reject' % first['id'], {'reason': 'x' * 256},
                 400, 'reason'),
                ('/leases/%s/approve' % first['id'], {'why': 'no'}, 400,
                 'why')):
            resp = self.admin_rsv('POST', path, payload)
            self.assertEqual(code, resp.status_code, (path, resp.text))
            self.assertIn(words, resp.text)
        resp = requests.post(self.admin_rsv.base + '/leases/%s/approve'
                             % first['id'], data=b'{"reason": "\xff"}',
                             headers=dict(self.admin_rsv.headers, **{
                                 'Content-Type': 'application/json'}))
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual('PENDING_APPROVAL',
                         self.show(first).json()['lease']['status'])

        resp = self.decide(first, 'reject', reason='too big for now')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual('DELETING', resp.json()['lease']['status'])
        self.assertEqual(409, self.decide(first, 'approve').status_code)
        self.assertEqual([(first['id'], 'too big for now')],
                         self.told('rejected'))
        self.assert_nothing_left(first)

        # An approval racing a rejection: exactly one is made.
        answers = at_once(lambda: self.decide(second, 'approve'),
                          lambda: self.decide(second, 'reject'))
        self.assertEqual([200, 409], sorted(a.status_code for a in answers))
        approved = answers[0].status_code == 200
        shown = self.show(second, self.admin_rsv).json()['lease']
        self.assertEqual('PENDING' if approved else 'DELETING',
                         shown['status'])
        if not approved:
            self.assert_nothing_left(second)

        # The hold: two engines look at once past it; one rejects.
        self.flags(approval_hold=60, group='reservation')
        third = self.make(2, 5 * 3600)
        later = epoch.to_epoch(db_api.utcnow()) + 61
        self.clock.now = later
        # This engine's periodic task, and another engine's.
        other = self.cloud.engine(clock=lambda: later,
                                  notifier=self.engine.notifier)
        self.assertEqual(
            [third['id']],
            sum(at_once(self.engine.expire_approvals,
                        other.expire_approvals), []))
        self.assertEqual([(third['id'], 'not approved within 60 s')],
                         self.told('expired'))
        self.assert_nothing_left(third)

    def test_start_before_approval_boots_and_tags(self):
        # A lease still waiting at its start is rejected by its start (on
        # the fake clock: a start 2 s away was refused as past on a slow
        # machine).
        soon = self.make(2, 600)
        row = db_leases.get(STORE, soon['id'])
        # Left waiting past its start, it breaks an invariant where
        # engines run.
        found = invariants.violations(
            db_api.get_engine(), [], lambda path: self.placement.get(
                path, version='1.14').body,
            row.start_at + datetime.timedelta(seconds=11),
            engines=True)
        self.assertIn('lease %s still waits for approval after its start'
                      % soon['id'], ' '.join(found))
        self.start_lease(row)
        self.assertEqual([(soon['id'],
                           'its start came before an admin approved it')],
                         self.told('expired'))
        self.assert_nothing_left(soon)

        # A boot above the threshold that starts now: refused, nothing made.
        now = self.boot(base.params('now', base.when(60)), count=2)
        self.assertEqual(403, now.status, now.content)
        self.assertIn('needs an admin\'s approval', now.content.decode())
        self.assertIn('ask for a start in the future', now.content.decode())
        self.assertEqual([], [x for x in self.leases()
                              if x.status != 'DELETED'])
        self.assertEqual([], self.api.get_servers())

        # A future one waits, its servers reserved; approved, they run.
        resp = self.boot(base.params(base.when(0.05), base.when(60)),
                         count=2, name='ok')
        self.assertEqual(202, resp.status, resp.content)
        ok = self.lease_of_server(resp.body['server']['id'])
        self.assertEqual('PENDING_APPROVAL', ok.status)
        servers = [s['id'] for s in self.api.get_servers()]
        self.assertEqual(2, len(servers))
        for uuid in servers:
            self.assertEqual('RESERVED', self.api.get_server(uuid)['status'])
        self.assertEqual(ok.id, self.told('requested')[-1][0])
        self.assertEqual(200, self.decide({'id': ok.id},
                                          'approve').status_code)
        self.start_lease(db_leases.get(STORE, ok.id))
        for uuid in servers:
            self._wait_for_state_change(self.api.get_server(uuid), 'ACTIVE')

        # Another, later, rejected: its servers are deleted.
        resp = self.boot(base.params(base.when(120), base.when(180)),
                         count=2, name='no')
        self.assertEqual(202, resp.status, resp.content)
        no = self.lease_of_server(resp.body['server']['id'])
        reserved = [b.instance_uuid for b in
                    db_leases.details(STORE, [no.id])[no.id].bindings]
        self.assertEqual(2, len(reserved))
        self.assertEqual(200, self.decide({'id': no.id},
                                          'reject').status_code)
        self.run_engine()
        for uuid in reserved:
            self.wait_gone(uuid)
        self.assertEqual(404, self.admin_rsv(
            'GET', '/leases/%s' % no.id).status_code)

        # A tagged project's leases all wait, whatever their size.
        self.flags(approval_tag='needs-approval', group='reservation')
        self.addCleanup(project_tags._TAGS.clear)
        project_tags._TAGS.clear()
        self.useFixture(fixtures.MockPatch(
            'nova_reservation.clients.project_tags._read',
            side_effect=lambda ctx, project_id: ('needs-approval',)
            if project_id == base.THIRD else ()))
        tagged = self.make(1, 7 * 3600, api=self.third_rsv)
        self.assertEqual('PENDING_APPROVAL', tagged['status'])
        self.assertIn('its project is tagged needs-approval',
                      tagged['status_reason'])
        self.assertEqual('PENDING', self.make(1, 9 * 3600)['status'])
