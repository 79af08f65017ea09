// Test helper run as a child process (`node --import tsx agent-child.ts ID TASK`): an engine on
// $MEMBRANE_HOME whose llm broker points at $MEMBRANE_LLM_URL, starting one agent session and
// printing its step events as JSON lines — so a test can SIGKILL a whole engine mid-session.
import { createEngine } from '../../src/index.ts';

const [id, task] = process.argv.slice(2) as [string, string];
const engine = createEngine({ poolSize: 1, brokers: { llm: { baseUrl: process.env['MEMBRANE_LLM_URL']!, model: 'scripted' } } });
engine.agent.start({ id, system: 'You are resumable.', task, onStep: (e) => process.stdout.write(`${JSON.stringify(e)}\n`) });
setInterval(() => {}, 1000);
