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

"""Configuration of nova-reservation: the ``[reservation]`` group of
nova.conf."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import types

from nova_reservation.conf import enforcement

GROUP = 'reservation'

reservation_group = cfg.OptGroup(
    GROUP, title='Reservation options',
    help='Leases of compute capacity: limits, the event engine, and the '
         'credentials the engine uses to act on Nova through its REST API.')

lease_opts = [
    cfg.IntOpt('max_lease_duration', default=30 * 24 * 3600, min=60,
               help='Longest lease a user may ask for, in seconds.'),
    cfg.IntOpt('max_advance', default=0, min=0,
               help='How far in the future a lease may start, in seconds; '
                    '0: no limit (as in Blazar). It also bounds the search '
                    'for the earliest start that fits (search_horizon).'),
    cfg.IntOpt('search_horizon', default=366 * 24 * 3600, min=3600,
               help='How far ahead of now the earliest start that fits is '
                    'searched for, in seconds, for the answer to a refused '
                    'lease (at most max_advance, where that is set).'),
    cfg.IntOpt('max_servers_per_lease', default=100, min=1,
               help='Most servers one boot with lease_params may create.'),
    cfg.ListOpt('default_lease_projects', default=[],
                help='Projects (ids) whose every ordinary boot is a lease '
                     'from now for default_lease_duration, ended with '
                     'default_on_end, so that a lab cloud reclaims what its '
                     'users forget. A boot with lease_params, into a '
                     'reservation, preemptible or onto a forced host is '
                     'not changed.'),
    cfg.StrOpt('default_lease_tag', default='',
               help='A Keystone project tag that makes every ordinary boot '
                    'of a project that carries it a default lease, as '
                    'default_lease_projects does; "<tag>=<N>d" (or h, m) '
                    'gives that project\'s leases their own length. '
                    'Project tags are set by admins only, so a project can '
                    'not drop its own. Each project\'s tags are read with '
                    'the user\'s token at its first boot, and again a '
                    'minute later at most. Empty: tags are not read.'),
    cfg.BoolOpt('owner_trusts', default=True,
                help='Give each lease made with a Keystone token a trust of '
                     'its owner to the engine\'s user (the credentials of '
                     'this section), so that what the engine makes for the '
                     'lease is the owner\'s: the volume a reserved server '
                     'boots from, the image of its end. nova-api needs '
                     'this section\'s credentials too, to know the '
                     'engine\'s user. Off, or without Keystone, the engine '
                     'makes them in its own project.'),
    cfg.IntOpt('default_lease_duration', default=30 * 24 * 3600, min=60,
               help='Seconds a default lease lasts (at most '
                    'max_lease_duration).'),
    cfg.StrOpt('default_on_end', default='delete',
               choices=['delete', 'shelve', 'snapshot', 'none'],
               help='What the end of a default lease does to its servers.'),
    cfg.IntOpt('default_before_end', default=24 * 60, min=0,
               help='Minutes before the end of a default lease at which '
                    'its owner is told (lease.event.before_end_lease); 0, '
                    'or not shorter than the lease: not told.'),
    cfg.StrOpt('freepool_name', default='freepool',
               help='Name of the aggregate that holds the reservable hosts '
                    '(os-hosts). Ordinary boots never land on its hosts.'),
    cfg.IntOpt('quota_vcpus', default=-1, min=-1,
               help='Most vCPUs a project may hold reserved at any instant '
                    '(a whole host counts with all of its vCPUs). -1: no '
                    'limit. A project\'s own limit (PUT /v1/quotas/'
                    '{project_id}) or tag (quota_tag) comes first.'),
    cfg.IntOpt('quota_memory_mb', default=-1, min=-1,
               help='Most MB of RAM a project may hold reserved at any '
                    'instant. -1: no limit.'),
    cfg.IntOpt('quota_hosts', default=-1, min=-1,
               help='Most whole hosts (physical:host reservations) a '
                    'project may hold reserved at any instant. -1: no '
                    'limit.'),
    cfg.IntOpt('quota_vcpu_hours_per_month', default=-1, min=-1,
               help='Most vCPU-hours a project may hold reserved in any '
                    'calendar month (UTC), counting what its leases held '
                    'earlier in the month. -1: no limit.'),
    cfg.Opt('quota_classes', type=types.Dict(value_type=types.Integer(
        min=-1)), default={},
        help='Limits of resource classes beyond vCPU, RAM and disk, as '
             'limit:N pairs: the class\'s name for the most units a project '
             'may hold reserved at any instant, and <class>_hours_per_month '
             'for the most unit-hours in any calendar month (UTC), e.g. '
             '"CUSTOM_GPU_A100:4,CUSTOM_GPU_A100_hours_per_month:500". -1: '
             'no limit; a name that is no such limit (VCPU, lower case) is '
             'ignored. A project\'s own limit or tag comes first.'),
    cfg.StrOpt('quota_tag', default='',
               help='A prefix of Keystone project tags that give a '
                    'project its own reservation quotas: '
                    '"<prefix>:<limit>=<N>", e.g. "reservation-quota:'
                    'vcpus=64" (limits: vcpus, memory_mb, hosts, '
                    'vcpu_hours_per_month, and a class\'s as in '
                    'quota_classes; -1: none). Project tags are set by '
                    'admins only. Empty: tags are not read.'),
    cfg.StrOpt('project_check_on_failure', default='refuse',
               choices=[('refuse', 'the request is refused (503), to be '
                                   'tried again, and nothing is written'),
                        ('accept', 'the project ids are taken unchecked '
                                   'and a warning is logged')],
               help='What a request of the lease API that names another '
                    'project (a quota\'s project, a reservation\'s '
                    'shared_with, a split\'s project_id) does when Keystone '
                    'can not be asked whether that project exists: not '
                    'reached, failing, or neither the caller\'s token nor '
                    'this section\'s credentials may look it up (a cloud '
                    'without Keystone: accept). A project Keystone does not '
                    'know is refused (400) either way.'),
    cfg.IntOpt('boot_grace', default=600, min=0,
               deprecated_for_removal=True,
               deprecated_reason='A future lease\'s servers are no longer '
                                 'booted before the start: they are made '
                                 'reserved and built at the start.',
               help='Not used.'),
]

engine_opts = [
    cfg.IntOpt('before_start_offset', default=0, min=0,
               help='Minutes before a lease starts at which the engine '
                    'sends lease.event.before_start_lease, so that operators '
                    'can prepare capacity. 0: no such notification.'),
    cfg.FloatOpt('engine_poll_interval', default=1.0, min=0.05,
                 help='Longest time in seconds the engine sleeps before it '
                      'looks for new events. It wakes earlier for an event '
                      'that is due.'),
    cfg.IntOpt('host_check_interval', default=30, min=1,
               help='Seconds between two looks for compute nodes that are '
                    'down or disabled, whose future slots the engine moves '
                    'to other nodes.'),
    cfg.IntOpt('engine_workers', default=8, min=1,
               help='Events one engine runs side by side.'),
    cfg.IntOpt('engine_batch', default=200, min=1,
               help='Most due events one engine takes up in one pass.'),
    cfg.IntOpt('event_claim_timeout', default=300, min=5,
               help='Seconds after which a claim on an event that its '
                    'engine did not finish (the engine died) expires, so '
                    'that another engine takes the event over.'),
    cfg.FloatOpt('action_poll_interval', default=1.0, min=0.05,
                 help='Seconds between two looks at a server while an event '
                      'waits for Nova to finish an action on it.'),
    cfg.IntOpt('event_retries', default=3, min=0,
               deprecated_name='start_retries',
               help='How many times a failed event (start, end, bind, ...) '
                    'is retried, with exponential backoff, before its lease '
                    'goes to ERROR.'),
    cfg.FloatOpt('retry_backoff', default=5.0, min=0,
                 help='Seconds before the first retry of a failed event; '
                      'doubles at each retry.'),
    cfg.IntOpt('action_timeout', default=900, min=10,
               help='Seconds an event may wait for Nova to finish an action '
                    'on a server; past them the event and its lease go to '
                    'ERROR with the reason (an admin may retry it).'),
    cfg.IntOpt('reconcile_interval', default=300, min=1,
               help='Seconds between two comparisons of the store with '
                    'Nova by the engine, which repairs what differs: '
                    'leases left CREATING, servers of leases that are '
                    'gone, slots of servers that are gone.'),
    cfg.IntOpt('creating_timeout', default=300, min=10,
               help='Seconds after which a lease still CREATING (nova-api '
                    'stopped between writing it and binding its servers) '
                    'is finished by the engine: its servers are bound, or '
                    'the lease is removed if Nova made none.  Capacity held '
                    'for a lease change that nova-api never finished is '
                    'given back after as long.'),
    cfg.IntOpt('boot_settle_timeout', default=10, min=1,
               help='Longest time in seconds that nova-scheduler takes '
                    'from filtering a server to claiming its resources in '
                    'Placement. A new lease, or a change that adds capacity '
                    'to a lease, waits once written (after '
                    'ledger_max_age) for the boots that Nova was scheduling '
                    'then, at most this long, before it checks that none '
                    'took its last capacity: a boot not claimed by then '
                    'was filtered after the write, or its scheduler is '
                    'stuck. The benchmarks measure the filter-to-claim '
                    'time (under 0.4 s on a 2-core machine); '
                    'raise it for a scheduler that takes longer.'),
    cfg.FloatOpt('ledger_max_age', default=0.5, min=0,
                 help='Seconds by which nova-scheduler\'s copy of the ledger '
                      'may lag the store when it filters an ordinary boot: a '
                      'thread of each scheduler reads what changed twice as '
                      'often, so that the scheduling path does not read the '
                      'database (a boot into a reservation, whose slots the '
                      'boot has just claimed, reads the latest). '
                      'A lease written, or changed to hold more, waits as '
                      'long before its check against the boots in flight, '
                      'so that a boot filtered on an older copy is still '
                      'seen there.  0: the ledger is read at every '
                      'scheduling request.'),
    cfg.FloatOpt('placement_usage_interval', default=5.0, min=0.1,
                 help='Seconds between two reads, by a thread of each '
                      'nova-scheduler, of what Placement counts as used on '
                      'the compute nodes (one request for allocation '
                      'candidates). On a node that holds promises, an '
                      'ordinary boot is kept within both what Nova\'s host '
                      'state and what Placement count as used: Placement '
                      'also counts claims that no compute knows of, such as '
                      'those a boot leaves when its conductor fails after '
                      'claiming. It is also where an ordinary boot that '
                      'asks for a GPU (or any class beyond vCPU, RAM and '
                      'disk) is counted on the nodes whose GPUs are '
                      'promised, with the other boots in flight since the '
                      'read: no request to Placement per node.'),
    cfg.StrOpt('compute_microversion', default='2.91',
               help='Compute API microversion the engine uses (2.91 or '
                    'later: unshelve onto the reserved host).'),
]

preempt_opts = [
    cfg.IntOpt('preempt_notice', default=30, min=0,
               help='Minutes before a lease starts at which the owners of '
                    'the preemptible servers that must leave its nodes are '
                    'told (notification server.preempt.warning and the '
                    'server\'s metadata reservation:preempt_at).'),
    cfg.IntOpt('preempt_margin', default=10, min=1,
               help='Minutes before a lease starts at which the engine '
                    'moves the preemptible servers off its capacity (live '
                    'migration, else cold migration, to a node where they '
                    'take no promise), or shelves or deletes them as each '
                    'asked (on_preempt) where no node holds them. A '
                    'preemptible boot never lands on capacity promised '
                    'from sooner than this.'),
    cfg.IntOpt('preempt_check_interval', default=30, min=1,
               help='Seconds between two looks of the engine at the '
                    'preemptible servers: warnings, evictions, and the '
                    'unshelving of those shelved for capacity once there '
                    'is room again.'),
]

idle_opts = [
    cfg.IntOpt('idle_threshold', default=0, min=0, max=100,
               help='Percent of a running lease\'s reserved vCPUs that its '
                    'servers must use; a lease below it for idle_period is '
                    'idle: the engine sends lease.idle and shows since when '
                    '(idle_since). 0: leases are never idle.'),
    cfg.IntOpt('idle_period', default=60, min=1,
               help='Minutes a running lease must stay below idle_threshold '
                    'to be idle.'),
    cfg.StrOpt('idle_action', default='notify',
               choices=[('notify', 'tell the owner (lease.idle)'),
                        ('release', 'tell the owner, and release the '
                                    'lease\'s unused slots and hosts to '
                                    'the pool')],
               help='What the engine does with an idle lease.'),
    cfg.IntOpt('idle_check_interval', default=60, min=1,
               help='Seconds between two measures of the running leases\' '
                    'use of what they reserved.'),
]

wait_opts = [
    cfg.IntOpt('wait_interval', default=60, min=1,
               help='Seconds between two tries of a waiting lease (if_busy '
                    'wait) that does not give its own retry_interval; the '
                    'engine looks for the waiting leases due this often.'),
]

approval_opts = [
    cfg.IntOpt('approval_vcpus', default=0, min=0,
               help='A lease that reserves more vCPUs than this in all '
                    '(its servers\' and its capacity reservations\') waits '
                    'for an admin\'s approval (PENDING_APPROVAL) before it '
                    'is like any lease. 0: no such threshold.'),
    cfg.IntOpt('approval_hosts', default=0, min=0,
               help='A lease that reserves more whole hosts than this in '
                    'all waits for an admin\'s approval. 0: no such '
                    'threshold.'),
    cfg.Opt('approval_classes', type=types.Dict(value_type=types.Integer(
        min=0)), default={},
        help='Thresholds of resource classes beyond vCPU, RAM and disk, as '
             'class:N pairs: a lease whose servers and capacity '
             'reservations take more units of the class than N in all '
             'waits for an admin\'s approval, e.g. '
             '"CUSTOM_GPU_A100:8,VGPU:16,CUSTOM_BAREMETAL_GOLD:10". 0: no '
             'such threshold.'),
    cfg.IntOpt('approval_duration', default=0, min=0,
               help='A lease longer than this, in seconds, waits for an '
                    'admin\'s approval. 0: no such threshold.'),
    cfg.StrOpt('approval_tag', default='',
               help='A Keystone project tag that makes every lease of a '
                    'project that carries it wait for an admin\'s '
                    'approval, whatever its size. Read as '
                    'default_lease_tag is (with the user\'s token, kept a '
                    'minute); a project whose tags Keystone can not give '
                    'is taken as untagged. Empty: tags are not read for '
                    'this.'),
    cfg.IntOpt('approval_hold', default=24 * 3600, min=60,
               help='Seconds a lease waiting for approval holds its place '
                    'on the ledger; past them (or at its start, if that '
                    'comes first) it is rejected and everything it held is '
                    'released.'),
    cfg.IntOpt('approval_check_interval', default=60, min=1,
               help='Seconds between two looks of the engine for leases '
                    'whose wait for approval is over (approval_hold).'),
]

ALL_OPTS = (lease_opts + engine_opts + preempt_opts + idle_opts + wait_opts +
            approval_opts)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(reservation_group)
    conf.register_opts(ALL_OPTS, group=reservation_group)
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_adapter_conf_options(conf, GROUP)
    conf.set_default('service_type', 'compute', group=GROUP)
    conf.set_default('valid_interfaces', ['internal', 'public'], group=GROUP)
    enforcement.register_opts(conf)


def list_opts() -> list:
    """The options of the sample file (oslo-config-generator)."""
    ks_opts = (ks_loading.get_session_conf_options() +
               ks_loading.get_auth_common_conf_options() +
               ks_loading.get_adapter_conf_options(
                   include_deprecated=False))
    return [(reservation_group, ALL_OPTS + ks_opts)] + \
        enforcement.list_opts()


CONF = cfg.CONF
register_opts(CONF)
