// Builds the environment of every child: platform env, the user's delivered env, the agent user's
// identity, request env — never the token.
import type { SidecarConfig } from '../config.ts';
import { stripPrivateEnv } from '../config.ts';

export function childEnv(config: SidecarConfig, extra?: Record<string, string>): Record<string, string> {
  return stripPrivateEnv({
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    LANG: 'C.UTF-8',
    ...config.childEnv,
    ...config.userEnv.current,
    HOME: config.agentHome,
    USER: 'agent',
    LOGNAME: 'agent',
    SHELL: '/bin/bash',
    ...extra,
  });
}
