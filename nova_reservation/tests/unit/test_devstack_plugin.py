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

"""The devstack plugin (devstack/plugin.sh and settings), sourced in bash
as devstack sources it, phase after phase in one shell.

devstack's helpers (iniset, get_or_create_*, run_process, ...) and the
`openstack` CLI are stand-ins that write their arguments to a log, but
`nova-reservation-manage deploy configure` is the real command of this
virtualenv and edits copies of a nova.conf and of Nova's shipped
api-paste.ini; only `nova-reservation-manage ... db sync`, which needs a
real database, is logged instead of run.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PLUGIN = os.path.join(ROOT, 'devstack', 'plugin.sh')
SETTINGS = os.path.join(ROOT, 'devstack', 'settings')
MANAGE = os.path.join(sys.prefix, 'bin', 'nova-reservation-manage')
API_PASTE = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')

NOVA_CONF = """[DEFAULT]
debug = True

[api_database]
connection = sqlite:////nonexistent/nova_api.sqlite

[filter_scheduler]
enabled_filters = ComputeFilter,ImagePropertiesFilter
"""

# devstack's functions, as far as the plugin uses them.
STUBS = r"""
log() { echo "$*" >> "$TEST_LOG"; }
is_service_enabled() { return 0; }
enable_service() { log enable_service "$@"; }
echo_summary() { :; }
get_python_exec_prefix() { echo /usr/local/bin; }
setup_develop() { log setup_develop "$@"; }
pip_install() { log pip_install "$@"; }
iniset() { log iniset "$@"; }
get_or_create_user() { log get_or_create_user "$@"; echo user-id; }
get_or_add_user_project_role() { log get_or_add_user_project_role "$@"; }
get_or_create_service() { log get_or_create_service "$@"; echo service-id; }
get_or_create_endpoint() { log get_or_create_endpoint "$@"; echo url-id; }
run_process() { log run_process "$@"; }
stop_process() { log stop_process "$@"; }
restart_service() { log restart_service "$@"; }
openstack() {
    log openstack "$@"
    [[ "$*" != *"aggregate show"* ]]    # no aggregate exists yet
}
"""

# Logs every call and runs the real command, except `db ...`.
MANAGE_SHIM = """#!/bin/bash
echo "nova-reservation-manage $*" >> "$TEST_LOG"
[[ " $* " == *" db "* ]] && exit 0
exec %s "$@"
"""

SCRIPT = r"""
set -o errexit -o nounset -o pipefail
%(stubs)s
source "%(settings)s"
phase() {
    echo "== $*" >> "$TEST_LOG"
    source "%(plugin)s" "$@"
}
phase stack install
phase stack post-config
%(between)s
phase stack extra
phase unstack
"""


@unittest.skipUnless(os.path.exists(MANAGE) and os.path.exists(API_PASTE),
                     'needs nova-reservation and Nova installed in %s'
                     % sys.prefix)
class DevstackPluginTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='nrsv-devstack-')
        self.addCleanup(shutil.rmtree, self.dir)
        self.nova_conf = os.path.join(self.dir, 'nova.conf')
        self.api_paste = os.path.join(self.dir, 'api-paste.ini')
        with open(self.nova_conf, 'w') as f:
            f.write(NOVA_CONF)
        shutil.copy(API_PASTE, self.api_paste)
        self.bin = os.path.join(self.dir, 'bin')
        os.mkdir(self.bin)
        shim = os.path.join(self.bin, 'nova-reservation-manage')
        with open(shim, 'w') as f:
            f.write(MANAGE_SHIM % MANAGE)
        os.chmod(shim, 0o755)
        self.log = os.path.join(self.dir, 'log')

    def stack(self, between='', **env):
        """stack.sh's phases, then unstack; the log, one list of lines per
        phase.
        """
        environ = dict(
            os.environ, TEST_LOG=self.log,
            PATH=os.path.dirname(MANAGE) + os.pathsep + os.environ['PATH'],
            DEST='/opt/stack', NOVA_CONF=self.nova_conf,
            NOVA_API_PASTE_INI=self.api_paste,
            NOVA_RESERVATION_BIN_DIR=self.bin,
            KEYSTONE_SERVICE_URI='http://192.0.2.10/identity',
            SERVICE_PASSWORD='secret', SERVICE_PROJECT_NAME='service',
            SERVICE_DOMAIN_NAME='Default', REGION_NAME='RegionOne',
            NOVA_SERVICE_PROTOCOL='http', NOVA_SERVICE_HOST='192.0.2.10',
            NOVA_SERVICE_PORT='8774', **env)
        script = SCRIPT % dict(stubs=STUBS, settings=SETTINGS,
                               plugin=PLUGIN, between=between)
        # A guard against a hang, not a figure: the plugin runs the real
        # nova-reservation-manage, which a busy machine (the test
        # command's other lane) took over a minute to run.
        proc = subprocess.run(['bash', '-c', script], env=environ,
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(0, proc.returncode, proc.stderr[-5000:])
        phases = {'settings': []}
        current = phases['settings']
        with open(self.log) as f:
            for line in f.read().splitlines():
                if line.startswith('== '):
                    current = phases.setdefault(line[3:], [])
                else:
                    current.append(line)
        return phases

    def read(self, path):
        with open(path) as f:
            return f.read()

    def test_shell_syntax(self):
        for path in (PLUGIN, SETTINGS):
            proc = subprocess.run(['bash', '-n', path], capture_output=True,
                                  text=True)
            self.assertEqual(0, proc.returncode, proc.stderr)

    def test_stack_and_unstack(self):
        log = self.stack()

        self.assertEqual(['enable_service nova-rsv-engine'],
                         log['settings'])
        self.assertEqual(['setup_develop /opt/stack/nova-reservation',
                          'pip_install python-blazarclient'],
                         log['stack install'])

        # post-config: Nova's files, by the project's own command.
        conf = self.read(self.nova_conf)
        self.assertIn('enabled_filters = ComputeFilter,ImagePropertiesFilter,'
                      'ReservationFilter\n', conf)
        self.assertIn('available_filters = '
                      'nova_reservation.filters.ReservationFilter\n', conf)
        for line in ('auth_type = password',
                     'auth_url = http://192.0.2.10/identity/v3',
                     'username = nova-reservation', 'password = secret',
                     'project_name = service', 'region_name = RegionOne'):
            self.assertIn('\n%s\n' % line, conf)
        paste = self.read(self.api_paste)
        self.assertIn('\n/reservation: reservation_api\n', paste)
        self.assertIn('keystonecontext reservation osapi_compute_app_v21',
                      paste)
        self.assertIn('keystonecontext reservation legacy_v2_compatible',
                      paste)
        # Nova 31 (stable/2025.1) ships noauth2 pipelines too.
        for line in paste.splitlines():
            if line.startswith('noauth2 = '):
                self.assertIn(' noauth2 reservation ', line)
        post = log['stack post-config']
        self.assertEqual(
            'nova-reservation-manage deploy configure --nova-conf %s '
            '--api-paste %s --auth-url http://192.0.2.10/identity/v3 '
            '--username nova-reservation --password secret --project-name '
            'service --user-domain-name Default --project-domain-name '
            'Default --region-name RegionOne'
            % (self.nova_conf, self.api_paste), post[0])
        self.assertIn('get_or_create_user nova-reservation secret Default',
                      post)
        self.assertIn('get_or_add_user_project_role admin user-id service '
                      'Default Default', post)
        self.assertIn('get_or_create_service nova-reservation reservation '
                      'Leases of compute capacity (nova-reservation)', post)
        self.assertIn('get_or_create_endpoint reservation RegionOne '
                      'http://192.0.2.10/compute/reservation/v1', post)
        # The tables, after the configuration.
        self.assertEqual('nova-reservation-manage --config-file %s db sync'
                         % self.nova_conf, post[-1])
        self.assertFalse([x for x in post if x.startswith('iniset')])

        # extra: the freepool, the same files again (unchanged: no
        # restart), the engine.
        extra = log['stack extra']
        self.assertEqual(
            ['openstack --os-cloud devstack-admin aggregate show freepool',
             'openstack --os-cloud devstack-admin aggregate create freepool',
             post[0],
             'run_process nova-rsv-engine %s/nova-reservation-engine '
             '--config-file %s' % (self.bin, self.nova_conf)],
            extra)
        self.assertEqual(conf, self.read(self.nova_conf))
        self.assertEqual(paste, self.read(self.api_paste))

        self.assertEqual(['stop_process nova-rsv-engine'], log['unstack'])

    def test_extra_restores_filters_replaced_by_local_conf(self):
        # local.conf's [[post-config|$NOVA_CONF]] is merged after the
        # plugin's post-config phase; here it replaces enabled_filters.
        log = self.stack(
            between="sed -i 's/^enabled_filters = .*/enabled_filters = "
                    "ComputeFilter/' \"$NOVA_CONF\"",
            NOVA_RESERVATION_FREEPOOL='reservable',
            NOVA_RESERVATION_INSTALL_CLIENT='False',
            NOVA_USE_MOD_WSGI='False')

        self.assertEqual(['setup_develop /opt/stack/nova-reservation'],
                         log['stack install'])
        post = log['stack post-config']
        self.assertIn('iniset %s reservation freepool_name reservable'
                      % self.nova_conf, post)
        self.assertIn('get_or_create_endpoint reservation RegionOne '
                      'http://192.0.2.10:8774/reservation/v1', post)

        extra = log['stack extra']
        self.assertIn('openstack --os-cloud devstack-admin aggregate create '
                      'reservable', extra)
        self.assertIn('enabled_filters = ComputeFilter,ReservationFilter\n',
                      self.read(self.nova_conf))
        restarts = [x for x in extra if x.startswith('restart_service')]
        self.assertEqual(['restart_service devstack@n-api.service',
                          'restart_service devstack@n-sch.service'],
                         restarts)
        self.assertTrue(extra[-1].startswith('run_process nova-rsv-engine '))
