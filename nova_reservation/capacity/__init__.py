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

"""Capacity math of the ledger: pure functions and values, no I/O.

Times are float seconds since the epoch (UTC).  A node's promised usage
over time is its `timeline.Timeline`; this package says what fits where
and when on nodes and their timelines: the values (`amounts`), where
slots fit over an interval (`fit`), and when (`search`).  Its users name
them from here; one server on a node's provider tree is `tree`'s.
"""

from nova_reservation.capacity.amounts import absent  # noqa: F401
from nova_reservation.capacity.amounts import assures  # noqa: F401
from nova_reservation.capacity.amounts import counted  # noqa: F401
from nova_reservation.capacity.amounts import extra_count  # noqa: F401
from nova_reservation.capacity.amounts import extra_room  # noqa: F401
from nova_reservation.capacity.amounts import extras  # noqa: F401
from nova_reservation.capacity.amounts import extras_scaled  # noqa: F401
from nova_reservation.capacity.amounts import extras_sum  # noqa: F401
from nova_reservation.capacity.amounts import extras_text  # noqa: F401
from nova_reservation.capacity.amounts import extras_within  # noqa: F401
from nova_reservation.capacity.amounts import FOREVER  # noqa: F401
from nova_reservation.capacity.amounts import has_traits  # noqa: F401
from nova_reservation.capacity.amounts import Host  # noqa: F401
from nova_reservation.capacity.amounts import INSTANT  # noqa: F401
from nova_reservation.capacity.amounts import may_hold  # noqa: F401
from nova_reservation.capacity.amounts import Need  # noqa: F401
from nova_reservation.capacity.amounts import need_of  # noqa: F401
from nova_reservation.capacity.amounts import NO_EXTRAS  # noqa: F401
from nova_reservation.capacity.amounts import Placed  # noqa: F401
from nova_reservation.capacity.amounts import RESOURCE_CLASSES  # noqa: F401
from nova_reservation.capacity.amounts import Resources  # noqa: F401
from nova_reservation.capacity.amounts import root_extras  # noqa: F401
from nova_reservation.capacity.amounts import Slot  # noqa: F401
from nova_reservation.capacity.amounts import takes  # noqa: F401
from nova_reservation.capacity.amounts import used_share  # noqa: F401
from nova_reservation.capacity.amounts import ZERO  # noqa: F401
from nova_reservation.capacity.fit import _score  # noqa: F401
from nova_reservation.capacity.fit import fits  # noqa: F401
from nova_reservation.capacity.fit import fits_for_good  # noqa: F401
from nova_reservation.capacity.fit import free_counts  # noqa: F401
from nova_reservation.capacity.fit import held_until  # noqa: F401
from nova_reservation.capacity.fit import how_many  # noqa: F401
from nova_reservation.capacity.fit import plan  # noqa: F401
from nova_reservation.capacity.fit import plan_hosts  # noqa: F401
from nova_reservation.capacity.fit import plan_units  # noqa: F401
from nova_reservation.capacity.fit import plan_whole  # noqa: F401
from nova_reservation.capacity.search import earliest_fit  # noqa: F401
from nova_reservation.capacity.search import earliest_start  # noqa: F401
from nova_reservation.capacity.search import latest_start  # noqa: F401
from nova_reservation.capacity.search import windows  # noqa: F401
