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

"""The states of leases, events and server bindings, and the moves between
them, written once.

The store writes a state only through `Machine.sources`: an UPDATE that
sets state ``new`` applies only to rows in a state from which ``new`` may
be reached, so that a late or repeated write (an engine's outcome after the
lease was deleted, a start after the end) changes nothing.
"""

from typing import Iterable


class Machine:
    """A set of states and the allowed moves between them."""

    def __init__(self, name: str, moves: dict, initial: Iterable[str]
                 ) -> None:
        self.name = name
        self.moves = {state: frozenset(to) for state, to in moves.items()}
        self.initial = frozenset(initial)
        unknown = set().union(*self.moves.values()) - set(self.moves)
        assert not unknown, unknown

    def can(self, old: str, new: str) -> bool:
        """Whether ``old -> new`` is allowed (staying put always is)."""
        return old == new or new in self.moves.get(old, ())

    def sources(self, new: str) -> tuple:
        """The states a row may be in for a write of `new` to apply."""
        if new not in self.moves:
            raise ValueError('%s is not a %s state' % (new, self.name))
        return tuple(sorted(s for s in self.moves if self.can(s, new)))


# Leases: Blazar's statuses, so that its clients understand them.
CREATING, PENDING, ACTIVE = 'CREATING', 'PENDING', 'ACTIVE'
# A lease that did not fit and waits for room (if_busy wait), and one
# whose wait ended without room: neither holds anything.
WAITING, REFUSED = 'WAITING', 'REFUSED'
# A lease above an operator's thresholds (`approval`): it holds its slots
# until an admin approves it (PENDING) or rejects it, or its wait is over.
PENDING_APPROVAL = 'PENDING_APPROVAL'
TERMINATED, ERROR, DELETING, DELETED = ('TERMINATED', 'ERROR', 'DELETING',
                                        'DELETED')
# Blazar's other transitional statuses: never written here, but a lease in
# one (a store shared with Blazar's tools) can still end or go.
STARTING, UPDATING, TERMINATING = 'STARTING', 'UPDATING', 'TERMINATING'
LEASE = Machine('lease', {
    # nova-api writes a boot's lease, then binds its servers.
    CREATING: {PENDING, ACTIVE, WAITING, PENDING_APPROVAL, ERROR, DELETING,
               DELETED},
    # Approved, or rejected (or expired): deleting releases it all.
    PENDING_APPROVAL: {PENDING, DELETING},
    # Placed by the engine (PENDING, its start due), or refused.
    WAITING: {PENDING, REFUSED, DELETING},
    REFUSED: {DELETING},
    PENDING: {ACTIVE, ERROR, TERMINATED, DELETING},
    STARTING: {ACTIVE, ERROR, DELETING},
    UPDATING: {PENDING, ACTIVE, ERROR, DELETING},
    ACTIVE: {TERMINATED, ERROR, DELETING},
    TERMINATING: {TERMINATED, ERROR, DELETING},
    # An admin's retry puts it back where it was.
    ERROR: {PENDING, ACTIVE, TERMINATED, DELETING},
    TERMINATED: {DELETING},
    # Deleting again makes the engine's end due again.
    DELETING: {DELETED},
    DELETED: set(),
}, initial=(CREATING, PENDING, WAITING, PENDING_APPROVAL))
# A lease whose servers the engine may still act on.
LIVE = (CREATING, WAITING, PENDING, PENDING_APPROVAL, STARTING, UPDATING,
        ACTIVE, TERMINATING, ERROR)
FINISHED = (REFUSED, TERMINATED, DELETING, DELETED)

# A reservation's status follows its lease's, in Blazar's words (pending,
# then active, then deleted once the lease is over).
RESERVATION_PENDING, RESERVATION_ACTIVE = 'pending', 'active'
RESERVATION_DELETED, RESERVATION_ERROR = 'deleted', 'error'
RESERVATION_OF_LEASE = {
    CREATING: RESERVATION_PENDING, WAITING: RESERVATION_PENDING,
    REFUSED: RESERVATION_DELETED, PENDING: RESERVATION_PENDING,
    PENDING_APPROVAL: RESERVATION_PENDING,
    STARTING: RESERVATION_PENDING, UPDATING: RESERVATION_PENDING,
    ACTIVE: RESERVATION_ACTIVE, TERMINATING: RESERVATION_ACTIVE,
    TERMINATED: RESERVATION_DELETED, DELETING: RESERVATION_DELETED,
    DELETED: RESERVATION_DELETED, ERROR: RESERVATION_ERROR}

# Events.
UNDONE, IN_PROGRESS, DONE = 'UNDONE', 'IN_PROGRESS', 'DONE'
EVENT = Machine('event', {
    UNDONE: {IN_PROGRESS},
    # Handed back (to wait on Nova, or a retry), finished, or taken over.
    IN_PROGRESS: {UNDONE, DONE, ERROR},
    ERROR: {UNDONE},
    DONE: set(),
}, initial=(UNDONE,))
UNFINISHED = (UNDONE, IN_PROGRESS)

# Servers of a lease (rsv_server_bindings).
BOOTING, RESERVED, UNSHELVING, ENDED, FAILED = (
    'BOOTING', 'RESERVED', 'UNSHELVING', 'ENDED', 'FAILED')
BINDING = Machine('binding', {
    BOOTING: {ACTIVE, RESERVED, FAILED, ENDED},
    RESERVED: {UNSHELVING, ACTIVE, ENDED},
    UNSHELVING: {ACTIVE, RESERVED, ENDED},
    ACTIVE: {RESERVED, FAILED, ENDED},
    # A server that failed holds no slot; it still gets the end action.
    FAILED: {ENDED},
    ENDED: set(),
}, initial=(BOOTING,))


# What the views show of a lease before its start, and of its servers
# until then (Nova's own state of such a server is shelved_offloaded).
SHOWN_RESERVED = 'RESERVED'
# An ordinary server booted instead of into a reservation it named.
SHOWN_ORDINARY = 'ORDINARY'


def made(started: bool, waits: bool, approval: bool = False) -> tuple:
    """(lease status, binding state) of a boot's lease and servers once
    Nova made them: a waiting lease's servers, and a future lease's (one
    that waits for `approval` too), are reserved.
    """
    if approval:
        return PENDING_APPROVAL, RESERVED
    if waits:
        return WAITING, RESERVED
    if started:
        return ACTIVE, BOOTING
    return PENDING, RESERVED


# Preemptible servers (rsv_preemptibles): running where the engine last saw
# them, being moved off promised capacity, or shelved for want of room.
RUNNING, EVICTING, SHELVED = 'RUNNING', 'EVICTING', 'SHELVED'
PREEMPTIBLE = Machine('preemptible', {
    RUNNING: {EVICTING},
    # Moved (running again), shelved, or taken over by another engine.
    EVICTING: {RUNNING, SHELVED},
    # Unshelved once a node holds it again.
    SHELVED: {UNSHELVING},
    UNSHELVING: {RUNNING, SHELVED},
}, initial=(RUNNING,))
