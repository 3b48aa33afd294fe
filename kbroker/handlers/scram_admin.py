"""DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51) v0.

As Kafka (ZkAdminManager): describing no users (null or empty list) lists every user that
has a credential; a user named twice is DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND.
Alter validates each user's whole set of changes first (unknown mechanism, iteration bounds
4096..16384, empty name, the same user twice, deleting what does not exist) and applies the
valid users' changes; the answer waits until they are stored (kbroker/security/scram_credentials.py;
in cluster mode also the users' znodes in ZooKeeper, kbroker/zk/zk_config_admin.py).

Ports (kbroker/server/services.py): ``scram`` (the credentials), ``config_admin`` (their changes).
"""

from __future__ import annotations

from typing import Any

from kbroker.configs.json_file import answer_when_stored
from kbroker.security.scram_credentials import (
    MAX_ITERATIONS,
    MECHANISM_BY_ID,
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
)
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from kbroker.server.services import ScramCredentials
from wire.error_codes import ErrorCode
from wire.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

DescribeResult = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
CredentialInfo = DescribeUserScramCredentialsResponse.CredentialInfo
AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


def _infos(creds: dict[str, ScramCredential]) -> list[Any]:
    return [CredentialInfo(mechanism=MECHANISMS[m][1], iterations=c.iterations)
            for m, c in sorted(creds.items(), key=lambda mc: MECHANISMS[mc[0]][1])]


@REGISTRY.register(50, 0, 0)
def handle_describe_user_scram_credentials(ctx: RequestContext,
                                           req: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    store = ctx.services.scram
    if not req.users:
        return DescribeUserScramCredentialsResponse(error_message=None, results=[
            DescribeResult(user=u, error_code=0, error_message=None, credential_infos=_infos(store.mechanisms(u)))
            for u in store.users()])
    names = [u.name for u in req.users]
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(DescribeResult(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                                          error_message="Cannot describe SCRAM credentials for the same user "
                                                        f"twice in a single request: {name}"))
            continue
        creds = store.mechanisms(name)
        if not creds:
            results.append(DescribeResult(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                          error_message=f"Attempt to describe a user credential that does "
                                                        f"not exist: {name}"))
            continue
        results.append(DescribeResult(user=name, error_code=0, error_message=None,
                                      credential_infos=_infos(creds)))
    return DescribeUserScramCredentialsResponse(error_message=None, results=results)


def _check(store: ScramCredentials, name: str, mechanism: int, iterations: int | None) -> tuple[int, str] | None:
    if mechanism not in MECHANISM_BY_ID:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if iterations is not None:
        if iterations < MIN_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if iterations > MAX_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if iterations is None and store.get(name, MECHANISM_BY_ID[mechanism]) is None:
        return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
    return None


@REGISTRY.register(51, 0, 0)
def handle_alter_user_scram_credentials(ctx: RequestContext, req: AlterUserScramCredentialsRequest) -> Any:
    store = ctx.services.scram
    ops: list[tuple[str, int, Any]] = ([(d.name, d.mechanism, None) for d in req.deletions]
                                       + [(u.name, u.mechanism, u) for u in req.upsertions])
    errors: dict[str, tuple[int, str]] = {}
    seen: dict[tuple[str, int], int] = {}
    for name, mech, _ in ops:
        seen[(name, mech)] = seen.get((name, mech), 0) + 1
    for name, mech, up in ops:
        if name in errors:
            continue
        if seen[(name, mech)] > 1:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE,
                            "A user credential cannot be altered twice in the same request")
            continue
        problem = _check(store, name, mech, None if up is None else up.iterations)
        if problem is not None:
            errors[name] = problem
    changes = []
    for name, mech, up in ops:
        if name in errors:
            continue
        mechanism = MECHANISM_BY_ID[mech]
        cred = None if up is None else credential_from_salted(mechanism, bytes(up.salt),
                                                              bytes(up.salted_password), up.iterations)
        changes.append((name, mechanism, cred))
    stored = ctx.services.config_admin.set_scram_credentials(changes) if changes else []
    results = [AlterResult(user=name, error_code=errors[name][0] if name in errors else 0,
                           error_message=errors[name][1] if name in errors else None)
               for name in dict.fromkeys(n for n, _, _ in ops)]
    return answer_when_stored(AlterUserScramCredentialsResponse(results=results), stored)
