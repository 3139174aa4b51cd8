"""The role flows of SPEC §9 with the official MCP Python SDK (2.x), against a running xmemo:

  desktop  one client session remembers a preference (with an agent instance id); a second,
           independent session recalls it and sees which instance saved it.
  headless a runner (the `xmemo mcp` stdio bridge, XMEMO_AGENT_INSTANCE_ID fixed) records its
           progress, exits, starts again with the same id and recalls its progress note; the
           attribution shows one instance throughout.

usage: memory_flows.py --flow desktop|headless --url URL --key KEY [--xmemo BIN]
Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def payload(result) -> dict:
    check(not result.is_error, f"tool error: {result}")
    text = next(c.text for c in result.content if getattr(c, "type", None) == "text")
    check(json.loads(text) == result.structured_content, "text block and structuredContent differ")
    return result.structured_content


def http_session(url: str, key: str, instance: str):
    http = httpx2.AsyncClient(
        headers={
            "Authorization": f"Bearer {key}",
            "X-Memory-OS-Agent-ID": "python-sdk",
            "X-Memory-OS-Agent-Instance-ID": instance,
        },
        timeout=httpx2.Timeout(30, read=120),
    )
    return Client(streamable_http_client(f"{url}/mcp", http_client=http))


def bridge_session(url: str, key: str, xmemo: str, instance: str):
    env = dict(os.environ)
    env.update({"XMEMO_URL": url, "XMEMO_KEY": key, "XMEMO_AGENT_INSTANCE_ID": instance})
    return Client(StdioServerParameters(command=xmemo, args=["mcp"], env=env))


async def desktop(a) -> None:
    tag = f"pref-{uuid.uuid4().hex[:8]}"
    content = f"The user prefers concise answers with code first ({tag})."
    async with http_session(a.url, a.key, "desktop-chat-1") as first:
        tools = sorted(t.name for t in (await first.list_tools()).tools)
        check({"remember", "recall", "update_memory", "forget", "restore_memory"} <= set(tools), f"{tools}")
        saved = payload(
            await first.call_tool("remember", {"kind": "preference", "content": content, "tags": [tag]})
        )
        check(saved["kind"] == "remembered" and saved["data"]["created"] is True, f"{saved}")
        memory_id = saved["data"]["memory"]["memory_id"]
        again = payload(
            await first.call_tool("remember", {"kind": "preference", "content": content, "tags": [tag]})
        )
        check(again["data"]["created"] is False, f"a retried remember created again: {again}")
        check(again["data"]["memory"]["memory_id"] == memory_id, "the retry named another memory")
    # A second, independent session (another connection, another instance).
    async with http_session(a.url, a.key, "desktop-chat-2") as second:
        found = payload(await second.call_tool("recall", {"query": "concise answers", "tags": [tag]}))
        hits = found["data"]["memories"]
        check(len(hits) == 1 and hits[0]["memory_id"] == memory_id, f"recall: {found}")
        check(hits[0]["kind"] == "preference", f"{hits[0]}")
        check(hits[0]["saved_by"]["agent_instance_id"] == "desktop-chat-1", f"{hits[0]}")
        check(hits[0]["saved_by"]["agent_id"] == "python-sdk", f"{hits[0]}")
        full = payload(await second.call_tool("recall", {"memory_id": memory_id, "full": True}))
        check(full["data"]["memories"][0]["content"] == content, f"{full}")


async def headless(a) -> None:
    instance = f"ci-runner-{uuid.uuid4().hex[:8]}"
    project = f"job-{uuid.uuid4().hex[:6]}"
    # First run: the runner records where it got to, then exits.
    async with bridge_session(a.url, a.key, a.xmemo, instance) as run1:
        saved = payload(
            await run1.call_tool(
                "remember",
                {"kind": "progress", "content": "Migrated 3 of 5 services; next: billing.", "project": project},
            )
        )
        memory_id = saved["data"]["memory"]["memory_id"]
        check(saved["data"]["memory"]["saved_by"]["agent_instance_id"] == instance, f"{saved}")
    # The restart: a new process with the same XMEMO_AGENT_INSTANCE_ID picks up its note.
    async with bridge_session(a.url, a.key, a.xmemo, instance) as run2:
        mine = payload(
            await run2.call_tool(
                "recall", {"kind": "progress", "agent_instance_id": instance, "project": project, "full": True}
            )
        )
        hits = mine["data"]["memories"]
        check(len(hits) == 1 and hits[0]["memory_id"] == memory_id, f"recall after restart: {mine}")
        check("next: billing" in hits[0]["content"], f"{hits[0]}")
        updated = payload(
            await run2.call_tool(
                "update_memory",
                {
                    "memory_id": memory_id,
                    "expected_version": hits[0]["version"],
                    "content": "Migrated 4 of 5 services; next: search.",
                },
            )
        )
        check(updated["data"]["version"] == 2, f"{updated}")
        stale = await run2.call_tool(
            "update_memory", {"memory_id": memory_id, "expected_version": 1, "content": "lost"}
        )
        check(bool(stale.is_error) and stale.structured_content["error"]["code"] == "CONFLICT", f"{stale}")
    # One instance throughout: every memory of the project is this instance's.
    async with bridge_session(a.url, a.key, a.xmemo, instance) as run3:
        every = payload(await run3.call_tool("recall", {"project": project, "include_forgotten": True}))
        instances = {h["saved_by"]["agent_instance_id"] for h in every["data"]["memories"]}
        check(instances == {instance}, f"instances seen: {instances}")


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--flow", choices=["desktop", "headless"], required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--xmemo", default="xmemo")
    a = p.parse_args()
    await (desktop(a) if a.flow == "desktop" else headless(a))
    print(f"PASS memory flow {a.flow}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except Exception as e:  # noqa: BLE001 - report any failure as one line
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
