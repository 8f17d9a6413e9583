// The operator's structured logger: pino JSON lines, or pino-pretty for humans (--pretty).
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

export function createLogger(opts: { level: string; pretty: boolean; name?: string }): Logger {
  const base = {
    name: opts.name ?? 'agent-sandbox-operator',
    level: opts.level,
    // Belt and braces: these keys never reach a log line even if a caller passes them.
    redact: {
      paths: [
        'token',
        '*.token',
        'secret',
        '*.secret',
        'privateKey',
        '*.privateKey',
        'password',
        '*.password',
      ],
      censor: '[redacted]',
    },
  };
  // Logs go to stderr: stdout carries the command's own output (e.g. run's one-line ready event).
  if (!opts.pretty) return pino(base, pino.destination({ fd: 2, sync: true }));
  return pino(
    base,
    pretty({
      colorize: process.stderr.isTTY,
      destination: 2,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,name',
    }),
  );
}
