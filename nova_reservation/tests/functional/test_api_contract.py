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

"""The lease API's HTTP contract: the YAML files in ``gabbits/``, one per
feature, each run in order against an embedded cloud of its own (see
`gabbi_fixtures`)."""

import os

from gabbi import driver

from nova_reservation.tests.functional import gabbi_fixtures

GABBITS = os.path.join(os.path.dirname(__file__), 'gabbits')


def load_tests(loader, tests, pattern):
    """The tests of every YAML file (unittest's load_tests protocol)."""
    return driver.build_tests(
        GABBITS, loader, intercept=gabbi_fixtures.nova_api,
        fixture_module=gabbi_fixtures,
        inner_fixtures=[gabbi_fixtures.EngineKeepsUp],
        test_loader_name=__name__)
