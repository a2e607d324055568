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

"""Which slots of a reservation a split moves into a new lease (pure).

A split moves whole slots (a capacity reservation's, or a host
reservation's hosts) with the servers on them, and changes neither their
nodes nor their times: what the ledger holds on each node at each instant
is the same before and after, so a split can never overbook.
"""

from typing import Iterable, NamedTuple, Optional

from nova_reservation.exception import TooFewToSplit


class Movable(NamedTuple):
    """A slot as a split sees it."""
    id: int
    node: str
    # The server it holds (capacity), or None; a boot's claim or a
    # change's hold in flight is `busy`.
    instance_uuid: Optional[str]
    busy: bool
    # How many servers run on its node in the reservation (hosts).
    servers: int = 0


def choose(slots: Iterable[Movable], amount: int) -> list:
    """The ids of the `amount` slots a split moves: those with no server
    first (a split hands on room before it hands on servers), then those
    with the fewest servers, by id; never one a boot or a change holds in
    flight.  TooFewToSplit if there are not that many, or if all would go (a
    reservation keeps at least one).
    """
    slots = list(slots)
    free = sorted((s for s in slots if not s.busy), key=lambda s: (
        s.instance_uuid is not None, s.servers, s.id))
    if amount >= len(slots):
        raise TooFewToSplit(
            'the reservation has %d; a split leaves it at least '
            'one' % len(slots))
    if len(free) < amount:
        raise TooFewToSplit(
            '%d of its %d can move now (the others are held by '
            'boots or changes in flight); try again' % (
                len(free), len(slots)))
    return [s.id for s in free[:amount]]
