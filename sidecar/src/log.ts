// The sidecar's structured logger (pino to stdout); request ids ride on child loggers, secrets never do.
import pino, { type Logger } from 'pino';

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { svc: 'sidecar' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Belt and braces: a token must never reach a log line even if someone logs headers.
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'token', 'authToken'],
      censor: '[redacted]',
    },
  });
}
