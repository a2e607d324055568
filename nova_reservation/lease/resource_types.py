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

"""The kinds of reservation a lease holds, by name, as Blazar names them;
what differs between them is each kind's class (`lease.kinds`).
"""

# The servers of a boot with lease_params: each holds its own slot.
SERVER = 'server'
# Capacity on the shared pool, of a flavor's size.
FLAVOR = 'flavor:instance'
# Capacity on the shared pool, of a given size.
VIRTUAL = 'virtual:instance'
# Whole reservable hosts, in an aggregate of the lease's own.
HOST = 'physical:host'
# Floating IP addresses of an external network that an admin registered
# (/v1/floatingips); at the start they become floating IPs of the
# lease's project in Neutron.
FLOATINGIP = 'virtual:floatingip'
# An admin's maintenance window: the named nodes held whole over the
# lease, their compute services disabled while it runs
# (`nova_reservation.lease.maintenance`).
MAINTENANCE = 'maintenance'
