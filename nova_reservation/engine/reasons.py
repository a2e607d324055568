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


"""What a lease's reason says of its servers (pure).

A reason becomes the lease's, which its owner sees: a server of a project
the reservation is shared with is named by its project, without its id or
fault, as Nova shows no project another's servers; no reason names a node
(Nova names them to admins only).
"""


def owners(lease, binding) -> bool:
    """Whether the server of `binding` is of the lease's own project."""
    return (binding.project_id or lease.project_id) == lease.project_id


def named(lease, binding, server: dict) -> str:
    return ('server %s' % server['id'] if owners(lease, binding) else
            'a server of project %s' % binding.project_id)


def fault(lease, binding, server: dict) -> str:
    """': <Nova's fault of the server>', to its owner only."""
    if not owners(lease, binding):
        return ''
    return ': %s' % (server.get('fault') or {}).get('message',
                                                    'no reason given')


def failed(lease, binding, server: dict) -> str:
    """The reason of a server in ERROR."""
    if not owners(lease, binding):
        return '%s in lease %s is in ERROR' % (
            named(lease, binding, server), lease.name)
    return 'server %s of lease %s is in ERROR%s' % (
        server['id'], lease.name, fault(lease, binding, server))
