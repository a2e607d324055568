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

"""Tables of nova-reservation, kept in Nova's API database.

Every name carries the ``rsv_`` prefix so that it can not meet one of
Nova's own tables.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

# Sub-second precision on MySQL/MariaDB: events run on time, not on the
# second.
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


class Base(orm.DeclarativeBase):
    pass


class Lease(Base):
    __tablename__ = 'rsv_leases'
    __table_args__ = (sa.UniqueConstraint(
        'project_id', 'client_token', name='rsv_leases_client_token_uc'),)
    id = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
    user_id = sa.Column(sa.String(255))
    start_at = sa.Column(Timestamp, nullable=False)
    end_at = sa.Column(Timestamp, nullable=False)
    status = sa.Column(sa.String(32), nullable=False)
    status_reason = sa.Column(sa.Text)
    on_end = sa.Column(sa.String(16), nullable=False, default='delete')
    before_end_minutes = sa.Column(sa.Integer)
    created_at = sa.Column(Timestamp, nullable=False)
    updated_at = sa.Column(Timestamp)
    # Bumped by every change: updates are conditional on it.
    version = sa.Column(sa.Integer, nullable=False, default=0)
    degraded = sa.Column(sa.Boolean, nullable=False, default=False)
    # Since when its servers use less than `idle_threshold` of it, and the
    # start of the idle stretch its owner was told of.
    idle_since = sa.Column(Timestamp)
    idle_told = sa.Column(Timestamp)
    # A create retried with the same token gives this lease, if it asks
    # for the same (its request's digest).
    client_token = sa.Column(sa.String(64))
    request_digest = sa.Column(sa.String(64))
    # The owner's Keystone trust to the engine (`trusts`), if it has one.
    trust_id = sa.Column(sa.String(64))
    # on_end extend_if_free: how many times it may be, and was, extended
    # (None: never).
    max_extensions = sa.Column(sa.Integer)
    extensions = sa.Column(sa.Integer)
    # if_busy wait (None: refused when it does not fit): where it may
    # start, how many tries it has and had, and when it is tried next.
    if_busy = sa.Column(sa.String(16))
    flexible_start = sa.Column(sa.Boolean)
    start_now = sa.Column(sa.Boolean)
    start_before = sa.Column(Timestamp)
    retries = sa.Column(sa.Integer)
    retry_interval = sa.Column(sa.Integer)
    tries = sa.Column(sa.Integer)
    next_try_at = sa.Column(Timestamp)
    # A recurring lease: its series (the first occurrence's id) and its
    # place in it (0 for the first); None for a lease that does not recur.
    series_id = sa.Column(sa.String(36), index=True)
    occurrence = sa.Column(sa.Integer)


class Reservation(Base):
    __tablename__ = 'rsv_reservations'
    id = sa.Column(sa.String(36), primary_key=True)
    lease_id = sa.Column(sa.String(36), sa.ForeignKey('rsv_leases.id'),
                         nullable=False, index=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    resource_type = sa.Column(sa.String(32), nullable=False)
    flavor_id = sa.Column(sa.String(255))
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    disk_gb = sa.Column(sa.Integer, nullable=False)
    amount = sa.Column(sa.Integer, nullable=False)
    # The traits its slots' nodes have (X) or lack (!X), comma-separated.
    traits = sa.Column(sa.Text)
    # What each of its slots holds beyond vcpus, memory_mb and disk_gb
    # (as `Slot.extras`); NULL: nothing.
    extras = sa.Column(sa.Text)
    status = sa.Column(sa.String(32), nullable=False)
    generation = sa.Column(sa.BigInteger, nullable=False, index=True)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    # physical:host
    min_count = sa.Column(sa.Integer)
    max_count = sa.Column(sa.Integer)
    hypervisor_properties = sa.Column(sa.Text)
    resource_properties = sa.Column(sa.Text)
    before_end = sa.Column(sa.String(32))
    aggregate_id = sa.Column(sa.Integer)
    # The server group of an instance reservation with an affinity, and
    # its private flavor (the project gets it at the start).
    server_group_id = sa.Column(sa.String(36))
    private_flavor_id = sa.Column(sa.String(255))
    # flavor:instance and virtual:instance
    affinity = sa.Column(sa.Boolean)
    # virtual:floatingip: the external network, and the addresses asked
    # for by name (a JSON list).
    network_id = sa.Column(sa.String(36))
    required_floatingips = sa.Column(sa.Text)
    # The other projects that may boot into it (a JSON list, sorted), and
    # whether ordinary boots use it unasked ('open'; None: 'targeted').
    shared_with = sa.Column(sa.Text)
    matching = sa.Column(sa.String(16))
    # maintenance: the nodes it holds whole (a JSON list), and why.
    hosts = sa.Column(sa.Text)
    reason = sa.Column(sa.String(255))
    # The servers it could not move off its nodes ([{server_id, node,
    # reason}], JSON).
    unmoved_servers = sa.Column(sa.Text)
    created_at = sa.Column(Timestamp)
    updated_at = sa.Column(Timestamp)


class Slot(Base):
    """The capacity ledger: one slot on one node over [start_at, end_at)."""
    __tablename__ = 'rsv_allocations'
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    reservation_id = sa.Column(sa.String(36),
                               sa.ForeignKey('rsv_reservations.id'),
                               nullable=False, index=True)
    node = sa.Column(sa.String(255), nullable=False)
    host = sa.Column(sa.String(255))
    start_at = sa.Column(Timestamp, nullable=False)
    end_at = sa.Column(Timestamp, nullable=False)
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    disk_gb = sa.Column(sa.Integer, nullable=False)
    instance_uuid = sa.Column(sa.String(36))
    # What it holds of other resource classes ([[provider, class, amount]],
    # JSON, provider '' the node's root; `db.ledger.extras_column`); NULL:
    # nothing.
    extras = sa.Column(sa.Text)
    generation = sa.Column(sa.BigInteger, nullable=False, index=True)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)


class LedgerState(Base):
    """One row: the ledger's generation, bumped by every ledger write.

    Writers that must not act on a stale view change it with a
    compare-and-swap; readers fetch only rows newer than the generation
    they hold.
    """
    __tablename__ = 'rsv_ledger'
    id = sa.Column(sa.Integer, primary_key=True)
    generation = sa.Column(sa.BigInteger, nullable=False)
    # Set once per store: a copy of another store's ledger is never
    # mistaken for a copy of this one.
    epoch = sa.Column(sa.String(36), nullable=False)


class Event(Base):
    __tablename__ = 'rsv_events'
    __table_args__ = (sa.Index('rsv_events_status_due_idx',
                               'status', 'due_at'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    # The id the API shows, as Blazar's events have.
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    lease_id = sa.Column(sa.String(36), sa.ForeignKey('rsv_leases.id'),
                         nullable=False, index=True)
    event_type = sa.Column(sa.String(32), nullable=False)
    due_at = sa.Column(Timestamp, nullable=False)
    status = sa.Column(sa.String(16), nullable=False)
    claimed_by = sa.Column(sa.String(255))
    claim_expires = sa.Column(Timestamp)
    attempts = sa.Column(sa.Integer, nullable=False, default=0)
    last_error = sa.Column(sa.Text)
    created_at = sa.Column(Timestamp)
    updated_at = sa.Column(Timestamp)
    # When the event was meant to run (due_at moves while an action waits
    # on Nova), first ran and finished; `runs`: completions (exactly 1).
    scheduled_at = sa.Column(Timestamp)
    started_at = sa.Column(Timestamp)
    finished_at = sa.Column(Timestamp)
    runs = sa.Column(sa.Integer, nullable=False, default=0)


class Notice(Base):
    """A notification of an event, written with the event's outcome and
    deleted once sent: a store or broker outage can not lose it.
    """
    __tablename__ = 'rsv_notices'
    id = sa.Column(sa.String(36), primary_key=True)
    lease_id = sa.Column(sa.String(36), nullable=False)
    event_type = sa.Column(sa.String(64), nullable=False)
    payload = sa.Column(sa.Text, nullable=False)
    created_at = sa.Column(Timestamp, nullable=False, index=True)
    # The engine sending it; past `claim_expires` any engine may send it.
    claimed_by = sa.Column(sa.String(255))
    claim_expires = sa.Column(Timestamp, index=True)


class Turn(Base):
    """Recurring work that one engine at a time does (the reconciler's
    repairs): the engine whose turn it is, until when.
    """
    __tablename__ = 'rsv_turns'
    name = sa.Column(sa.String(64), primary_key=True)
    engine = sa.Column(sa.String(255), nullable=False)
    until = sa.Column(Timestamp, nullable=False)


class Pass(Base):
    """A promised node that a scheduler let an ordinary boot onto, with
    what the boot takes: counted by the other schedulers until the boot
    has claimed in Placement (`nova_reservation.filters.passes`).
    """
    __tablename__ = 'rsv_passes'
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)
    node = sa.Column(sa.String(255), nullable=False)
    vcpus = sa.Column(sa.Float, nullable=False)
    memory_mb = sa.Column(sa.Float, nullable=False)
    disk_gb = sa.Column(sa.Float, nullable=False)
    # Beyond those, as a slot's (`db.ledger.extras_column`); NULL: none.
    extras = sa.Column(sa.Text)
    created_at = sa.Column(Timestamp, nullable=False, index=True)


class Lock(Base):
    """A row that writers who must decide one after the other update
    first (a write, so that Galera's certification orders writers on
    different nodes too).
    """
    __tablename__ = 'rsv_locks'
    name = sa.Column(sa.String(64), primary_key=True)
    taken = sa.Column(sa.BigInteger, nullable=False)


class ServerBinding(Base):
    """A server of a lease made by a boot with lease_params."""
    __tablename__ = 'rsv_server_bindings'
    instance_uuid = sa.Column(sa.String(36), primary_key=True)
    lease_id = sa.Column(sa.String(36), sa.ForeignKey('rsv_leases.id'),
                         nullable=False, index=True)
    reservation_id = sa.Column(sa.String(36), nullable=False)
    state = sa.Column(sa.String(32), nullable=False)
    image_id = sa.Column(sa.String(36))
    # The server's project, where it is not the lease's (a shared
    # reservation's); None: the lease's.
    project_id = sa.Column(sa.String(255))


class Preemptible(Base):
    """A server that may use capacity promised to leases that have not
    started, until the engine moves it off (`status.PREEMPTIBLE`).
    """
    __tablename__ = 'rsv_preemptibles'
    instance_uuid = sa.Column(sa.String(36), primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    on_preempt = sa.Column(sa.String(16), nullable=False)
    state = sa.Column(sa.String(32), nullable=False)
    # The node the engine last saw it on, and when that node stops
    # holding it (None: never, as far as the ledger knows).
    node = sa.Column(sa.String(255))
    deadline = sa.Column(Timestamp)
    # The deadline its owner was told of.
    warned_for = sa.Column(Timestamp)
    # The last step of its eviction asked of Nova (live, cold, shelve).
    action = sa.Column(sa.String(16))
    claimed_by = sa.Column(sa.String(255))
    claim_expires = sa.Column(Timestamp)
    created_at = sa.Column(Timestamp, nullable=False)
    updated_at = sa.Column(Timestamp)


class Host(Base):
    """A compute node enrolled in the reservable pool (os-hosts)."""
    __tablename__ = 'rsv_hosts'
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    hypervisor_hostname = sa.Column(sa.String(255), nullable=False,
                                    unique=True)
    service_name = sa.Column(sa.String(255), nullable=False)
    hypervisor_type = sa.Column(sa.String(255))
    hypervisor_version = sa.Column(sa.BigInteger)
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    local_gb = sa.Column(sa.Integer, nullable=False)
    cpu_info = sa.Column(sa.Text)
    extra_capabilities = sa.Column(sa.Text, nullable=False, default='{}')
    reservable = sa.Column(sa.Boolean, nullable=False, default=True)
    created_at = sa.Column(Timestamp, nullable=False)
    updated_at = sa.Column(Timestamp)


class HostProperty(Base):
    """An extra capability of the reservable hosts that only admins see
    (`private`), as Blazar's resource properties.
    """
    __tablename__ = 'rsv_host_properties'
    name = sa.Column(sa.String(64), primary_key=True)
    private = sa.Column(sa.Boolean, nullable=False, default=False)
    updated_at = sa.Column(Timestamp, nullable=False)


class FloatingIP(Base):
    """An address of an external network that leases may take
    (/v1/floatingips); the ledger's slots of it are on its node
    (`floatingips.node_of`).
    """
    __tablename__ = 'rsv_floatingips'
    __table_args__ = (sa.UniqueConstraint(
        'floating_network_id', 'floating_ip_address',
        name='rsv_floatingips_address_uc'),)
    id = sa.Column(sa.String(36), primary_key=True)
    floating_network_id = sa.Column(sa.String(36), nullable=False)
    subnet_id = sa.Column(sa.String(36), nullable=False)
    floating_ip_address = sa.Column(sa.String(64), nullable=False)
    reservable = sa.Column(sa.Boolean, nullable=False, default=True)
    created_at = sa.Column(Timestamp, nullable=False)
    updated_at = sa.Column(Timestamp)


class Quota(Base):
    """A project's own limit of its reservations (`quotas.is_limit`), set
    by an admin: above the Keystone tag's and the cloud's default.
    """
    __tablename__ = 'rsv_quotas'
    project_id = sa.Column(sa.String(64), primary_key=True)
    name = sa.Column(sa.String(255), primary_key=True)
    most = sa.Column(sa.BigInteger, nullable=False)
    updated_at = sa.Column(Timestamp, nullable=False)
