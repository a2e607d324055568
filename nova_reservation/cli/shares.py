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

"""``openstack reservation share list|set``: the projects a lease's
capacity or host reservations are shared with, and their matching, beside
python-blazarclient's `openstack reservation ...` commands (the same
client and endpoint).
"""

import argparse
import json
from typing import Optional

from osc_lib.command import command
from osc_lib import exceptions

COLUMNS = ('Reservation', 'Resource type', 'Shared with', 'Matching',
           'Slots by project')


def chosen(lease: dict, reservation_id: Optional[str]) -> dict:
    """The reservation of `lease` (its view) that a command acts on: the
    one named, or its only capacity or host reservation (pure).
    """
    # The lease API shows the sharing of those that are shared.
    found = [r for r in lease['reservations'] if 'shared_with' in r]
    if reservation_id is not None:
        found = [r for r in found if r['id'] == reservation_id]
        if not found:
            raise exceptions.CommandError(
                'lease %s has no capacity or host reservation %s'
                % (lease['id'], reservation_id))
    if len(found) != 1:
        raise exceptions.CommandError(
            'lease %s has %d capacity or host reservations: name one with '
            '--reservation' % (lease['id'], len(found)))
    return found[0]


def change(reservation: dict, add=(), remove=(),
           matching: Optional[str] = None) -> dict:
    """The PUT body that shares `reservation` (its view) with the projects
    `add` besides those it has, takes its share back from `remove`, and
    sets its `matching` (pure).
    """
    projects = (set(reservation.get('shared_with') or ()) | set(add)) - \
        set(remove)
    entry = {'id': reservation['id'], 'shared_with': sorted(projects)}
    if matching is not None:
        entry['matching'] = matching
    return {'reservations': [entry]}


def rows(lease: dict) -> list:
    return [(r['id'], r['resource_type'], ', '.join(r['shared_with']),
             r['matching'], json.dumps(r['slots_by_project'],
                                       sort_keys=True))
            for r in lease['reservations'] if 'shared_with' in r]


def found(leases: list, lease: str) -> dict:
    """The lease named or with the id `lease` among `leases` (pure)."""
    matches = [x for x in leases if x['id'] == lease] or [
        x for x in leases if x['name'] == lease]
    if len(matches) != 1:
        raise exceptions.CommandError(
            'no lease %s' % lease if not matches else
            '%d leases are named %s: give its id' % (len(matches), lease))
    return matches[0]


def lease_named(client, lease: str) -> dict:
    """The lease (its view) named or with the id `lease`."""
    # python-blazarclient's client: its session, its endpoint and its
    # translation of errors into messages.
    _, body = client.lease.request_manager.get('/leases')
    return found(body['leases'], lease)


def lease_arguments(parser: argparse.ArgumentParser
                    ) -> argparse.ArgumentParser:
    """A command's lease and its reservation."""
    parser.add_argument('lease', metavar='<lease>',
                        help='Name or ID of the lease')
    parser.add_argument('--reservation', metavar='<id>',
                        help='The reservation (default: the lease\'s only '
                             'capacity or host reservation)')
    return parser


class ListShares(command.Lister):
    """List the projects a lease's reservations are shared with."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('lease', metavar='<lease>',
                            help='Name or ID of the lease')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.reservation
        return COLUMNS, rows(lease_named(client, parsed_args.lease))


class SetShares(command.Lister):
    """Share a lease's reservation with other projects, take a share
    back, or set its matching.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = lease_arguments(super().get_parser(prog_name))
        parser.add_argument('--project', metavar='<project-id>',
                            action='append', default=[],
                            help='Share it with this project (repeat for '
                                 'more)')
        parser.add_argument('--remove-project', metavar='<project-id>',
                            action='append', default=[],
                            help='Take the share of this project back: '
                                 'its new boots are refused, its servers '
                                 'stay to the end (repeat for more)')
        parser.add_argument('--matching', choices=('targeted', 'open'),
                            help='targeted: only boots that name it; open: '
                                 'also the ordinary boots that fit it')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.reservation
        lease = lease_named(client, parsed_args.lease)
        body = change(chosen(lease, parsed_args.reservation),
                      parsed_args.project, parsed_args.remove_project,
                      parsed_args.matching)
        _, answer = client.lease.request_manager.put(
            '/leases/%s' % lease['id'], body=body)
        return COLUMNS, rows(answer['lease'])
