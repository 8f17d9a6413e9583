// TEE-instance mode: the attestation panel. The context the enclave must be bound to is read from
// the chain through the user's wallet and from what the user types (tee-context.ts), never from
// the operator's /api/capabilities; the evidence is asked for over a fresh random nonce of this
// page's own. SEV-SNP is verified here (live and on-chain document); TDX/Nitro keys must be the
// one `agent-sandbox tee verify` printed. A verified key opens the owner channel (tee-ops.ts) the
// other TEE tabs use. The panel says what this proves when the operator serves the page.
import type { AttestationResult, BoundAttestation } from '@agent-sandbox/attestation/browser';
import { useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { api } from './main.tsx';
import type { ChainContext } from './tee-context.ts';
import { loadTeeSettings, saveTeeSettings, setTeeSession, useTeeSession } from './tee-session.ts';

interface Outcome {
  live: AttestationResult;
  onChain?: AttestationResult;
  trust: 'verified' | 'pinned';
  tee: string;
  c: ChainContext;
  nonce: string;
  tcb?: string;
}

const randomNonce = (): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('');

const Field = (p: { label: string; value: string; set: (v: string) => void; id: string; hint?: string }) => (
  <label>
    {p.label}
    {p.hint && <span class="meta"> {p.hint}</span>}
    <input
      value={p.value}
      onInput={(e) => p.set(e.currentTarget.value)}
      data-testid={p.id}
      spellcheck={false}
    />
  </label>
);

export function Attestation({ sandbox }: { sandbox: string }) {
  const [s, setS] = useState(loadTeeSettings);
  const set = (k: keyof typeof s) => (v: string) => setS({ ...s, [k]: v });
  const [anchors, setAnchors] = useState<'milan' | 'custom'>('milan');
  const [ark, setArk] = useState('');
  const [ask, setAsk] = useState('');
  const [allow, setAllow] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [out, setOut] = useState<Outcome>();
  const session = useTeeSession(sandbox);
  const check = async () => {
    setBusy(true);
    setError(undefined);
    setOut(undefined);
    setTeeSession(undefined);
    try {
      saveTeeSettings(s);
      const [v, { chainContext, checkPinnedKey, refuseOtherOwner }, { TeeOps }, { signMessage }] =
        await Promise.all([
          import('@agent-sandbox/attestation/browser'),
          import('./tee-context.ts'),
          import('./tee-ops.ts'),
          import('./wallet.ts'),
        ]);
      const me = api.address ?? '';
      const c = await chainContext(s, me);
      if (c.sandboxId !== sandbox)
        throw new Error(
          `the chain attests sandbox ${c.sandboxId}, not ${sandbox} (the one the operator lists here)`,
        );
      const doc = v.parseAttestationDoc(c.docJson);
      await refuseOtherOwner(doc.binding.ctx, me, 'on-chain attestation');
      const nonce = randomNonce();
      const att = await api.json<BoundAttestation>(
        'GET',
        `/api/sandboxes/${encodeURIComponent(sandbox)}/tee/public-key?nonce=${nonce}`,
      );
      await refuseOtherOwner(att.binding?.ctx ?? '', me, 'live attestation');
      let o: Outcome;
      if (att.tee === 'sev') {
        const allowList = v.parseAllowList(allow);
        if (allowList.length === 0)
          throw new Error('Enter the measurement(s) you trust first (hex, or a JSON list).');
        if (anchors === 'custom' && (!ark.trim() || !ask.trim()))
          throw new Error('Paste both the ARK and the ASK (PEM).');
        const policy = {
          nowMs: Date.now(),
          sevAnchors:
            anchors === 'milan' ? { ark: v.AMD_MILAN_ARK_PEM, ask: v.AMD_MILAN_ASK_PEM } : { ark, ask },
          allowList,
        };
        const live = await v.verifyBoundAttestationWeb(att, {
          ...policy,
          expect: { ctx: c.ctx, nonce: v.fromHex(nonce) },
        });
        const onChain = await v.verifyBoundAttestationWeb(v.docAsAttestation(doc, att.collateral), {
          ...policy,
          expect: { ctx: c.ctx, nonce: v.onChainNonce(c.chainId, c.serviceId, c.operator) },
        });
        let tcb: string | undefined;
        if (live.verification.signature_verified) {
          const t = v.parseSnpReport(v.fromHex(att.evidence)).reportedTcb;
          tcb = `bootloader ${t.bootloader}, tee ${t.tee}, snp ${t.snp}, microcode ${t.microcode}`;
        }
        o = { live, onChain, trust: 'verified', tee: att.tee, c, nonce, ...(tcb ? { tcb } : {}) };
      } else {
        const k = await checkPinnedKey(att, c, v.fromHex(nonce), s.pinnedKey);
        o = { live: k.live, trust: 'pinned', tee: att.tee, c, nonce };
      }
      setOut(o);
      const ok =
        o.live.verification.verdict === 'verified' &&
        (o.onChain === undefined || o.onChain.verification.verdict === 'verified');
      if (ok) {
        const pubkey = v.fromHex(att.binding.pubkey);
        const ops = new TeeOps(sandbox, { pubkey, ctx: c.ctx }, (m) => signMessage(me as `0x${string}`, m));
        await ops.probe();
        setTeeSession({
          sandboxId: sandbox,
          ctx: c.ctx,
          tee: att.tee,
          trust: o.trust,
          ops,
          // Sealed in this page, sent through the channel signed by the owner.
          setSecrets: (env) => ops.setSecrets(env),
        });
      }
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  const r = out?.live.verification;
  const onChainR = out?.onChain?.verification;
  const verdict =
    r && r.verdict === 'verified' && (!onChainR || onChainR.verdict === 'verified') ? 'verified' : r?.verdict;
  return (
    <div class="stack" data-testid="attestation">
      <p class="muted" data-testid="attestation-caveat">
        What this proves: the context below is read from the chain through your wallet and from what you type
        here, never from this operator; the evidence is bound to a fresh nonce made in this page, and the tabs
        then talk to the verified enclave end to end (the operator relays sealed bytes it cannot read). But
        this page and its verifier code are served by the operator: a dishonest operator could serve a page
        that skips these checks. The check that does not rest on the operator is{' '}
        <code>agent-sandbox tee verify</code>, run from code you installed.
      </p>
      <fieldset>
        <legend>Context (from the chain and from you)</legend>
        <Field label="TEE-instance contract" value={s.blueprint} set={set('blueprint')} id="att-blueprint" />
        <Field label="Service id" value={s.serviceId} set={set('serviceId')} id="att-service" />
        <Field
          label="Operator address"
          hint="(optional: by default the chain's operator that reported this page's address)"
          value={s.operator}
          set={set('operator')}
          id="att-operator"
        />
      </fieldset>
      <label>
        Measurements you trust (SEV-SNP; never taken from the operator): hex values, or a JSON list such as{' '}
        <code>[{'{"measurement": "…", "host_data": "…"}'}]</code>
        <textarea
          rows={3}
          value={allow}
          onInput={(e) => setAllow(e.currentTarget.value)}
          data-testid="att-allow"
        />
      </label>
      <fieldset>
        <legend>AMD root you trust (SEV-SNP)</legend>
        <label class="choice">
          <input type="radio" checked={anchors === 'milan'} onChange={() => setAnchors('milan')} /> AMD Milan
          (ARK-Milan, SEV-Milan)
        </label>
        <label class="choice">
          <input
            type="radio"
            checked={anchors === 'custom'}
            onChange={() => setAnchors('custom')}
            data-testid="att-custom"
          />{' '}
          Other ARK and ASK (PEM), e.g. a devnet's test PKI
        </label>
        {anchors === 'custom' && (
          <>
            <textarea
              rows={3}
              placeholder="ARK PEM"
              value={ark}
              onInput={(e) => setArk(e.currentTarget.value)}
              data-testid="att-ark"
            />
            <textarea
              rows={3}
              placeholder="ASK PEM"
              value={ask}
              onInput={(e) => setAsk(e.currentTarget.value)}
              data-testid="att-ask"
            />
          </>
        )}
      </fieldset>
      <Field
        label="Enclave key (TDX, Nitro)"
        hint="(this page cannot verify their quotes: paste the key `agent-sandbox tee verify` printed)"
        value={s.pinnedKey}
        set={set('pinnedKey')}
        id="att-pinned-key"
      />
      <div class="row">
        <button type="button" onClick={check} disabled={busy} data-testid="att-verify">
          {busy ? 'Verifying…' : 'Fetch and verify'}
        </button>
        {session && (
          <span class="verified" data-testid="tee-channel-open">
            Owner channel open: the other tabs talk to this enclave end to end.
          </span>
        )}
      </div>
      {error && (
        <p role="alert" class="error" data-testid="att-error">
          {error}
        </p>
      )}
      {out && r && (
        <div data-testid="att-result" data-verdict={verdict} data-trust={out.trust}>
          <p class={verdict === 'verified' ? 'verified' : 'error'} role="status">
            <strong>
              {verdict !== 'verified' ? 'Refused' : out.trust === 'pinned' ? 'Key pinned' : 'Verified'}
            </strong>
            {r.reason ? `: ${r.reason}` : onChainR?.reason ? `: on-chain document: ${onChainR.reason}` : ''}
            {verdict === 'verified' && out.trust === 'pinned'
              ? `: the ${out.tee} enclave serves the key you pinned, bound to the chain's context and this page's nonce (its quote was verified by the CLI, not here)`
              : ''}
          </p>
          <dl>
            <dt>TEE</dt>
            <dd>{out.tee}</dd>
            <dt>Context</dt>
            <dd>
              <code data-testid="att-ctx">{out.c.ctx}</code>
              <div class="meta">
                chain {String(out.c.chainId)} (your wallet's network) · service {String(out.c.serviceId)}{' '}
                (you) · operator {out.c.operator} (
                {out.c.operatorFrom === 'chain'
                  ? "the chain: it reported this page's address"
                  : 'you, listed on chain'}
                ) · sandbox {out.c.sandboxId} (the chain, tx <code>{out.c.tx.slice(0, 12)}…</code>) · owner{' '}
                {out.c.owner} (your wallet)
              </div>
            </dd>
            <dt>Signature chain to the trusted root</dt>
            <dd>
              {r.signature_verified
                ? 'verified'
                : out.trust === 'pinned'
                  ? 'not checked here (CLI)'
                  : 'not verified'}
            </dd>
            <dt>Binding (report_data = context, key and nonce)</dt>
            <dd>
              {r.report_data_matched ? 'matches' : 'does not match'} — nonce{' '}
              <code>{out.nonce.slice(0, 16)}…</code>
            </dd>
            {onChainR && (
              <>
                <dt>On-chain document</dt>
                <dd>{onChainR.verdict}</dd>
              </>
            )}
            {out.trust === 'verified' && (
              <>
                <dt>Measurements</dt>
                <dd>
                  {Object.entries(out.live.facts?.measurements ?? {}).map(([k, val]) => (
                    <div key={k}>
                      {k}: <code class="wrap">{val}</code>
                    </div>
                  ))}
                  {r.measurement_matched ? ' (in your list)' : ' (not in your list)'}
                </dd>
              </>
            )}
            {out.tcb && (
              <>
                <dt>Reported TCB</dt>
                <dd>{out.tcb}</dd>
              </>
            )}
          </dl>
        </div>
      )}
    </div>
  );
}
