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

from nova_reservation import compat

# The unit tests run on native threads: Nova 31 and 32 would patch the
# process with eventlet at the first import of their API package, in the
# middle of a run, with threads of earlier tests alive; and 32 would then
# ask oslo.service for threads after another import took its default.
os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = '1'
compat.init_threads()
