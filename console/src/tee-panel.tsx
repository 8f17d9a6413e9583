// TEE-instance mode: the attestation panel. Asks the operator for evidence over a fresh random nonce
// of this page's own, and verifies it here (the verifier, @agent-sandbox/attestation/browser, loads
// on the first check): SEV-SNP chain to the AMD root the user picks, report signature, the binding
// of report_data to (chain, service, sandbox, operator, key, our nonce), and the measurements the
// user typed in. Nothing the operator says about its own verdict is shown as the result.

import type { AttestationResult, BoundAttestation } from '@agent-sandbox/attestation/browser';
import { useState } from 'preact/hooks';
import { describeError } from './api.ts';
import { api, type Capabilities } from './main.tsx';

interface Outcome {
  result: AttestationResult;
  tee: string;
  ctx: string;
  nonce: string;
  tcb?: string;
}

const randomNonce = (): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('');

export function Attestation({ sandbox, caps }: { sandbox: string; caps: Capabilities }) {
  const [anchors, setAnchors] = useState<'milan' | 'custom'>('milan');
  const [ark, setArk] = useState('');
  const [ask, setAsk] = useState('');
  const [allow, setAllow] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [out, setOut] = useState<Outcome>();
  const check = async () => {
    setBusy(true);
    setError(undefined);
    setOut(undefined);
    try {
      const v = await import('@agent-sandbox/attestation/browser');
      const allowList = v.parseAllowList(allow);
      if (allowList.length === 0)
        throw new Error('Enter the measurement(s) you trust first (hex, or a JSON list).');
      if (anchors === 'custom' && (!ark.trim() || !ask.trim()))
        throw new Error('Paste both the ARK and the ASK (PEM).');
      const ctx = v.contextString({
        chainId: caps.chain?.chainId ?? 0,
        serviceId: BigInt(caps.serviceId ?? '0'),
        sandboxId: sandbox,
        operator: caps.operator ?? '',
        // The enclave must obey you: the context names the signed-in wallet as its owner.
        owner: api.address ?? '',
      });
      const nonce = randomNonce();
      const att = await api.json<BoundAttestation>(
        'GET',
        `/api/sandboxes/${sandbox}/tee/attestation?nonce=${nonce}`,
      );
      const result = await v.verifyBoundAttestationWeb(att, {
        nowMs: Date.now(),
        sevAnchors:
          anchors === 'milan' ? { ark: v.AMD_MILAN_ARK_PEM, ask: v.AMD_MILAN_ASK_PEM } : { ark, ask },
        expect: { ctx, nonce: v.fromHex(nonce) },
        allowList,
      });
      let tcb: string | undefined;
      if (att.tee === 'sev' && result.verification.signature_verified) {
        const t = v.parseSnpReport(v.fromHex(att.evidence)).reportedTcb;
        tcb = `bootloader ${t.bootloader}, tee ${t.tee}, snp ${t.snp}, microcode ${t.microcode}`;
      }
      setOut({ result, tee: att.tee, ctx, nonce, ...(tcb ? { tcb } : {}) });
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  const r = out?.result.verification;
  return (
    <div class="stack" data-testid="attestation">
      <p class="muted">
        Checked in this browser against a fresh nonce of its own. SEV-SNP is verified here; TDX and Nitro
        evidence is verified by the CLI: <code>agent-sandbox tee verify</code> (which also checks the on-chain
        document).
      </p>
      <p class="muted" data-testid="attestation-caveat">
        What this proves: this page, and the verifier code in it, are served by the operator, and the chain
        id, service and operator it checks against come from the operator's <code>/api/capabilities</code>. A
        dishonest operator could serve a page that says "verified" regardless. It is a convenience, not a
        guarantee: the real check is <code>agent-sandbox tee verify</code>, run from code you installed.
      </p>
      <label>
        Measurements you trust (never taken from the operator): hex values, or a JSON list such as{' '}
        <code>[{'{"measurement": "…", "host_data": "…"}'}]</code>
        <textarea
          rows={3}
          value={allow}
          onInput={(e) => setAllow(e.currentTarget.value)}
          data-testid="att-allow"
        />
      </label>
      <fieldset>
        <legend>AMD root you trust</legend>
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
      <div class="row">
        <button type="button" onClick={check} disabled={busy} data-testid="att-verify">
          {busy ? 'Verifying…' : 'Fetch and verify'}
        </button>
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {out && r && (
        <div data-testid="att-result" data-verdict={r.verdict}>
          <p class={r.verdict === 'verified' ? 'verified' : 'error'} role="status">
            <strong>{r.verdict === 'verified' ? 'Verified' : 'Refused'}</strong>
            {r.reason ? `: ${r.reason}` : ''}
          </p>
          <dl>
            <dt>TEE</dt>
            <dd>{out.tee}</dd>
            <dt>Signature chain to the trusted root</dt>
            <dd>{r.signature_verified ? 'verified' : 'not verified'}</dd>
            <dt>Binding (report_data = our context, key and nonce)</dt>
            <dd>
              {r.report_data_matched ? 'matches' : 'does not match'} — <code>{out.ctx}</code>, nonce{' '}
              <code>{out.nonce.slice(0, 16)}…</code>
            </dd>
            <dt>Measurements</dt>
            <dd>
              {Object.entries(out.result.facts?.measurements ?? {}).map(([k, val]) => (
                <div key={k}>
                  {k}: <code class="wrap">{val}</code>
                </div>
              ))}
              {r.measurement_matched ? ' (in your list)' : ' (not in your list)'}
            </dd>
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
