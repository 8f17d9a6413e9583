// The long-lived connections the API holds open for a caller (terminal and run streams, proxied
// responses and WebSockets), each with the grant it was opened under, so that taking the grant
// away ends them at once: a removed member's streams, a revoked or expired preview link's.
// A request after the change is refused by the access check itself; this covers the ones
// already past it.

/** What a connection was opened under: a wallet's access to a sandbox, or a preview link. */
export interface LiveGrant {
  sandboxId: string;
  /** The signed-in wallet (lowercased) that opened it. */
  address?: string;
  /** The preview link it was opened with. */
  linkId?: string;
  /** An SSH tunnel (routes/ssh.ts): ended when a key is revoked. */
  ssh?: boolean;
}

interface Held {
  grant: LiveGrant;
  end: () => void;
  timer: NodeJS.Timeout | undefined;
}

export class LiveAccess {
  readonly #held = new Set<Held>();

  /**
   * Registers an open connection; `end` closes it (called at most once). With `expiresAt` it is
   * also ended then. Returns the release to call when the connection closes by itself.
   */
  hold(grant: LiveGrant, end: () => void, expiresAt?: number): () => void {
    const h: Held = { grant, end, timer: undefined };
    this.#held.add(h);
    if (expiresAt !== undefined) {
      h.timer = setTimeout(() => this.#end(h), Math.max(0, expiresAt - Date.now()));
      h.timer.unref();
    }
    return () => this.#release(h);
  }

  /** Ends what `address` holds open on the sandbox (it is no longer a member). Returns how many. */
  endAddress(sandboxId: string, address: string): number {
    const a = address.toLowerCase();
    return this.#endWhere((g) => g.sandboxId === sandboxId && g.address === a);
  }

  /** Ends all the sandbox's SSH tunnels (the last key revoked, or the sidecar could not be told which). */
  endSsh(sandboxId: string): number {
    return this.#endWhere((g) => g.sandboxId === sandboxId && g.ssh === true);
  }

  /** Ends what was opened with the preview link (revoked). */
  endLink(linkId: string): number {
    return this.#endWhere((g) => g.linkId === linkId);
  }

  /** How many connections are held (tests, metrics). */
  get size(): number {
    return this.#held.size;
  }

  #endWhere(match: (g: LiveGrant) => boolean): number {
    let n = 0;
    for (const h of [...this.#held]) {
      if (!match(h.grant)) continue;
      this.#end(h);
      n++;
    }
    return n;
  }

  #release(h: Held): void {
    if (h.timer) clearTimeout(h.timer);
    this.#held.delete(h);
  }

  #end(h: Held): void {
    if (!this.#held.has(h)) return;
    this.#release(h);
    try {
      h.end();
    } catch {
      // a connection that is already gone
    }
  }
}
