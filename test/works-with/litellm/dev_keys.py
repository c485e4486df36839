"""Two developers' LiteLLM keys without LiteLLM's database (test/works-with/run-litellm.ts).

LiteLLM's virtual keys (`/key/generate`) live in Postgres through Prisma, and Prisma's engines are downloaded from
Prisma's own host at install time, which this project's machines cannot reach (docs/WORKS_WITH.md, "LiteLLM"). So
the runner uses LiteLLM's documented `custom_auth` hook instead: the same `UserAPIKeyAuth` a virtual key resolves
to (a `user_id` and a `key_alias` per developer), from a map the runner passes in CG_LITELLM_KEYS
(`{"<key>": "<developer>"}`). The master key stays the admin's. Any other key is refused, as LiteLLM refuses an
unknown virtual key. Nothing here is logged: keys are credentials.
"""

import json
import os

from fastapi import Request
from litellm.proxy._types import LitellmUserRoles, UserAPIKeyAuth

_KEYS = json.loads(os.environ.get("CG_LITELLM_KEYS", "{}"))
_MASTER = os.environ.get("LITELLM_MASTER_KEY", "")


async def user_api_key_auth(request: Request, api_key: str) -> UserAPIKeyAuth:
    if _MASTER and api_key == _MASTER:
        return UserAPIKeyAuth(api_key=api_key, user_role=LitellmUserRoles.PROXY_ADMIN)
    developer = _KEYS.get(api_key)
    if developer is None:
        raise Exception("unknown key")
    return UserAPIKeyAuth(
        api_key=api_key,
        user_id=developer,
        key_alias=developer,
        user_role=LitellmUserRoles.INTERNAL_USER,
    )
