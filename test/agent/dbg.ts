import { agentFixture } from '/work/wt-agent/test/helpers/agent.ts';
const A_PY = "lines = ['alpha', 'beta', 'gamma']\nwith open('out.txt', 'w') as f:\n    f.write('\\n'.join(lines) + '\\n')\nprint('wrote', len(lines))\n";
const { engine } = await agentFixture({ 'x': [
    { calls: [{ name: 'vfs_write', args: { path: 'a.py', content: A_PY } }] },
    { calls: [{ name: 'exec', args: { path: 'a.py' } }] },
    { calls: [{ name: 'shell', args: { script: 'ls; cat out.txt | wc -l' } }] },
    { calls: [{ name: 'exec', args: { language: 'python', code: "import os\nprint(os.listdir('.'), os.getcwd())" } }] },
    { calls: [{ name: 'done', args: { result: 'x' } }] }] });
const r = await engine.agent.run({ system: 's', task: 'x' });
for (const e of r.events) console.log(JSON.stringify(e));
await engine.close();
