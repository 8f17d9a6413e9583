// Argument parsing and help: the grammar table, global flags anywhere, clear USAGE errors.
import { describe, expect, it } from 'vitest';
import { isClientError } from '../errors.ts';
import { COMMANDS, GLOBAL_OPTIONS, INSTANCE_SANDBOX, parseCli } from './args.ts';
import { commandHelp, EXIT_CODES_HELP, globalHelp } from './help.ts';

const usageError = (argv: string[]) => {
  try {
    parseCli(argv);
  } catch (e) {
    if (isClientError(e, 'USAGE')) return e.message;
    throw e;
  }
  throw new Error(`no error for ${argv.join(' ')}`);
};

describe('parseCli', () => {
  it('finds the command after global flags that take values', () => {
    const a = parseCli(['--operator', 'http://o', '--json', 'get', 'sb-1']);
    expect(a).toMatchObject({ command: 'get', positionals: ['sb-1'], help: false });
    expect(a.globals).toMatchObject({ operator: 'http://o', json: true });
  });

  it('--instance SERVICE_ID stands in for the sandbox id, wherever the command takes it', () => {
    expect(parseCli(['exec', '--instance', '4', '--', 'ls -la'])).toMatchObject({
      command: 'exec',
      globals: { instance: '4' },
      positionals: [INSTANCE_SANDBOX, 'ls -la'],
    });
    expect(parseCli(['--instance', '4', 'secrets', 'set', 'K=v']).positionals).toEqual([
      'set',
      INSTANCE_SANDBOX,
      'K=v',
    ]);
    expect(parseCli(['get', '--instance', '4']).positionals).toEqual([INSTANCE_SANDBOX]);
    expect(parseCli(['prompt', '--instance=4', 'hello', 'there']).positionals).toEqual([
      INSTANCE_SANDBOX,
      'hello',
      'there',
    ]);
    expect(usageError(['get', '--instance', 'four'])).toMatch(/--instance must be a service id/);
    expect(usageError(['create', '--instance', '4'])).toMatch(/create does not take --instance/);
    // workflow: every action takes the service id (no sandbox id is filled in).
    expect(
      parseCli(['workflow', 'create', '--instance', '4', '--name', 'n', '--command', 'ls']),
    ).toMatchObject({ globals: { instance: '4' }, positionals: ['create'] });
    expect(parseCli(['workflow', 'runs', '12', '--instance', '4']).positionals).toEqual(['runs', '12']);
    expect(usageError(['workflow', 'create', '--instance', '--name', 'n'])).toMatch(/--instance/);
  });

  it('accepts global flags after the command too', () => {
    const a = parseCli(['list', '--operator=http://o', '--private-key', '0xabc']);
    expect(a.command).toBe('list');
    expect(a.globals).toMatchObject({ operator: 'http://o', 'private-key': '0xabc' });
  });

  it('keeps command flags apart from globals, with repeatable ones as arrays', () => {
    const a = parseCli([
      'create',
      '--name',
      'x',
      '--env',
      'A=1',
      '--env',
      'B=2',
      '--cpu',
      '2',
      '--devnet',
      'd.json',
    ]);
    expect(a.options).toMatchObject({ name: 'x', env: ['A=1', 'B=2'], cpu: '2' });
    expect(a.globals).toMatchObject({ devnet: 'd.json' });
  });

  it('takes everything after -- as the exec command, flags included', () => {
    const a = parseCli(['exec', 'sb-1', '--cwd', '/tmp', '--', 'ls', '-la', '--color']);
    expect(a.positionals).toEqual(['sb-1', 'ls', '-la', '--color']);
    expect(a.options.cwd).toBe('/tmp');
  });

  it('secrets takes an action, an id and pairs', () => {
    expect(parseCli(['secrets', 'set', 'sb-1', 'A=1', 'B']).positionals).toEqual(['set', 'sb-1', 'A=1', 'B']);
  });

  it.each([
    [['bogus'], /unknown command "bogus"/],
    [['get'], /get: missing <id>; usage: agent-sandbox get <id>/],
    [['get', 'a', 'b'], /unexpected argument "b"/],
    [['list', '--nope'], /Unknown option '--nope'.*agent-sandbox list --help/],
    [['exec', 'sb-1'], /missing <command>/],
    [['--operator'], /argument missing/],
    [['secrets', 'set'], /missing <id>/],
  ])('%j is a USAGE error that says what to do', (argv, message) => {
    expect(usageError(argv)).toMatch(message);
  });

  it('--help and -h are recognised on every command, even with missing arguments', () => {
    for (const c of Object.keys(COMMANDS)) {
      expect(parseCli([c, '--help']).help).toBe(true);
      expect(parseCli([c, '-h']).help).toBe(true);
    }
  });
});

describe('help', () => {
  it('global help lists every command, global flag and exit code', () => {
    const h = globalHelp();
    for (const c of Object.keys(COMMANDS)) expect(h).toContain(`  ${c}`);
    for (const f of Object.keys(GLOBAL_OPTIONS)) expect(h).toContain(`--${f}`);
    expect(h).toContain(EXIT_CODES_HELP);
    expect(h).toMatch(/sessions\.json \(mode 0600/);
  });

  it("each command's help shows its usage and every one of its flags", () => {
    for (const [name, spec] of Object.entries(COMMANDS)) {
      const h = commandHelp(name);
      expect(h).toContain(`Usage: agent-sandbox ${spec.usage}`);
      for (const f of Object.keys(spec.options)) expect(h).toContain(`--${f}`);
    }
  });
});
