"""A person in a real headless Chromium: opens an authorization URL printed by another
program (the MCP conformance suite's `authorization` run), signs in to xmemo and approves
the consent, then lets the browser follow the redirect to that program's own callback.

usage: approve.py --password PASSWORD < a line holding the authorization URL
       (reads stdin until it sees a URL starting with --authorize, default ISSUER/oauth/authorize)
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from playwright.async_api import async_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


async def approve(url: str, password: str, callback_prefix: str) -> None:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = await browser.new_page()
        await page.goto(url)
        if "/login" in page.url:
            await page.fill("#handle", "admin")
            await page.fill("#password", password)
            await page.click("button[type=submit]")
        await page.wait_for_selector("button[value=approve]")
        async with page.expect_request(lambda r: r.url.startswith(callback_prefix), timeout=30_000):
            await page.click("button[value=approve]")
        await page.wait_for_load_state()
        await browser.close()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--password", required=True)
    p.add_argument("--authorize", required=True, help="the authorization endpoint URL")
    p.add_argument("--callback", required=True, help="where the browser must be sent back")
    a = p.parse_args()
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        line = line.strip()
        if line.startswith(a.authorize + "?"):
            asyncio.run(approve(line, a.password, a.callback))
            print("approve.py: approved in Chromium", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
