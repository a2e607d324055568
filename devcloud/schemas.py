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

"""The ``jsonschema`` module as the services of a process that builds cloud
after cloud see it: what they do again at each request with the same
schema or validator, done once per process (in the harness only; every
request is still validated as before).
"""

import types

import jsonschema


class _Module(types.ModuleType):
    """A stand-in for the module `real`: what it does not define is the
    real module's.
    """

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__)
        self._real = real

    def __getattr__(self, name: str):
        return getattr(self._real, name)


class PlacementSchemas(_Module):
    """The ``jsonschema`` module as Placement's request handling sees it:
    its ``validate`` checks each schema against its metaschema once per
    process, not at every request (Placement validates every body and
    query string with ``jsonschema.validate``, whose check of the schema
    itself was a twentieth of a functional test's processor time).  The
    schemas are Placement's constants, kept here so that their ids stay
    theirs; every request is validated as before.
    """

    def __init__(self) -> None:
        super().__init__(jsonschema)
        self._checked: dict = {}

    def validate(self, instance, schema, cls=None, *args, **kwargs) -> None:
        if cls is None:
            cls = jsonschema.validators.validator_for(schema)
        if (id(schema), cls) not in self._checked:
            cls.check_schema(schema)
            self._checked[id(schema), cls] = schema
        error = jsonschema.exceptions.best_match(
            cls(schema, *args, **kwargs).iter_errors(instance))
        if error is not None:
            raise error


PLACEMENT_SCHEMAS = PlacementSchemas()


class _NovaValidators(_Module):
    """``jsonschema.validators`` whose ``extend`` makes one class per
    validator and extra checks: nova-api builds a validator class of its
    own for each request (``_SchemaValidator``, with checks that are
    methods of each request's instance and read nothing of it but its
    class), a fiftieth of a functional test's processor time.
    """

    def __init__(self) -> None:
        super().__init__(jsonschema.validators)
        self._made: dict = {}

    def extend(self, validator, validators=(), *args, **kwargs):
        key = (validator, args, tuple(sorted(kwargs.items())), tuple(sorted(
            (name, getattr(check, '__func__', check),
             type(getattr(check, '__self__', None)))
            for name, check in dict(validators).items())))
        if key not in self._made:
            self._made[key] = jsonschema.validators.extend(
                validator, validators, *args, **kwargs)
        return self._made[key]


class NovaSchemas(_Module):
    """The ``jsonschema`` module as nova-api's request validation sees it
    (its ``validators`` are `_NovaValidators`).
    """

    def __init__(self) -> None:
        super().__init__(jsonschema)
        self.validators = _NovaValidators()


NOVA_SCHEMAS = NovaSchemas()
