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

"""tools/localcloud up [--engines N] [--computes N] [--cells N]
[--controllers N] [--galera N] [--accelerators] [--baremetal] [--lanes N]
[--fresh] | down | env NAME | status
"""

import argparse
import sys

from devcloud.localcloud import cloud


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog='tools/localcloud',
        description='A local multi-process cloud with nova-reservation.')
    commands = parser.add_subparsers(dest='command', required=True)
    up = commands.add_parser('up', help='Start the cloud (set up at first).')
    up.add_argument('--engines', type=int, default=1,
                    help='Engine processes (default 1).')
    up.add_argument('--computes', type=int, default=3,
                    help='nova-compute processes (default 3).')
    up.add_argument('--cells', type=int, default=1, choices=(1, 2),
                    help='Cells besides cell0 (default 1); with 2, every '
                    'second compute is in cell2.')
    up.add_argument('--controllers', type=int, default=1, choices=(1, 2),
                    help='Controllers (default 1); with 2, two nova-api '
                    'processes of two workers each behind HAProxy, two '
                    'schedulers and two conductors.')
    up.add_argument('--galera', type=int, default=1, choices=(1, 3),
                    help='Database servers (default 1: the machine\'s '
                    'MariaDB); with 3, a MariaDB Galera cluster of three '
                    'nodes behind HAProxy holds every database.')
    up.add_argument('--accelerators', action='store_true',
                    help='Nodes that report accelerators through Nova\'s '
                    'own mechanisms: the first compute two physical GPUs '
                    'of 1 VGPU each (child providers), the second 2 '
                    'CUSTOM_GPU_A100 (a provider config file), the third '
                    '4 PCPU; and the flavors g1.vgpu, g1.a100 and '
                    'c1.dedicated.')
    up.add_argument('--baremetal', action='store_true',
                    help='Bare-metal nodes in Ironic\'s shape: one more '
                    'nova-compute, "ironic-compute", serving bm1 and bm2 '
                    '(CUSTOM_BAREMETAL_GOLD) and bm3 '
                    '(CUSTOM_BAREMETAL_SILVER), one unit each with its '
                    'trait (a provider config file); and the flavor '
                    'bm.gold.')
    up.add_argument('--lanes', type=int, default=1, choices=range(1, 9),
                    metavar='N',
                    help='Lanes of capacity for tests that run side by side '
                    '(default 1): each lane its own copies of the nodes, '
                    'each with the trait CUSTOM_LANE_<n>, and of each '
                    'flavor (<flavor>-l<n>), asking for that trait.')
    up.add_argument('--fresh', action='store_true',
                    help='Start from empty databases.')
    commands.add_parser('down', help='Stop every process of the cloud.')
    env = commands.add_parser(
        'env', help='Print the shell exports of a user for the nova and '
                    'openstack CLIs.')
    env.add_argument('name', choices=('admin', 'alice', 'bob'))
    commands.add_parser('status', help='List the running processes and '
                        'the dashboard URL.')
    args = parser.parse_args(argv)
    local = cloud.LocalCloud()
    if args.command == 'up':
        local.up(args.engines, args.computes, args.fresh, args.cells,
                 args.controllers, args.galera, args.accelerators,
                 args.baremetal, args.lanes)
        print('local cloud up: eval "$(tools/localcloud env alice)"')
    elif args.command == 'down':
        local.down()
    elif args.command == 'env':
        sys.stdout.write(local.env(args.name))
    else:
        print(local.status())
    return 0


if __name__ == '__main__':
    sys.exit(main())
