// The small, always-loaded part of the console's TEE support: the user's TEE settings for this
// origin (localStorage; contract, service, optional operator and pinned key — nothing secret) and
// the verified session the Attestation tab opens for the other tabs (memory only: a reload
// verifies again). The channel code itself (tee-ops.ts) loads with the first check.
import { useEffect, useState } from 'preact/hooks';
import type { TeeOps } from './tee-ops.ts';

export interface TeeSettings {
  /** The TEE-instance blueprint contract. */
  blueprint: string;
  serviceId: string;
  /** Optional: the operator's address (must be one the chain lists for the service). */
  operator: string;
  /** For TDX/Nitro: the enclave public key `agent-sandbox tee verify` printed (64 hex). */
  pinnedKey: string;
}

const KEY = 'console.tee.settings';
export const loadTeeSettings = (): TeeSettings => ({
  blueprint: '',
  serviceId: '',
  operator: '',
  pinnedKey: '',
  ...(JSON.parse(localStorage.getItem(KEY) ?? '{}') as Partial<TeeSettings>),
});
export const saveTeeSettings = (s: TeeSettings) => localStorage.setItem(KEY, JSON.stringify(s));
/** The user has set up a TEE check on this origin: the owner tabs go over the channel then. */
export const hasTeeSettings = () => localStorage.getItem(KEY) !== null;

export interface TeeSession {
  sandboxId: string;
  ctx: string;
  tee: string;
  /** How the key was trusted: verified here (SEV-SNP), or pinned from `agent-sandbox tee verify`. */
  trust: 'verified' | 'pinned';
  /** The owner channel (phala: to the CVM's sidecar; direct: to the operator program, the enclave). */
  ops: TeeOps;
  /** Seals `env` to the verified key in this page and sends it over the channel. */
  setSecrets(env: Record<string, string>): Promise<{ success: boolean; secrets_count?: number }>;
}

let current: TeeSession | undefined;
const listeners = new Set<(s: TeeSession | undefined) => void>();
export function setTeeSession(s: TeeSession | undefined): void {
  current = s;
  for (const l of listeners) l(s);
}
export function useTeeSession(sandboxId: string): TeeSession | undefined {
  const [s, setS] = useState(current);
  useEffect(() => {
    listeners.add(setS);
    return () => {
      listeners.delete(setS);
    };
  }, []);
  return s?.sandboxId === sandboxId ? s : undefined;
}
