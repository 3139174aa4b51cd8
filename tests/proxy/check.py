"""What docs/deploy.md promises of xmemo behind Caddy, checked over https (run by run.sh):

  - the OAuth metadata and protected-resource documents name https URLs of the public address;
  - every cookie the console and sign-in set is Secure;
  - the sign-in budget counts the real client (X-Forwarded-For from the trusted proxy): a client
    that spent its budget is refused while another one, through the same proxy, signs in;
  - the official Python MCP SDK lists tools, saves and recalls a skill through the proxy;
  - the console's claude.ai and ChatGPT cards say "OAuth ready";
  - an X-Forwarded-For forged by a client is ignored, sent straight to xmemo (an untrusted peer)
    or through Caddy (which replaces it): xmemo's JSON log names the real address.

Clients are told apart by their source address on the loopback network (127.0.0.2, .3, .4).
Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import ssl
import sys
import uuid

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def client(a, ctx, local: str, base: str | None = None) -> httpx2.AsyncClient:
    transport = httpx2.AsyncHTTPTransport(verify=ctx, local_address=local)
    return httpx2.AsyncClient(transport=transport, base_url=base or a.public, timeout=30)


async def sign_in(c: httpx2.AsyncClient, a, handle: str, password: str) -> tuple[httpx2.Response, list[str]]:
    form = await c.get("/login", params={"next": "/console"})
    check(form.status_code == 200, f"GET /login: {form.status_code}")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    check(token is not None, "no form token on the sign-in page")
    posted = await c.post(
        "/login",
        data={"handle": handle, "password": password, "next": "/console", "csrf": token.group(1)},
        headers={"Origin": a.public, "Sec-Fetch-Site": "same-origin"},
    )
    cookies = form.headers.get_list("set-cookie") + posted.headers.get_list("set-cookie")
    return posted, cookies


async def main() -> int:
    p = argparse.ArgumentParser()
    for name in ["--public", "--direct", "--ca", "--key-file", "--password-file", "--log"]:
        p.add_argument(name, required=True)
    a = p.parse_args()
    key = open(a.key_file).read().strip()
    password = open(a.password_file).read().strip()
    ctx = ssl.create_default_context(cafile=a.ca)

    # OAuth documents: https URLs of the public address only.
    async with client(a, ctx, "127.0.0.1") as c:
        meta = (await c.get("/.well-known/oauth-authorization-server")).json()
        check(meta["issuer"] == a.public, f"issuer {meta['issuer']}")
        for name, value in meta.items():
            if isinstance(value, str) and value.startswith("http"):
                check(value == a.public or value.startswith(a.public + "/"), f"{name}: {value}")
        resource = (await c.get("/.well-known/oauth-protected-resource/mcp")).json()
        check(resource["resource"] == f"{a.public}/mcp", f"resource {resource}")
        check(all(s.startswith("https://") for s in resource["authorization_servers"]), f"{resource}")

    # The budget is the client's own: 127.0.0.2 spends it, 127.0.0.3 is not held back.
    async with client(a, ctx, "127.0.0.2") as mallory:
        for _ in range(3):
            r, _ = await sign_in(mallory, a, "admin", "not the password")
            check(r.status_code == 401, f"a wrong password: {r.status_code}")
        r, _ = await sign_in(mallory, a, "admin", password)
        check(r.status_code == 429, f"after its budget, even the right password: {r.status_code}")
    async with client(a, ctx, "127.0.0.3") as alice:
        r, cookies = await sign_in(alice, a, "admin", password)
        check(r.status_code == 303, f"another client through the same proxy: {r.status_code} {r.text[:200]}")
        check(cookies, "no cookie set")
        for cookie in cookies:
            check("; secure" in cookie.lower(), f"a cookie without Secure: {cookie.split('=')[0]}")
        page = await alice.get("/console/connect")
        check(page.status_code == 200, f"/console/connect: {page.status_code}")
        for card in ["claude-ai", "chatgpt"]:
            section = page.text.split(f'id="client-{card}"', 1)
            check(len(section) == 2, f"no {card} card")
            check("OAuth ready" in section[1].split("</section>", 1)[0], f"the {card} card is not OAuth ready")

    # The official MCP SDK through the proxy.
    http = httpx2.AsyncClient(verify=ctx, headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=120))
    slug = f"proxied-{uuid.uuid4().hex[:8]}"
    async with Client(streamable_http_client(f"{a.public}/mcp", http_client=http)) as mcp:
        names = sorted(t.name for t in (await mcp.list_tools()).tools)
        check("recall_cloud_skill" in names and "save_cloud_skill" in names, f"tools: {names}")
        saved = await mcp.call_tool(
            "save_cloud_skill",
            {"slug": slug, "name": "Proxied", "description": "Saved through Caddy",
             "instruction_body": "1. Works over https.", "intent": "publish"},
        )
        check(not saved.is_error, f"save: {saved}")
        root = await mcp.call_tool("recall_cloud_skill", {"slug": slug})
        check(not root.is_error and root.structured_content["data"]["slug"] == slug, f"recall: {root}")

    # A forged X-Forwarded-For: straight to xmemo (not a trusted proxy) and through Caddy.
    forged = {"X-Forwarded-For": "10.9.9.9"}
    async with client(a, None, "127.0.0.2", base=a.direct) as straight:
        r = await straight.get("/healthz", headers={**forged, "X-Request-Id": "forged-direct"})
        check(r.status_code == 200, f"direct: {r.status_code}")
    async with client(a, ctx, "127.0.0.4") as via:
        r = await via.get("/healthz", headers={**forged, "X-Request-Id": "forged-via-proxy"})
        check(r.status_code == 200, f"via Caddy: {r.status_code}")
    await asyncio.sleep(0.5)
    events = {}
    for line in open(a.log):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"a log line that is not JSON: {line!r}")
        if event.get("target") == "xmemo::access":
            events[event.get("request_id")] = event
    check(events.get("forged-direct", {}).get("client") == "127.0.0.2", f"direct: {events.get('forged-direct')}")
    check(events.get("forged-via-proxy", {}).get("client") == "127.0.0.4", f"via Caddy: {events.get('forged-via-proxy')}")
    print("PASS proxy checks")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except Exception as e:  # noqa: BLE001 - one line per failure
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
