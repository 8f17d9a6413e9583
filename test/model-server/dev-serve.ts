// Dev aid: runs the scripted model server on a fixed port and logs each request (manual harness recipes).
import { ModelServer } from './server.ts';

const s = await ModelServer.start(process.env['HOST'] ?? '127.0.0.1', Number(process.env['PORT'] ?? 0));
s.script = {
  command: process.env['SCRIPT_COMMAND'] ?? 'echo hello > hello.txt',
  finalText: process.env['SCRIPT_FINAL'] ?? 'I wrote hello.txt.',
};
process.stdout.write(`scripted model server at ${s.url}\n`);
s.onRequest = (r) => process.stdout.write(`${r.path} -> ${r.reply} ${JSON.stringify(r.charge)}\n`);
