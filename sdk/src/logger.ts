// The SDK's default structured logger (pino). Callers usually pass their own.
import pino, { type Logger } from 'pino';

export function defaultLogger(): Logger {
  return pino({ name: 'tangle-sdk', level: process.env['LOG_LEVEL'] ?? 'info' });
}
