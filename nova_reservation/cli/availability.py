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

"""`openstack reservation availability list`: when a reservation would fit,
beside python-blazarclient's `openstack reservation ...` commands (the same
client and endpoint).
"""

import argparse
from urllib import parse

from osc_lib.command import command
from osc_lib import exceptions

COLUMNS = ('Earliest', 'Latest')


def query(args: argparse.Namespace, flavor_id=None) -> dict:
    """The API's query for the command's arguments (pure)."""
    if args.min is not None:
        wanted = {'resource_type': 'physical:host', 'min': args.min}
        for name in ('hypervisor_properties', 'resource_properties'):
            if getattr(args, name):
                wanted[name] = getattr(args, name)
    elif args.vcpus is not None:
        wanted = {'resource_type': 'virtual:instance', 'vcpus': args.vcpus,
                  'memory_mb': args.memory_mb, 'disk_gb': args.disk_gb,
                  'amount': args.amount}
        if args.resource_properties:
            wanted['resource_properties'] = args.resource_properties
    else:
        wanted = {'resource_type': 'flavor:instance',
                  'flavor_id': flavor_id, 'amount': args.amount}
    if args.affinity is not None and args.min is None:
        wanted['affinity'] = args.affinity
    wanted['duration'] = args.duration
    for name in ('after', 'before', 'limit'):
        if getattr(args, name) is not None:
            wanted[name] = getattr(args, name)
    return {k: str(v) for k, v in wanted.items() if v is not None}


class ListAvailability(command.Lister):
    """List the start windows in which a reservation fits."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument('--flavor', metavar='<flavor>',
                          help='Servers of this flavor (name or ID): a '
                               'flavor:instance reservation')
        kind.add_argument('--vcpus', metavar='<vcpus>', type=int,
                          help='Servers of this many VCPUs: a '
                               'virtual:instance reservation (with '
                               '--memory-mb, --disk-gb)')
        kind.add_argument('--min', metavar='<hosts>', type=int,
                          help='Whole hosts, at least this many: a '
                               'physical:host reservation')
        parser.add_argument('--memory-mb', metavar='<MiB>', type=int,
                            help='Memory of each server (--vcpus)')
        parser.add_argument('--disk-gb', metavar='<GiB>', type=int,
                            default=0,
                            help='Disk of each server (--vcpus)')
        parser.add_argument('--amount', metavar='<servers>', type=int,
                            default=1, help='How many servers (default 1)')
        parser.add_argument('--affinity', metavar='<True|False>',
                            choices=('True', 'False', 'true', 'false'),
                            help='All on one host (True), each on its own '
                                 '(False), or anywhere (not given)')
        parser.add_argument('--hypervisor-properties', metavar='<query>',
                            help='Hosts whose hypervisor matches this '
                                 'query (--min)')
        parser.add_argument('--resource-properties', metavar='<query>',
                            help='Hosts whose properties match this query')
        parser.add_argument('--duration', metavar='<duration>',
                            required=True,
                            help='How long the lease lasts: minutes, or a '
                                 'number with a unit m, h, d or w '
                                 '(90, 2h, 1d)')
        parser.add_argument('--after', metavar='<date>',
                            help='Start no earlier than this (UTC, '
                                 'YYYY-MM-DDTHH:MM:SSZ; default now)')
        parser.add_argument('--before', metavar='<date>',
                            help='Start before this (UTC; default as far '
                                 'ahead as a lease may start)')
        parser.add_argument('--limit', metavar='<windows>', type=int,
                            help='At most this many windows (default 10)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        if parsed_args.vcpus is not None and parsed_args.memory_mb is None:
            raise exceptions.CommandError('--vcpus needs --memory-mb')
        flavor_id = None
        if parsed_args.flavor:
            compute = self.app.client_manager.compute
            flavor_id = compute.find_flavor(parsed_args.flavor,
                                            ignore_missing=False).id
        # python-blazarclient's client: its session, its endpoint and its
        # translation of errors into messages.
        client = self.app.client_manager.reservation
        _, body = client.lease.request_manager.get(
            '/availability?' + parse.urlencode(query(parsed_args,
                                                     flavor_id)))
        return COLUMNS, [(w['earliest'], w['latest'])
                         for w in body['availability']['windows']]
