"""The answer to a request refused as a whole by the authorizer: the API's own layout (the
one kbroker/server/error_responses.py builds for a handler that raised, Kafka's
``AbstractRequest.getErrorResponse``) with the authorization error in every error code
instead of UNKNOWN_SERVER_ERROR and no message, as Kafka's ``getErrorResponse(
Errors.GROUP_AUTHORIZATION_FAILED.exception)`` etc. answer."""

from __future__ import annotations

from typing import Any

from kbroker.server.error_responses import error_response
from wire.error_codes import ErrorCode
from wire.schema import RESPONSES, FieldSpec


def refused(api_key: int, version: int, request: Any, code: int) -> Any:
    response = error_response(api_key, version, request)
    _recode(response, RESPONSES[api_key].fields, version, code)
    return response


def _recode(out: Any, fields: tuple[FieldSpec, ...], version: int, code: int) -> None:
    for f in fields:
        if not f.present(version):
            continue
        if f.py == "error_code" and getattr(out, f.py) == ErrorCode.UNKNOWN_SERVER_ERROR:
            setattr(out, f.py, code)
        elif f.py == "error_message":
            setattr(out, f.py, None if f.is_nullable(version) else "")
        elif f.is_array and f.struct is not None:
            for entry in getattr(out, f.py) or ():
                _recode(entry, f.struct.fields, version, code)
