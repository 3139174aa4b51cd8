// Drives xmemo with the official MCP TypeScript SDK (1.x), over streamable HTTP or over the
// `xmemo mcp` stdio bridge: lists tools, saves a skill, recalls it at all three levels, lists
// it through the Skills extension and reads its skill:// resources, checking the digests.
//
// usage: node client.mjs http|stdio <url> <key> [xmemo-binary]

import { createHash, randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [transportKind, url, key, xmemo = "xmemo"] = process.argv.slice(2);
const label = `typescript-${transportKind}`;

function check(cond, what) {
  if (!cond) throw new Error(what);
}

function payload(result) {
  check(!result.isError, `tool error: ${JSON.stringify(result)}`);
  const text = result.content.find((c) => c.type === "text").text;
  check(JSON.stringify(JSON.parse(text)) === JSON.stringify(result.structuredContent),
    "text block and structuredContent differ");
  return result.structuredContent;
}

const sha256 = (buf) => "sha256:" + createHash("sha256").update(buf).digest("hex");

async function main() {
  let transport;
  if (transportKind === "http") {
    transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: {
        headers: {
          Authorization: `Bearer ${key}`,
          "X-Memory-OS-Agent-ID": "typescript-sdk",
          "X-Memory-OS-Agent-Instance-ID": label,
        },
      },
    });
  } else {
    transport = new StdioClientTransport({
      command: xmemo,
      args: ["mcp"],
      env: { ...process.env, XMEMO_URL: url, XMEMO_KEY: key, XMEMO_AGENT_INSTANCE_ID: label },
      stderr: "inherit",
    });
  }
  const client = new Client({ name: "xmemo-interop-ts", version: "1.0.0" });
  await client.connect(transport);
  try {
    const slug = `interop-ts-${transportKind}-${randomUUID().slice(0, 8)}`;
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    const expected = ["recall_cloud_skill", "save_cloud_skill", "remember", "recall", "update_memory",
      "forget", "restore_memory"].sort();
    check(JSON.stringify(tools) === JSON.stringify(expected),
      `tools/list: ${tools}`);
    const recallTool = (await client.listTools()).tools.find((t) => t.name === "recall_cloud_skill");
    check(recallTool.annotations?.readOnlyHint === true && recallTool.annotations?.idempotentHint === true,
      "recall annotations");

    const note = `Notes for ${label}.\n`;
    const saved = payload(await client.callTool({
      name: "save_cloud_skill",
      arguments: {
        slug,
        name: `Interop ${label}`,
        description: `Interop check saved by the TypeScript SDK (${label})`,
        instruction_body: `# ${slug}\n\n1. Read references/notes.md.\n`,
        components: [{ logical_path: "references/notes.md", type: "reference", content: note }],
        intent: "publish",
      },
    }));
    check(saved.kind === "saved" && saved.data.status === "published", `save: ${JSON.stringify(saved)}`);

    const l0 = payload(await client.callTool({ name: "recall_cloud_skill", arguments: { query: slug } }));
    check(l0.data.skills.some((s) => s.slug === slug), `L0: ${JSON.stringify(l0)}`);
    const l1 = payload(await client.callTool({ name: "recall_cloud_skill", arguments: { slug } }));
    check(l1.kind === "root" && l1.data.revision_id === saved.data.revision_id, "L1");
    const l2 = payload(await client.callTool({
      name: "recall_cloud_skill",
      arguments: { slug, revision_id: l1.data.revision_id, resource: "references/notes.md" },
    }));
    check(l2.kind === "resource" && l2.data.content === note, "L2");
    const unpinned = await client.callTool({ name: "recall_cloud_skill", arguments: { slug, resource: "references/notes.md" } });
    check(unpinned.isError && unpinned.structuredContent.error.code === "REVISION_PIN_REQUIRED", "L2 pin");

    // Skills extension: the entry's digests match the bytes resources/read serves.
    check(client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/skills"] !== undefined,
      "skills extension declared");
    const listed = await client.request({ method: "skills/list", params: {} }, ResultSchema);
    const entry = listed.skills.find((s) => s.uri === `skill://personal/${slug}/SKILL.md`);
    check(entry && entry.frontmatter.name === slug, "skills/list entry");
    for (const file of entry.resources) {
      const read = await client.readResource({ uri: file.uri });
      const c = read.contents[0];
      const bytes = c.text !== undefined ? Buffer.from(c.text, "utf8") : Buffer.from(c.blob, "base64");
      check(bytes.length === file.size && sha256(bytes) === file.digest, `digest of ${file.uri}`);
    }
    check(entry.resources.length === 2, "SKILL.md and one component");
    console.log(`PASS ${label}`);
  } finally {
    await client.close();
  }
}

main().catch((e) => {
  console.error(`FAIL: ${e?.stack ?? e}`);
  process.exit(1);
});
