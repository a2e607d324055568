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

"""``openstack reservation lease split``: part of a lease's reservation
handed on to a new lease, beside python-blazarclient's `openstack
reservation lease ...` commands (the same client and endpoint).
"""

import argparse
from typing import Optional

from osc_lib.command import command

from nova_reservation.cli import shares

COLUMNS = ('id', 'name', 'project_id', 'start_date', 'end_date',
           'reservations')


def body(reservation_id: str, amount: int, project_id: Optional[str],
         name: Optional[str]) -> dict:
    """The split's request body (pure)."""
    found = {'reservation_id': reservation_id, 'amount': amount}
    if project_id:
        found['project_id'] = project_id
    if name:
        found['name'] = name
    return found


class SplitLease(command.ShowOne):
    """Hand part of a lease's capacity or host reservation, with the
    servers on it, on to a new lease over the same interval.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = shares.lease_arguments(super().get_parser(prog_name))
        parser.add_argument('--amount', metavar='<slots>', type=int,
                            required=True,
                            help='How many of its slots (or hosts) move')
        parser.add_argument('--project', metavar='<project-id>',
                            help='The new lease\'s project (admins; '
                                 'default: the lease\'s)')
        parser.add_argument('--name', metavar='<name>',
                            help='The new lease\'s name (default: the '
                                 'lease\'s)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.reservation
        lease = shares.lease_named(client, parsed_args.lease)
        reservation = shares.chosen(lease, parsed_args.reservation)
        _, answer = client.lease.request_manager.post(
            '/leases/%s/split' % lease['id'], body=body(
                reservation['id'], parsed_args.amount, parsed_args.project,
                parsed_args.name))
        made = answer['lease']
        return COLUMNS, tuple(
            ', '.join(r['id'] for r in made[c]) if c == 'reservations'
            else made[c] for c in COLUMNS)
