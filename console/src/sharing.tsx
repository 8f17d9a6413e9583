// The owner's sharing of a sandbox: team members (other wallets that sign in as themselves and
// may exec, prompt, use terminals, files and ports; only the owner deletes, manages members and
// secrets) and preview links (a URL anyone may open to reach one exposed port until it expires or
// is revoked; the URL is shown once). Removal and revocation take effect at once on the operator.
import { useEffect, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { api } from './main.tsx';
import { Err } from './ui.tsx';

export function Members({ sandbox }: { sandbox: string }) {
  const [members, setMembers] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const base = `/api/sandboxes/${sandbox}/members`;
  /** Shows the answer's member list; false (the address kept in the field) when refused. */
  const run = async (p: Promise<{ members: string[] }>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      setMembers((await p).members);
      return true;
    } catch (e) {
      setError(describeError(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    run(api.json('GET', base));
  }, [sandbox]);
  const add = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const address = String(new FormData(form).get('address') ?? '').trim();
    run(api.json<{ members: string[] }>('POST', base, { address })).then((ok) => ok && form.reset());
  };
  return (
    <section aria-label="Members">
      <h3>Members</h3>
      <p class="meta">
        Members sign in with their own wallet and may chat, exec, use terminals, files and port previews. Only
        you delete the sandbox and manage members and secrets. Removing a member ends its open terminals and
        streams at once.
      </p>
      {members.length === 0 && <p>No members: only you.</p>}
      <ul data-testid="members">
        {members.map((m) => (
          <li key={m} data-address={m}>
            <code>{m}</code>{' '}
            <button
              type="button"
              disabled={busy}
              onClick={() => run(api.json('DELETE', `${base}/${m}`))}
              data-testid="member-remove"
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form onSubmit={add} class="row">
        <label class="grow">
          Wallet address{' '}
          <input
            name="address"
            required
            pattern="0x[0-9a-fA-F]{40}"
            placeholder="0x…"
            data-testid="member-address"
          />
        </label>
        <button type="submit" disabled={busy} data-testid="member-add">
          Add member
        </button>
      </form>
      <Err e={error} />
    </section>
  );
}

interface Link {
  id: string;
  port: number;
  origin: string;
  state: 'active' | 'revoked' | 'expired';
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export function PreviewLinks({ sandbox, ports }: { sandbox: string; ports: string[] }) {
  const [links, setLinks] = useState<Link[]>([]);
  const [created, setCreated] = useState<Link & { url: string }>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const base = `/api/sandboxes/${sandbox}/preview-links`;
  const load = () =>
    api.json<{ links: Link[] }>('GET', base).then(
      (r) => setLinks(r.links),
      (e) => setError(describeError(e)),
    );
  useEffect(() => {
    load();
  }, [sandbox]);
  const step = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
      await load();
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  const create = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const expires = String(f.get('expires') ?? '').trim();
    step(async () => {
      setCreated(undefined);
      setCreated(
        await api.json('POST', base, {
          port: Number(f.get('port')),
          ...(expires ? { expires_in_seconds: Number(expires) } : {}),
        }),
      );
    });
  };
  const revoke = (id: string) =>
    step(async () => {
      await api.json('DELETE', `${base}/${id}`);
      if (created?.id === id) setCreated(undefined);
    });
  return (
    <section aria-label="Preview links">
      <h3>Preview links</h3>
      <p class="meta">
        A link reaches one exposed port on its own origin, for anyone who has it, until it expires or you
        revoke it (open connections end too). Requests through a link are rate-limited.
      </p>
      <form onSubmit={create} class="row">
        <label>
          Port{' '}
          <select name="port" required data-testid="link-port">
            {ports.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <label>
          Expires in (seconds){' '}
          <input
            name="expires"
            type="number"
            min={1}
            placeholder="the operator's default"
            data-testid="link-expires"
          />
        </label>
        <button type="submit" disabled={busy || ports.length === 0} data-testid="link-create">
          Create link
        </button>
      </form>
      {ports.length === 0 && <p>This sandbox exposes no ports (they are chosen at create).</p>}
      {created && (
        <p data-testid="link-created">
          Share this link (shown only now): <code data-testid="link-url">{created.url}</code>
        </p>
      )}
      <ul data-testid="links">
        {links.map((l) => (
          <li key={l.id} data-id={l.id} data-state={l.state}>
            port {l.port} · <span data-testid="link-state">{l.state}</span> · expires{' '}
            {new Date(l.expires_at).toLocaleString()}
            {l.revoked_at ? ` · revoked ${new Date(l.revoked_at).toLocaleString()}` : ''}{' '}
            {l.state === 'active' && (
              <button type="button" disabled={busy} onClick={() => revoke(l.id)} data-testid="link-revoke">
                Revoke
              </button>
            )}
          </li>
        ))}
      </ul>
      <Err e={error} />
    </section>
  );
}
