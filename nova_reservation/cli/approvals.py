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

"""``openstack reservation lease approve`` and ``... reject``: an admin's
decision on a lease that waits for approval, beside python-blazarclient's
``openstack reservation lease ...`` commands (the same client and
endpoint).
"""

import argparse
from typing import Optional

from osc_lib.command import command

from nova_reservation.cli import shares

COLUMNS = ('id', 'name', 'project_id', 'status', 'status_reason',
           'start_date', 'end_date')


def body(reason: Optional[str]) -> dict:
    """The decision's request body (pure)."""
    return {'reason': reason} if reason else {}


class _Decide(command.ShowOne):
    ACTION = ''

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('lease', metavar='<lease>',
                            help='Name or ID of the lease')
        parser.add_argument('--reason', metavar='<text>',
                            help='Why (told to the lease\'s owner)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.reservation
        lease = shares.lease_named(client, parsed_args.lease)
        _, answer = client.lease.request_manager.post(
            '/leases/%s/%s' % (lease['id'], self.ACTION),
            body=body(parsed_args.reason))
        shown = answer['lease']
        return COLUMNS, tuple(shown.get(c) for c in COLUMNS)


class ApproveLease(_Decide):
    """Approve a lease that waits for approval: it goes on as any lease."""
    ACTION = 'approve'


class RejectLease(_Decide):
    """Reject a lease that waits for approval: nothing of it is left."""
    ACTION = 'reject'
