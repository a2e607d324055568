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

"""Which leases wait for approval (the rule, pure), the moves of a lease
that waits, and the approval commands' requests."""

import datetime
from unittest import mock

from oslo_config import fixture as config_fixture
import testtools

from nova_reservation import capacity
from nova_reservation.cli import approvals as cli
from nova_reservation import exception
from nova_reservation.lease import approvals
from nova_reservation.lease.request import ReservationRequest
from nova_reservation.lease import resource_types
from nova_reservation.schemas import approvals as schemas
from nova_reservation import status
from nova_reservation import validation

T0 = datetime.datetime(2026, 12, 1, 10, 0)
HOUR = datetime.timedelta(hours=1)


def servers(count, vcpus, kind=resource_types.FLAVOR):
    return ReservationRequest(resource_type=kind, count=count,
                              need=capacity.Resources(vcpus, 512, 1))


def hosts(most, fewest=1):
    return ReservationRequest(resource_type=resource_types.HOST, count=most,
                              min_count=fewest)


class RuleTest(testtools.TestCase):

    def reasons(self, requests, hours=1, tags=(), **limits):
        return approvals.reasons(requests, T0, T0 + hours * HOUR, tags,
                                 approvals.Thresholds(**limits))

    def test_no_threshold_needs_no_approval(self):
        self.assertEqual([], self.reasons(
            [servers(100, 64), hosts(50)], hours=10 ** 4,
            tags=('needs-approval',)))

    def test_vcpus_of_every_shared_pool_request_add_up(self):
        requests = [servers(2, 4), servers(1, 2, resource_types.SERVER),
                    servers(1, 1, resource_types.VIRTUAL), hosts(3)]
        self.assertEqual(11, approvals.vcpus(requests))
        # At the threshold: not above it.
        self.assertEqual([], self.reasons(requests, vcpus=11))
        self.assertEqual(['it reserves 11 vCPUs, more than 10 '
                          '(approval_vcpus)'],
                         self.reasons(requests, vcpus=10))

    def test_units_of_a_class_add_up_over_the_shared_pool(self):
        gold = capacity.extras({('', 'CUSTOM_BAREMETAL_GOLD'): 1})
        requests = [
            ReservationRequest(resource_type=resource_types.FLAVOR,
                               count=60, need=capacity.ZERO, extras=gold),
            ReservationRequest(resource_type=resource_types.SERVER,
                               count=2, need=capacity.ZERO, extras=gold),
            servers(100, 1), hosts(3)]
        self.assertEqual(62, approvals.units(requests,
                                             'CUSTOM_BAREMETAL_GOLD'))
        # A lease of bare-metal nodes by flavor has no vCPU: it waits for
        # its class's threshold, not for approval_vcpus.
        self.assertEqual([], self.reasons(requests, vcpus=100, classes=(
            ('CUSTOM_BAREMETAL_GOLD', 62), ('VGPU', 1))))
        self.assertEqual(['it reserves 62 CUSTOM_BAREMETAL_GOLD, more than '
                          '50 (approval_classes)'], self.reasons(
            requests, classes=(('CUSTOM_BAREMETAL_GOLD', 50),)))
        # 0: no threshold.
        self.assertEqual([], self.reasons(requests, classes=(
            ('CUSTOM_BAREMETAL_GOLD', 0),)))

    def test_the_operator_s_class_thresholds_are_read(self):
        self.useFixture(config_fixture.Config(approvals.CONF)).config(
            approval_classes={'VGPU': 16, 'CUSTOM_GPU_A100': 8},
            group='reservation')
        self.assertEqual((('CUSTOM_GPU_A100', 8), ('VGPU', 16)),
                         approvals.thresholds().classes)

    def test_hosts_count_their_most(self):
        self.assertEqual(5, approvals.hosts([hosts(3, 1), hosts(2, 2),
                                            servers(4, 4)]))
        self.assertEqual([], self.reasons([hosts(2)], hosts=2))
        self.assertIn('more than 2 (approval_hosts)',
                      self.reasons([hosts(3)], hosts=2)[0])

    def test_length(self):
        self.assertEqual([], self.reasons([servers(1, 1)], hours=2,
                                          seconds=7200))
        self.assertEqual(['it lasts 7201 s, longer than 7200 s '
                          '(approval_duration)'], approvals.reasons(
            [servers(1, 1)], T0, T0 + 2 * HOUR + datetime.timedelta(
                seconds=1), (), approvals.Thresholds(seconds=7200)))

    def test_the_tag_is_matched_whole(self):
        for tags in ((), ('needs-approval-not',), ('needs',),
                     ('NEEDS-APPROVAL',)):
            self.assertEqual([], self.reasons([servers(1, 1)], tags=tags,
                                              tag='needs-approval'), tags)
        self.assertEqual(['its project is tagged needs-approval '
                          '(approval_tag)'], self.reasons(
            [servers(1, 1)], tags=('a', 'needs-approval'),
            tag='needs-approval'))

    def test_every_reason_is_given_and_the_status_reason_fits(self):
        found = self.reasons([servers(10, 8), hosts(9)], hours=100,
                             tags=('t',), vcpus=1, hosts=1, seconds=60,
                             tag='t')
        self.assertEqual(4, len(found))
        reason = approvals.status_reason(found * 10)
        self.assertTrue(reason.startswith(approvals.REASON))
        self.assertLessEqual(len(reason), 255)
        self.assertTrue(approvals.awaited(mock.Mock(status_reason=reason)))
        self.assertFalse(approvals.awaited(mock.Mock(status_reason=None)))
        self.assertFalse(approvals.awaited(mock.Mock(
            status_reason='approved by admin')))

    def test_the_wait_ends_at_the_hold_or_the_start(self):
        with mock.patch.object(approvals, 'hold', return_value=3600):
            self.assertEqual(T0 + HOUR, approvals.expires(T0, T0 + 5 * HOUR))
            self.assertEqual(T0 + HOUR / 2,
                             approvals.expires(T0, T0 + HOUR / 2))


class MovesTest(testtools.TestCase):

    def test_a_lease_that_waits_is_approved_or_goes(self):
        lease = status.LEASE
        self.assertTrue(lease.can(status.CREATING, status.PENDING_APPROVAL))
        self.assertEqual({status.PENDING, status.DELETING},
                         set(lease.moves[status.PENDING_APPROVAL]))
        # Never started, nor refused, before an admin approves it.
        for new in (status.ACTIVE, status.ERROR, status.TERMINATED,
                    status.REFUSED, status.WAITING):
            self.assertFalse(lease.can(status.PENDING_APPROVAL, new), new)
        # An approval applies to a lease that waits, and to none other.
        self.assertEqual((status.CREATING, status.PENDING_APPROVAL),
                         lease.sources(status.PENDING_APPROVAL))
        self.assertIn(status.PENDING_APPROVAL, status.LIVE)
        self.assertEqual(status.RESERVATION_PENDING,
                         status.RESERVATION_OF_LEASE[
                             status.PENDING_APPROVAL])
        self.assertEqual(set(lease.moves),
                         set(status.RESERVATION_OF_LEASE))

    def test_a_boot_that_waits_has_its_servers_reserved(self):
        self.assertEqual((status.PENDING_APPROVAL, status.RESERVED),
                         status.made(False, False, approval=True))
        self.assertEqual((status.PENDING, status.RESERVED),
                         status.made(False, False))


class CommandsTest(testtools.TestCase):

    def test_body_and_arguments(self):
        self.assertEqual({}, cli.body(None))
        self.assertEqual({}, cli.body(''))
        self.assertEqual({'reason': 'ok'}, cli.body('ok'))
        for command, action in ((cli.ApproveLease, 'approve'),
                                (cli.RejectLease, 'reject')):
            self.assertEqual(action, command.ACTION)
            args = command(None, None).get_parser('x').parse_args(
                ['big', '--reason', 'too big'])
            self.assertEqual(('big', 'too big'), (args.lease, args.reason))
            validation.check(schemas.DECISION, cli.body(args.reason))

    def test_the_commands_post_to_the_lease(self):
        client = mock.Mock()
        client.lease.request_manager.get.return_value = (None, {'leases': [
            {'id': 'L1', 'name': 'big'}]})
        client.lease.request_manager.post.return_value = (None, {'lease': {
            'id': 'L1', 'name': 'big', 'status': 'PENDING'}})
        command = cli.ApproveLease(mock.Mock(), None)
        command.app.client_manager.reservation = client
        columns, values = command.take_action(
            command.get_parser('x').parse_args(['big']))
        client.lease.request_manager.post.assert_called_once_with(
            '/leases/L1/approve', body={})
        self.assertEqual('PENDING', dict(zip(columns, values))['status'])

    def test_a_reason_is_a_short_line(self):
        for bad in ({'reason': 5}, {'reason': 'x' * 256},
                    {'reason': 'a\nb'}, {'why': 'x'}, []):
            self.assertRaises(exception.InvalidParam, validation.check,
                              schemas.DECISION, bad)
