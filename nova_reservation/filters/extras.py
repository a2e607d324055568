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

"""The filter's rule for what an ordinary boot asks beyond vCPU, RAM and
disk (a GPU): it leaves each node's promised units of those classes room.

Nova's host states know no such class, so the count is Placement's: the
scheduler's periodic read of every node's tree (`placement_usage.Usage`),
the boots in flight since then counted by their passes (`passes`); a
node that read lacks (no room for a vCPU then, or an Ironic node) is read
on its own.
"""

from typing import Callable, Iterable, Mapping, Optional

from nova_reservation import capacity


def fits(wanted: tuple, promised: Mapping[tuple, float],
         counts: Callable[[], dict], pending: tuple = capacity.NO_EXTRAS,
         apart: Optional[Mapping[str, float]] = None) -> bool:
    """Whether a boot asking for extras `wanted`, with `pending` more in
    use by boots in flight, leaves the `promised` extras room (a
    timeline's `peak_extras` from now on); `counts()`: {class: (capacity,
    used)} of the node's tree, asked only where some of `wanted` is
    promised; `apart`: {class: amount} of that use that the promises
    hold already (the lease servers on the node).
    """
    more = dict(pending)
    found = None
    for key, n in wanted:
        held = promised.get(key)
        if held:
            found = counts() if found is None else found
            total, used = found.get(key[1], (0, 0))
            if apart:
                used = max(used - apart.get(key[1], 0), 0)
            if n + more.get(key, 0) > total - used - held:
                return False
    return True


def lease_extras(slots: Iterable[capacity.Slot], servers) -> dict:
    """{class: amount} that the lease servers among `servers` (the
    uuids Nova's host state has on a node) hold of `slots`' extras.
    """
    found: dict = {}
    for slot in slots:
        if slot.extras and slot.instance_uuid in servers:
            for (_, rc), n in slot.extras:
                found[rc] = found.get(rc, 0) + n
    return found


class Check:
    """The rule for one request: `wanted`, the ledger `view` at `now`
    (`nodes`: those whose slots hold extras from then on), the last read
    of every node (`read`: {root provider uuid: {class: (capacity,
    used)}}), a read of one node now (`read_now(provider, leased)`: the
    same, the lease servers' use left out), and `read_also(classes)`,
    which has the next reads of every node hold the nodes with a unit of
    those classes free (None: none); `kept`: what `Kept` keeps from one
    request to the next.
    """

    def __init__(self, view, nodes: frozenset, wanted: tuple, now: float,
                 read: dict, read_now: Callable[[str, dict], dict],
                 read_also: Optional[Callable], kept: 'Kept') -> None:
        self.view = view
        self.nodes = nodes
        self.wanted = wanted
        self.now = now
        self.read = read
        self.read_now = read_now
        self.read_also = read_also
        self.promised = kept.promised
        self.roomy = kept.roomy

    def __call__(self, host_state, pending: tuple = capacity.NO_EXTRAS,
                 now: Optional[dict] = None) -> bool:
        """Whether the boot fits on `host_state`'s node beside `pending`,
        on the last read or on `now` (`read_node`'s).
        """
        name = host_state.nodename
        if name not in self.nodes or (
                name in self.roomy and not pending and now is None):
            return True
        timeline = self.view.timelines[name]
        promised = self.promised.get(name)
        if promised is None:
            promised = self.promised[name] = timeline.peak_extras(
                self.now, capacity.FOREVER)
        if now is not None:
            return fits(self.wanted, promised, lambda: now, pending)
        found = self.read.get(host_state.uuid)
        if found is None:
            if self.read_also is not None:
                # Once a request: the next reads hold such nodes.
                self.read_also(rc for (_, rc), _ in self.wanted)
                self.read_also = None
            return fits(self.wanted, promised,
                        lambda: self.read_node(host_state), pending)
        if fits(self.wanted, promised, lambda: found, pending):
            if not pending:
                self.roomy.add(name)
            return True
        # The last read counts the lease servers as used, which the
        # promises hold too: taken out only for a second look.
        return fits(self.wanted, promised, lambda: found, pending,
                    lease_extras(timeline.slots(), host_state.instances or ()))

    def read_node(self, host_state) -> Optional[dict]:
        """The node's count now, the lease servers' use left out (None
        where its extras are not promised: never asked for).
        """
        if host_state.nodename not in self.nodes:
            return None
        return self.read_now(host_state.uuid, self.view.bound)


class Kept:
    """What the checks of one filter keep from one request to the next:
    each node's promised extras from now on (`promised`), while the
    ledger's peaks are the same (no timeline changes in that stretch of
    time), and the nodes where a boot of the same extras fits on the same
    read (`roomy`).
    """

    def __init__(self) -> None:
        self._peaks = self._read = self._wanted = None
        self.promised: dict = {}
        self.roomy: set = set()

    def check(self, view, peaks: dict, nodes: frozenset, wanted: tuple,
              now: float, read: dict,
              read_now: Callable[[str, dict], dict],
              read_also: Optional[Callable] = None) -> Check:
        """The `Check` of a request on `view` (its `peaks` at `now`)."""
        if peaks is not self._peaks:
            self._peaks, self.promised, self._read = peaks, {}, None
        if read is not self._read or wanted != self._wanted:
            self._read, self._wanted, self.roomy = read, wanted, set()
        return Check(view, nodes, wanted, now, read, read_now, read_also,
                     self)
