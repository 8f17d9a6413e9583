#!/usr/bin/env node
// Registers gVisor's runsc with the Docker engine: adds `runtimes.runsc` to daemon.json (every
// other key kept as it is), then makes the running engine reload it with SIGHUP (`runtimes` is
// one of the keys dockerd reloads; the engine is never restarted). Idempotent: an entry that is
// already right changes nothing. Prints what it changed.
//
//   node scripts/register-runsc.mjs [--config /etc/docker/daemon.json] [--runsc /usr/bin/runsc]
//                                   [--pid-file /var/run/docker.pid] [--no-reload]
//
// Exit codes: 0 registered (changed or not), 1 an error (daemon.json unreadable or not JSON: it
// is left untouched), 2 bad usage.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
if (args.includes('--help')) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 12)
      .join('\n'),
  );
  process.exit(0);
}
const configPath = opt('--config', '/etc/docker/daemon.json');
const runscPath = opt('--runsc', '/usr/bin/runsc');
const pidFile = opt('--pid-file', '/var/run/docker.pid');
const say = (m) => process.stderr.write(`[toolchain] ${m}\n`);
const die = (m) => {
  process.stderr.write(`[toolchain] error: ${m}\n`);
  process.exit(1);
};

/**
 * --network=host: the sandbox's sockets are made in the network namespace the engine gives the
 * container (its bridge, its port, the operator's egress rules), not in gVisor's own network
 * stack, which this gVisor (Debian's 0.0~20221219) refuses to start on a 6.x kernel (it takes the
 * net.core sysctls every namespace shows there for the root namespace's). --host-uds=create: a
 * Unix socket made inside the sandbox on a host bind mount is a real host socket (the only bind
 * mounts are the workspace volume and, under egress none, the sidecar's socket directory). The
 * rest is gVisor's default (ptrace platform).
 */
const RUNSC_ENTRY = (path) => ({ path, runtimeArgs: ['--host-uds=create', '--network=host'] });

let config = {};
if (existsSync(configPath)) {
  const text = readFileSync(configPath, 'utf8');
  try {
    config = text.trim() === '' ? {} : JSON.parse(text);
  } catch (e) {
    die(`${configPath} is not valid JSON (${e.message}); fix it by hand, this script leaves it as it is`);
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    die(`${configPath} is not a JSON object; fix it by hand, this script leaves it as it is`);
  }
}
const want = RUNSC_ENTRY(runscPath);
const have = config.runtimes?.runsc;
if (JSON.stringify(have) === JSON.stringify(want)) {
  say(`runsc already registered in ${configPath}`);
} else {
  const next = { ...config, runtimes: { ...(config.runtimes ?? {}), runsc: want } };
  const text = `${JSON.stringify(next, null, 2)}\n`;
  // Checked before it replaces anything: a broken daemon.json stops the next engine start.
  const back = JSON.parse(text);
  if (JSON.stringify(back.runtimes.runsc) !== JSON.stringify(want))
    die('internal: the merged config does not round-trip');
  for (const k of Object.keys(config)) if (!(k in back)) die(`internal: key ${k} would be lost`);
  mkdirSync(dirname(configPath), { recursive: true });
  const tmp = `${configPath}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, configPath);
  say(`${have ? 'updated' : 'added'} runtimes.runsc in ${configPath}: ${JSON.stringify(want)}`);
}

if (args.includes('--no-reload')) process.exit(0);
const listed = () => {
  try {
    return execFileSync('docker', ['info', '--format', '{{json .Runtimes}}'], { encoding: 'utf8' });
  } catch {
    return '';
  }
};
const matches = () => {
  try {
    const r = JSON.parse(listed())?.runsc;
    return (
      r && r.path === want.path && JSON.stringify(r.runtimeArgs ?? []) === JSON.stringify(want.runtimeArgs)
    );
  } catch {
    return false;
  }
};
if (matches()) {
  say('the engine lists runsc');
  process.exit(0);
}
if (!existsSync(pidFile)) die(`no ${pidFile}: start the engine, it reads ${configPath} at start`);
const pid = Number(readFileSync(pidFile, 'utf8').trim());
if (!Number.isInteger(pid) || pid <= 1) die(`${pidFile} holds no pid`);
say(`asking the engine (pid ${pid}) to reload ${configPath} (SIGHUP; nothing is restarted)`);
process.kill(pid, 'SIGHUP');
const until = Date.now() + 20_000;
while (!matches()) {
  if (Date.now() > until)
    die(`the engine did not list runsc after SIGHUP; see its log (docker info, /var/log/dockerd.log)`);
  execFileSync('sleep', ['0.2']);
}
say('the engine lists runsc');
