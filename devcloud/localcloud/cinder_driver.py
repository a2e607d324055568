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

"""The local cloud's volume driver: Cinder's own fake driver
(``cinder.tests.fake_driver.FakeLoggingVolumeDriver``: every volume
operation logged, none run), which also answers that it cloned an image
into a volume.  The fake driver's own image-to-volume path copies the
image with ``qemu-img`` and ``dd`` through rootwrap, which the local cloud
does not have; with this, a volume made from an image is ``available`` and
bootable, as it is on a backend that clones images.

A volume whose type has the extra spec ``localcloud:create_seconds``
stays ``creating`` that many seconds: the tests' way to meet what
happens while a backend makes a volume.
"""

import time

from cinder.tests import fake_driver

CREATE_SECONDS = 'localcloud:create_seconds'


class ClonedImageDriver(fake_driver.FakeLoggingVolumeDriver):

    def create_volume(self, volume):
        try:
            specs = volume.volume_type.extra_specs or {}
        except Exception:   # no type, or one deleted meanwhile
            specs = {}
        time.sleep(float(specs.get(CREATE_SECONDS, 0)))
        return super().create_volume(volume)

    def clone_image(self, context, volume, image_location, image_meta,
                    image_service):
        return None, True
