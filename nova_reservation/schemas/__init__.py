"""The shapes of every request body and hint, as JSON Schema (data only).

`nova_reservation.validation.check` applies them; the lease API's OpenAPI
description is made from them, so that the documentation, the checks and
the fuzzing that tests them can not drift apart.
"""
