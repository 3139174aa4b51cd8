"""The whole OAuth 2.1 flow of the official MCP Python SDK (2.x, `OAuthClientProvider`)
against xmemo, with a person played by a real headless Chromium (Playwright driving the
system's /usr/bin/chromium): the SDK discovers the authorization server from the 401, registers
(dynamic registration, or a Client ID Metadata Document served over https by this script),
and its `redirect_handler` opens the authorization URL in the browser, which signs in on
xmemo's page and approves the consent; the browser's redirect to the SDK's loopback redirect
URI is caught and handed to the SDK's `callback_handler`. Then the SDK lists tools and
recalls a skill with its access token. Exits non-zero on the first failure.

usage: oauth_flow.py --registration dcr|cimd --url URL --key ADMIN_KEY --password ADMIN_PASSWORD
                     [--tls-dir DIR --cimd-port PORT]  (cimd: the cert and key for localhost)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
import traceback
import threading
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from playwright.async_api import async_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
REDIRECT_URI = "http://127.0.0.1:47631/callback"


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def serve_metadata_document(tls_dir: str, port: int, client_id: str) -> ThreadingHTTPServer:
    """The client's metadata document at https://localhost:PORT/oauth/client.json."""
    document = json.dumps(
        {
            "client_id": client_id,
            "client_name": "Python SDK (metadata document)",
            "client_uri": f"https://localhost:{port}/",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    ).encode()
    fetched: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            fetched.append(self.path)
            if self.path != "/oauth/client.json":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{tls_dir}/localhost.pem", f"{tls_dir}/localhost.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.fetched = fetched  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Person:
    """The person at the browser: signs in and approves, then lets the redirect come back."""

    def __init__(self, browser, password: str, issuer: str) -> None:
        self.browser = browser
        self.password = password
        self.issuer = issuer
        self.result: asyncio.Future[AuthorizationCodeResult] | None = None
        self.consent_seen: str = ""

    async def redirect_handler(self, authorization_url: str) -> None:
        loop = asyncio.get_running_loop()
        self.result = loop.create_future()
        context = await self.browser.new_context()
        page = await context.new_page()
        result = self.result

        async def catch_redirect(route) -> None:
            query = parse_qs(urlparse(route.request.url).query)
            one = lambda k: (query.get(k) or [None])[0]  # noqa: E731
            if one("error"):
                result.set_exception(AssertionError(f"authorization error: {one('error')} {one('error_description')}"))
            else:
                result.set_result(AuthorizationCodeResult(code=one("code"), state=one("state"), iss=one("iss")))
            await route.fulfill(status=200, content_type="text/plain", body="done")

        await page.route(f"{REDIRECT_URI}*", catch_redirect)
        await page.goto(authorization_url)
        # Not signed in yet: xmemo's sign-in page first.
        check("/login" in page.url, f"expected the sign-in page, got {page.url}")
        await page.fill("#handle", "admin")
        await page.fill("#password", self.password)
        await page.click("button[type=submit]")
        await page.wait_for_selector("button[value=approve]")
        self.consent_seen = await page.content()
        check("memory:read" in self.consent_seen and "memory:write" in self.consent_seen, "consent lists the scopes")
        check("127.0.0.1:47631" in self.consent_seen, "consent shows where the code goes")
        await page.click("button[value=approve]")
        await asyncio.wait_for(asyncio.shield(result), 30)
        await context.close()

    async def callback_handler(self) -> AuthorizationCodeResult:
        check(self.result is not None, "callback before redirect")
        return await asyncio.wait_for(self.result, 30)  # type: ignore[arg-type]


def save_skill(url: str, key: str, slug: str) -> None:
    """A skill to recall, saved with the admin key over REST."""
    body = json.dumps(
        {
            "slug": slug,
            "name": "OAuth interop",
            "description": "Saved for the OAuth interop check",
            "instruction_body": f"# {slug}\n\nRecalled over OAuth.\n",
            "intent": "publish",
        }
    ).encode()
    request = urllib.request.Request(
        f"{url}/api/v1/skills",
        data=body,
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        check(r.status in (200, 201), f"save: {r.status}")


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--registration", choices=["dcr", "cimd"], required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--tls-dir")
    p.add_argument("--cimd-port", type=int, default=0)
    a = p.parse_args()
    slug = f"oauth-{a.registration}-{uuid.uuid4().hex[:8]}"
    save_skill(a.url, a.key, slug)

    metadata_url = None
    document_server = None
    if a.registration == "cimd":
        check(bool(a.tls_dir) and a.cimd_port > 0, "cimd needs --tls-dir and --cimd-port")
        metadata_url = f"https://localhost:{a.cimd_port}/oauth/client.json"
        document_server = serve_metadata_document(a.tls_dir, a.cimd_port, metadata_url)

    storage = MemoryStorage()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        person = Person(browser, a.password, a.url)
        auth = OAuthClientProvider(
            server_url=f"{a.url}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name=f"Python SDK ({a.registration})",
                redirect_uris=[REDIRECT_URI],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=person.redirect_handler,
            callback_handler=person.callback_handler,
            client_metadata_url=metadata_url,
        )
        http = httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=120))
        async with Client(streamable_http_client(f"{a.url}/mcp", http_client=http)) as client:
            tools = await client.list_tools()
            names = sorted(t.name for t in tools.tools)
            check("recall_cloud_skill" in names and "remember" in names, f"tools/list: {names}")
            recalled = await client.call_tool("recall_cloud_skill", {"slug": slug})
            check(not recalled.is_error, f"recall: {recalled}")
            data = recalled.structured_content
            check(data["kind"] == "root" and data["data"]["slug"] == slug, f"recall: {data}")
            # Attribution over OAuth (issue #31): the SDK's own name (`_meta` clientInfo of
            # its default mode; "mcp" unless set) names the agent of a save.
            saved = await client.call_tool("remember", {"kind": "note", "content": f"saved over OAuth ({slug})"})
            check(not saved.is_error, f"remember: {saved}")
            by = saved.structured_content["data"]["memory"]["saved_by"]
            check(by["agent_id"] == "mcp", f"agent_id over OAuth: {by}")
        await browser.close()

    tokens = storage.tokens
    check(tokens is not None and tokens.access_token.startswith("xmat_"), "an xmemo access token")
    check(bool(tokens.refresh_token), "a refresh token")
    client_id = storage.client.client_id if storage.client else ""
    if a.registration == "cimd":
        check(client_id == metadata_url, f"the document URL is the client_id: {client_id}")
        check("/oauth/client.json" in document_server.fetched, "xmemo fetched the metadata document")  # type: ignore[union-attr]
        check("Client identity: the document at" in person.consent_seen, "consent names the document")
        document_server.shutdown()  # type: ignore[union-attr]
    else:
        check(client_id.startswith("client_"), f"a registered client_id: {client_id}")
    print(f"PASS oauth {a.registration}: client {client_id}, tools {len(names)}, recalled {slug}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except Exception as e:  # noqa: BLE001 - report any failure: one line, then what caused it
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        # A failure inside the SDK's task group arrives wrapped: show what is inside.
        traceback.print_exception(e, file=sys.stderr)
        sys.exit(1)
