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

"""The published description is the API's own: same routes, same schemas."""

import glob
import os
import re
import unittest

import jsonschema
import schemathesis

from nova_reservation import api
from nova_reservation.api import openapi

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')
REPO_COPY = os.path.join(ROOT, 'doc', 'openapi.json')


class OpenAPITest(unittest.TestCase):

    def test_the_repository_copy_is_current(self):
        with open(REPO_COPY) as f:
            self.assertEqual(openapi.text(api.ROUTES), f.read(),
                             'run: python -m nova_reservation.api '
                             '> doc/openapi.json')

    def test_every_route_is_described(self):
        doc = openapi.document(api.ROUTES)
        described = {(m.upper(), p) for p, ops in doc['paths'].items()
                     for m in ops}
        self.assertEqual({(m, openapi.template(p)) for m, p, _ in
                          api.ROUTES}, described)

    def test_every_route_is_in_the_api_reference(self):
        # api-ref/ names path parameters for readers ({lease_id}); the
        # routes' names are shorter ({id}).
        found = set()
        for path in glob.glob(os.path.join(ROOT, 'api-ref', 'source',
                                           '*.inc')):
            with open(path) as f:
                found.update(re.findall(
                    r'^\.\. rest_method:: (\w+) (\S+)$', f.read(), re.M))

        def shape(path: str) -> str:
            return re.sub(r'\{[^}]*\}', '{}', path)
        self.assertEqual(
            {(m, shape(openapi.template(p))) for m, p, _ in api.ROUTES
             if p != api.OPENAPI_PATH},
            {(m, shape(p)) for m, p in found})

    def test_it_loads_and_its_schemas_are_valid(self):
        doc = openapi.document(api.ROUTES)
        schema = schemathesis.openapi.from_dict(doc)
        operations = [r.ok() for r in schema.get_all_operations()]
        self.assertEqual(len(api.ROUTES), len(operations))
        for ops in doc['paths'].values():
            for op in ops.values():
                body = op.get('requestBody')
                if body:
                    jsonschema.Draft202012Validator.check_schema(
                        body['content']['application/json']['schema'])
