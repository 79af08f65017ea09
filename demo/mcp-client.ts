// A minimal MCP client for `membrane mcp`: spawn the server over stdio, list its tools, run
// Python `print(6*7)`, and show what asking for an ungranted cap looks like.
// Run: node --import tsx demo/mcp-client.ts   (docs/mcp.md explains the tools and the grant)
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const membrane = fileURLToPath(new URL('../bin/membrane.js', import.meta.url));
const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string'));
const transport = new StdioClientTransport({ command: process.execPath, args: [membrane, 'mcp', '--profile', 'compute'], env, stderr: 'ignore' });
const client = new Client({ name: 'membrane-demo', version: '1.0.0' });
await client.connect(transport);
try {
  const { tools } = await client.listTools();
  console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);

  const run = (await client.callTool({ name: 'sandbox_execute', arguments: { language: 'python', code: 'print(6*7)' } })) as CallToolResult;
  const out = run.structuredContent as { ok: boolean; stdout: string; fuelUsed: number; durationMs: number };
  console.log(`print(6*7) → ok=${out.ok} stdout=${JSON.stringify(out.stdout)} (fuel ${out.fuelUsed}, ${out.durationMs.toFixed(0)} ms)`);

  const denied = (await client.callTool({ name: 'sandbox_execute', arguments: { language: 'python', code: 'print(1)', capability_subset: ['net'] } })) as CallToolResult;
  const text = denied.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  console.log(`capability_subset ["net"] → isError=${denied.isError === true}: ${text}`);
} finally {
  await client.close();
}
