// One sandbox: its state and tabs for chat, terminals, files, exec, secrets, port previews and
// sharing (members, preview links). A member sees neither Secrets nor Sharing (the owner's).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { Chat } from './chat.tsx';
import { api, type Capabilities } from './main.tsx';
import { apiOps } from './ops.ts';
import { Exec, Files, Preview, Secrets } from './panels.tsx';
import { deadlines, type SandboxView as View } from './sandboxes.tsx';
import { Members, PreviewLinks } from './sharing.tsx';
import { Attestation, TeeTab } from './tee-lazy.tsx';
import { hasTeeSettings } from './tee-session.ts';
import { Terminals } from './terminal.tsx';

const TABS = ['Chat', 'Terminal', 'Files', 'Exec', 'Secrets', 'Preview', 'Sharing', 'Attestation'] as const;
const OWNER_TABS: readonly Tab[] = ['Secrets', 'Sharing'];
type Tab = (typeof TABS)[number];

export function SandboxView({ id, caps, onBack }: { id: string; caps: Capabilities; onBack: () => void }) {
  // A TEE sandbox (the operator says tee-instance, or this browser was set up to check one here):
  // its owner tabs go end to end to the enclave (tee-panels.tsx), never through the plain routes;
  // the enclave serves its owner only, so it has no Sharing tab.
  const tee = caps.mode === 'tee-instance' || hasTeeSettings();
  const [sb, setSb] = useState<View>();
  const member = sb?.role === 'member';
  const tabs = TABS.filter(
    (t) => (t !== 'Attestation' || tee) && !(tee && t === 'Sharing') && !(member && OWNER_TABS.includes(t)),
  );
  const [error, setError] = useState<string>();
  const [picked, setTab] = useState<Tab>((sessionStorage.getItem('console.tab') as Tab) ?? 'Chat');
  const tab = tabs.includes(picked) ? picked : 'Chat';
  useEffect(() => {
    api.json<View>('GET', `/api/sandboxes/${id}`).then(setSb, (e) => setError(describeError(e)));
  }, [id]);
  const ops = useMemo(() => apiOps(id), [id]);
  const [termsOpened, setTermsOpened] = useState(false);
  useEffect(() => {
    if (tab === 'Terminal') setTermsOpened(true);
  }, [tab]);
  const pick = (t: Tab) => {
    sessionStorage.setItem('console.tab', t);
    setTab(t);
  };
  return (
    <main>
      <div class="row">
        <button type="button" onClick={onBack} data-testid="back">
          ← Sandboxes
        </button>
        <h1 class="grow">{sb?.name || id}</h1>
        {sb && <span class={`state ${sb.state}`}>{sb.state}</span>}
        {sb && (
          <span class="role" data-testid="view-role">
            {member ? `member · shared by ${sb.owner}` : 'owner'}
          </span>
        )}
      </div>
      {sb?.timer_deadlines && (
        <p class="meta" data-testid="view-deadlines">
          {deadlines(sb.timer_deadlines) || 'no timer runs in this state'}
        </p>
      )}
      {error && (
        <p role="alert" class="error" data-testid="sandbox-error">
          {error}
        </p>
      )}
      {sb && (
        <>
          <div role="tablist" class="tabs">
            {tabs.map((t) => (
              <button
                key={t}
                type="button"
                role="tab"
                aria-selected={t === tab}
                onClick={() => pick(t)}
                data-testid={`tab-${t}`}
              >
                {t}
              </button>
            ))}
          </div>
          <div class="card">
            {tee && tab !== 'Attestation' && tab !== 'Preview' && tab !== 'Sharing' && (
              <TeeTab sandbox={id} tab={tab} onAttest={() => pick('Attestation')} />
            )}
            {!tee && tab === 'Chat' && <Chat sandbox={id} />}
            {/* Terminals stay mounted once opened: switching tabs must not end their shells. */}
            {!tee && (tab === 'Terminal' || termsOpened) && (
              <div hidden={tab !== 'Terminal'}>
                <Terminals ops={ops} />
              </div>
            )}
            {!tee && tab === 'Files' && <Files ops={ops} />}
            {!tee && tab === 'Exec' && <Exec ops={ops} />}
            {!tee && tab === 'Secrets' && <Secrets sandbox={id} />}
            {tab === 'Preview' && <Preview sandbox={id} ports={Object.keys(sb.ports ?? {})} />}
            {!tee && tab === 'Sharing' && (
              <>
                <Members sandbox={id} />
                <PreviewLinks sandbox={id} ports={Object.keys(sb.ports ?? {})} />
              </>
            )}
            {tab === 'Attestation' && tabs.includes('Attestation') && <Attestation sandbox={id} />}
          </div>
        </>
      )}
    </main>
  );
}
