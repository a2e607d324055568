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

"""The store the benchmarks read: Nova API database tables of
nova-reservation in an SQLite file, filled with `data.cloud`.
"""

from nova import conf as nova_conf
from nova import config as nova_config
from nova.db.api import api as nova_api_db
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import uuidutils
import sqlalchemy as sa

from benchmarks import data
from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import models

CONF = nova_conf.CONF
# Ledger rows go in with fixed-size batches.
BATCH = 5000


_CONFIGURED = []


def configure() -> None:
    """Nova's configuration, as a Nova service parses it (no file)."""
    if not _CONFIGURED:
        nova_config.parse_args(['benchmark'], configure_db=False,
                               init_rpc=False)
        _CONFIGURED.append(True)


def use(path: str) -> None:
    """Point Nova's API database (and so the store) at an SQLite file."""
    CONF.set_override('connection', 'sqlite:///%s' % path,
                      group='api_database')
    # A facade is configured once: a new one for each store.
    nova_api_db.context_manager = enginefacade.transaction_context()
    nova_api_db.configure(CONF)


def fill(path: str, hosts: int, allocations: int,
         enroll_free: bool = False, classes: int = 3) -> None:
    """The ledger of `allocations` slots on `hosts` nodes, all future, in
    an SQLite file; `enroll_free`: the nodes without slots are reservable
    hosts; `classes`: as `data.cloud`.
    """
    engine = sa.create_engine('sqlite:///%s' % path)
    models.Base.metadata.create_all(engine)
    fill_engine(engine, hosts, allocations, enroll_free, classes)
    engine.dispose()


def fill_engine(engine: sa.engine.Engine, hosts: int, allocations: int,
                enroll_free: bool = False, classes: int = 3) -> None:
    """`fill` on the store's tables behind `engine` (made already)."""
    cloud = data.cloud(hosts, allocations, classes=classes)
    now = db_api.utcnow()

    with engine.begin() as conn:
        conn.execute(models.LedgerState.__table__.delete())
        conn.execute(models.LedgerState.__table__.insert(), [dict(
            id=1, generation=1, epoch=uuidutils.generate_uuid())])
        lease = dict(id='lease', name='bench', project_id='p',
                     start_at=now, end_at=now, status='PENDING',
                     on_end='delete', created_at=now, version=0,
                     degraded=False)
        conn.execute(models.Lease.__table__.insert(), [lease])
        reservations = sorted({a.reservation_id for a in cloud.allocations})
        if reservations:
            conn.execute(models.Reservation.__table__.insert(), [dict(
                id=r, lease_id='lease', project_id='p',
                resource_type='flavor:instance', vcpus=2, memory_mb=4096,
                disk_gb=40, amount=10, status='pending', generation=1,
                deleted=False) for r in reservations])
        rows = [dict(id=a.id, reservation_id=a.reservation_id, node=a.node,
                     host=a.node, start_at=epoch.from_epoch(a.start),
                     end_at=epoch.from_epoch(a.end),
                     vcpus=a.resources.vcpus,
                     memory_mb=a.resources.memory_mb,
                     disk_gb=a.resources.disk_gb,
                     extras=db_ledger.extras_column(a.extras), generation=1,
                     deleted=False) for a in cloud.allocations]
        for i in range(0, len(rows), BATCH):
            conn.execute(models.Slot.__table__.insert(),
                         rows[i:i + BATCH])
        if enroll_free:
            busy = {a.node for a in cloud.allocations}
            conn.execute(models.Host.__table__.insert(), [dict(
                hypervisor_hostname=h.node, service_name=h.node,
                hypervisor_type='fake', hypervisor_version=1,
                vcpus=h.capacity.vcpus, memory_mb=h.capacity.memory_mb,
                local_gb=h.capacity.disk_gb, extra_capabilities='{}',
                reservable=True, created_at=now)
                for h in cloud.hosts if h.node not in busy])
