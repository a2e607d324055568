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

"""The ids of what the local cloud was started with (its flavors, its
image, its projects' networks), read through the REST APIs once per test
process: they do not change while the cloud runs, and a CLI costs about a
second of processor to start.  (A test that checks a CLI's view of them
runs that CLI itself.)
"""

from devcloud.localcloud import cloud

# {(collection, name): id}
_FOUND: dict = {}
# (service, path, the answer's key) of each collection.
_COLLECTIONS = {
    'flavors': ('nova', '/flavors', 'flavors'),
    'images': ('image', '/v2/images', 'images'),
    'networks': ('network', '/v2.0/networks', 'networks'),
}


def find(session, collection: str, name: str) -> str:
    """The id of the one item of `collection` named `name`, as the admin
    whose keystoneauth `session` this is sees it.
    """
    if (collection, name) not in _FOUND:
        service, path, key = _COLLECTIONS[collection]
        found = [item['id'] for item in session.get(
            cloud.url(service) + path, params={'name': name}).json()[key]
            if item['name'] == name]
        if len(found) != 1:
            raise LookupError('%d %s named %s' % (len(found), collection,
                                                  name))
        _FOUND[collection, name] = found[0]
    return _FOUND[collection, name]
