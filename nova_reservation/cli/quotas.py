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

"""``openstack reservation quota show|set``: a project's reservation
quota and its use, beside python-blazarclient's commands (the same client
and endpoint).
"""

import argparse
from typing import Optional

from osc_lib.command import command
from osc_lib import exceptions

LIMITS = ('vcpus', 'memory_mb', 'hosts', 'vcpu_hours_per_month')
COLUMNS = ('Limit', 'Most', 'Source', 'In use', 'When')


def rows(quota: dict) -> list:
    """One row per limit of a quota's view (pure); -1 shows as
    "unlimited".
    """
    found = []
    # Then a resource class's limits, as the API gives them.
    for name in LIMITS + tuple(sorted(set(quota) - set(LIMITS) -
                                      {'project_id'})):
        item = quota[name]
        found.append((name, 'unlimited' if item['limit'] == -1
                      else item['limit'], item['source'], item['in_use'],
                      item.get('peak_at') or item.get('month') or ''))
    return found


def limit(text: str) -> Optional[int]:
    """A limit as given on the command line: a whole number, -1 or
    "unlimited" for none, "default" for the tag's or the default (pure).
    """
    if text == 'default':
        return None
    if text == 'unlimited':
        return -1
    try:
        value = int(text)
    except ValueError:
        value = -2
    if value < -1:
        raise argparse.ArgumentTypeError(
            '%r: give a whole number, -1 or "unlimited", or "default"'
            % text)
    return value


def class_limit(text: str) -> tuple:
    """(name, limit) of ``<limit>=<N|unlimited|default>`` (pure)."""
    name, sep, value = text.partition('=')
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            '%r: give <limit>=<N|unlimited|default>' % text)
    return name, limit(value)


def project_of(app, given: Optional[str]) -> str:
    if given:
        return given
    project = app.client_manager.auth_ref.project_id
    if not project:
        raise exceptions.CommandError('give a project')
    return project


class ShowQuota(command.Lister):
    """Show a project's reservation quota and its use."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>', nargs='?',
                            help='The project (default: the current one)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.reservation
        _, body = client.lease.request_manager.get(
            '/quotas/%s' % project_of(self.app, parsed_args.project))
        return COLUMNS, rows(body['quota'])


class SetQuota(command.Lister):
    """Set a project's reservation quota (admin)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>',
                            help='The project')
        for name in LIMITS:
            parser.add_argument(
                '--' + name.replace('_', '-'), dest=name, type=limit,
                metavar='<N|unlimited|default>',
                default=argparse.SUPPRESS,
                help='Most %s; "default": the project\'s tag or the '
                     'cloud\'s default again' % name.replace('_', ' '))
        parser.add_argument(
            '--class-limit', metavar='<limit>=<N|unlimited|default>',
            action='append', type=class_limit, default=[],
            help='A limit of a resource class: its name (units at any '
                 'instant) or <class>_hours_per_month, such as '
                 'CUSTOM_GPU_A100_hours_per_month=500 (repeat for more)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        values = {name: getattr(parsed_args, name) for name in LIMITS
                  if hasattr(parsed_args, name)}
        values.update(parsed_args.class_limit)
        if not values:
            raise exceptions.CommandError('give at least one limit')
        client = self.app.client_manager.reservation
        _, body = client.lease.request_manager.put(
            '/quotas/%s' % parsed_args.project, body={'quota': values})
        return COLUMNS, rows(body['quota'])
