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

"""Building blocks of the schemas."""

NO_CONTROL = r'^[^\u0000-\u001f\u007f]*$'
UUID = {'type': 'string', 'maxLength': 36,
        'pattern': '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
                   '[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$',
        'description': 'a UUID'}
# Spaces, then a character that is no space: each character has one
# place in the pattern, so that matching it is linear in the name's
# length (two unbounded classes around one required character backtrack).
NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': r'^[^\S\u0000-\u001f\u007f]*[^\s\u0000-\u001f\u007f]'
                   r'[^\u0000-\u001f\u007f]*$',
        'description': 'a name of 1 to 255 characters, not only spaces, '
                       'without control characters'}
DATE = {'type': 'string', 'maxLength': 64,
        'pattern': r'^ *[0-9][0-9T:.+ Zz-]*$',
        'description': 'a UTC date "YYYY-MM-DD HH:MM" or an ISO 8601 date '
                       'and time'}
START = {'type': 'string', 'maxLength': 64,
         'pattern': r'^( *[0-9][0-9T:.+ Zz-]*|now)$',
         'description': '"now", a UTC date "YYYY-MM-DD HH:MM" or an ISO '
                        '8601 date and time'}
# The CLIs send numbers as strings ("min": "1"): both are accepted; the
# range is checked where the number is read.
WHOLE = {'type': ['integer', 'string'], 'maxLength': 9, 'minimum': 0,
         'maximum': 10 ** 9, 'pattern': '^ *[0-9]+ *$',
         'description': 'a whole number'}
# Blazar's host requirements: JSON text, or the list itself.
REQUIREMENTS = {'type': ['string', 'array', 'null'], 'maxLength': 4096,
                'maxItems': 64, 'description': 'requirements in Blazar\'s '
                'JSON, such as [">=", "$vcpus", "4"] or ["==", "$traits", '
                '"CUSTOM_GPU"]'}
AFFINITY = {'type': ['boolean', 'string', 'null'],
            'enum': [True, False, None, 'true', 'false', 'True', 'False',
                     'none', 'None', ''],
            'description': 'true, false or none'}


def strict(properties: dict, required=(), **extra) -> dict:
    """An object with these fields and no others."""
    schema = {'type': 'object', 'properties': properties,
              'additionalProperties': False}
    if required:
        schema['required'] = list(required)
    schema.update(extra)
    return schema
