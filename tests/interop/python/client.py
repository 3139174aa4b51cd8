"""Drives xmemo with the official MCP Python SDK (2.x), over streamable HTTP or over the
`xmemo mcp` stdio bridge, in the SDK's default mode (probes `server/discover` first) or its
legacy `initialize` mode. Lists tools, saves a skill, recalls it at all three levels and reads
its skill:// resources. Exits non-zero on the first failure.

usage: client.py --transport http|stdio --mode auto|legacy --url URL --key KEY [--xmemo BIN]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import uuid

import httpx2
from mcp import Client
from mcp.types import Implementation
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def payload(result) -> dict:
    """The {"kind","data"} object, identical in structuredContent and the JSON text block."""
    check(not result.is_error, f"tool error: {result}")
    structured = result.structured_content
    text = next(c.text for c in result.content if getattr(c, "type", None) == "text")
    check(json.loads(text) == structured, "text block and structuredContent differ")
    return structured


async def scenario(client: Client, slug: str, label: str, agent: str | None) -> None:
    tools = await client.list_tools()
    names = sorted(t.name for t in tools.tools)
    expected = sorted(
        ["recall_cloud_skill", "save_cloud_skill", "remember", "recall", "update_memory", "forget", "restore_memory"]
    )
    check(names == expected, f"tools/list: {names}")

    # Attribution (issue #31): no X-Memory-OS-Agent-ID is sent, yet the save names the agent
    # after the name the SDK gives itself (in `_meta` of every request in its default mode,
    # in `initialize` in legacy mode, which the bridge keeps).
    remembered = payload(
        await client.call_tool("remember", {"kind": "note", "content": f"attribution check {slug}"})
    )
    saved_by = remembered["data"]["memory"]["saved_by"]
    check(saved_by["agent_id"] == agent, f"agent_id {saved_by['agent_id']!r}, expected {agent!r}")
    check(saved_by["agent_instance_id"] == label, f"{saved_by}")

    note = f"Notes for {label}.\n"
    saved = payload(
        await client.call_tool(
            "save_cloud_skill",
            {
                "slug": slug,
                "name": f"Interop {label}",
                "description": f"Interop check saved by the Python SDK ({label})",
                "instruction_body": f"# {slug}\n\n1. Read references/notes.md.\n",
                "components": [
                    {"logical_path": "references/notes.md", "type": "reference", "content": note}
                ],
                "intent": "publish",
            },
        )
    )
    check(saved["kind"] == "saved" and saved["data"]["status"] == "published", f"save: {saved}")

    l0 = payload(await client.call_tool("recall_cloud_skill", {"query": slug}))
    check(l0["kind"] == "descriptors", f"L0: {l0}")
    check(any(s["slug"] == slug for s in l0["data"]["skills"]), f"L0 misses {slug}: {l0}")

    l1 = payload(await client.call_tool("recall_cloud_skill", {"slug": slug}))
    check(l1["kind"] == "root" and l1["data"]["status"] == "published", f"L1: {l1}")
    revision = l1["data"]["revision_id"]
    check(revision == saved["data"]["revision_id"], "L1 revision differs from the save")

    l2 = payload(
        await client.call_tool(
            "recall_cloud_skill",
            {"slug": slug, "revision_id": revision, "resource": "references/notes.md"},
        )
    )
    check(l2["kind"] == "resource" and l2["data"]["content"] == note, f"L2: {l2}")

    unpinned = await client.call_tool("recall_cloud_skill", {"slug": slug, "resource": "references/notes.md"})
    check(bool(unpinned.is_error), "unpinned L2 must be refused")
    check(unpinned.structured_content["error"]["code"] == "REVISION_PIN_REQUIRED", f"{unpinned}")

    uri = f"skill://personal/{slug}/SKILL.md"
    read = await client.read_resource(uri)
    text = read.contents[0].text
    front = text.split("\n---\n", 1)[0]
    check(text.startswith("---\n"), f"SKILL.md frontmatter: {text[:80]!r}")
    check(re.search(rf'^name: "?{re.escape(slug)}"?$', front, re.M) is not None, f"SKILL.md name: {front!r}")
    check(text.endswith(l1["data"]["instruction_body"]), "SKILL.md body")
    notes = await client.read_resource(f"skill://personal/{slug}/references/notes.md")
    body = notes.contents[0].text.encode()
    manifest = l1["data"]["resources"][0]
    check(hashlib.sha256(body).hexdigest() == manifest["content_hash"], "resource digest")


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--transport", choices=["http", "stdio"], required=True)
    p.add_argument("--mode", choices=["auto", "legacy"], required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--xmemo", default="xmemo")
    a = p.parse_args()
    label = f"python-{a.mode}-{a.transport}"
    slug = f"interop-{a.mode}-{a.transport}-{uuid.uuid4().hex[:8]}"

    if a.transport == "http":
        http = httpx2.AsyncClient(
            headers={
                "Authorization": f"Bearer {a.key}",
                "X-Memory-OS-Agent-Instance-ID": label,
            },
            timeout=httpx2.Timeout(30, read=120),
        )
        server = streamable_http_client(f"{a.url}/mcp", http_client=http)
    else:
        env = dict(os.environ)
        env.update({"XMEMO_URL": a.url, "XMEMO_KEY": a.key, "XMEMO_AGENT_INSTANCE_ID": label})
        server = StdioServerParameters(command=a.xmemo, args=["mcp"], env=env)

    name = f"interop-{label}"
    # A legacy client over plain HTTP names itself only in `initialize`, which this stateless
    # server cannot tie to its later requests: such a client names itself with the
    # X-Memory-OS-Agent-ID header (or by its OAuth registration) instead (docs/mcp.md).
    agent = None if (a.mode == "legacy" and a.transport == "http") else name
    client_info = Implementation(name=name, version="1.0.0")
    async with Client(server, mode=a.mode, client_info=client_info) as client:
        version = client.protocol_version
        await scenario(client, slug, label, agent)
    print(f"PASS {label} (protocol {version})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except Exception as e:  # noqa: BLE001 - report any failure as one line
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
