"""The framed pop (QPF1) on a broker with JWT on: the producer stamp (the pushing token's `sub`)
rides in each frame (flag 2) and comes out of the 2.x client's decoder as `producerSub`, the
same as in the JSON answer; a push without a subject has none."""

import base64
import hashlib
import hmac
import json
import time

from queen import Queen

SECRET = "framed-pop-test-secret-0123456789abcdef"
BROKER_ENV = {"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256", "JWT_SECRET": SECRET}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def token(sub: str) -> str:
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"role": "admin", "exp": int(time.time()) + 3600}
    if sub:
        claims["sub"] = sub
    body = _b64(json.dumps(claims).encode())
    sig = hmac.new(SECRET.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


async def test_producer_stamps_in_frames(broker, qname):
    async with Queen(broker.url, bearer_token=token("alice")) as alice, \
            Queen(broker.url, bearer_token=token("")) as anon, \
            Queen(broker.url, bearer_token=token("reader"), framed_pop=True) as f, \
            Queen(broker.url, bearer_token=token("reader")) as j:
        await alice.queue(qname).push([{"data": i} for i in range(3)])
        await anon.queue(qname).push([{"data": 3}])
        got = await f.queue(qname).group("f").batch(10).wait(False).pop()
        ref = await j.queue(qname).group("j").batch(10).wait(False).pop()
        assert [m["data"] for m in got] == [0, 1, 2, 3]
        assert [m["producerSub"] for m in got] == ["alice"] * 3 + [None]
        assert [m["producerSub"] for m in got] == [m["producerSub"] for m in ref]
        assert got[0]["partitionId"].isdigit()
        assert (await f.ack(got, True, {"group": "f"}))["success"] is True
        assert await f.queue(qname).group("f").batch(10).wait(False).pop() == []
