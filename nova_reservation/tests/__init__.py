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

import os

# Hypothesis loads the plugins other packages register; trio's (installed
# for the browser tests' driver) does not import once eventlet has patched
# the socket module.  The tests use none.
os.environ.setdefault('HYPOTHESIS_NO_PLUGINS', '1')
