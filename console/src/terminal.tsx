// Terminal tabs: xterm.js on the sidecar's PTY (create, stream, input, resize on window resize,
// close), through the operator API or a TEE enclave's owner channel (ops.ts). xterm is loaded on
// demand.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api.ts';
import type { SandboxOps, TerminalOps } from './ops.ts';
import { Err } from './ui.tsx';

/**
 * xterm.js adds <style> elements at run time; the page's CSP allows only those carrying this
 * response's nonce, so style elements created by the page get it (scripts are never allowed inline).
 */
export function nonceStyles(): void {
  const nonce = document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content;
  if (!nonce || (document as { __nonced?: boolean }).__nonced) return;
  (document as { __nonced?: boolean }).__nonced = true;
  const create = document.createElement.bind(document);
  document.createElement = ((tag: string, o?: ElementCreationOptions) => {
    const el = create(tag, o);
    if (tag.toLowerCase() === 'style') el.setAttribute('nonce', nonce);
    return el;
  }) as typeof document.createElement;
}

function TerminalTab({ ops, active }: { ops: TerminalOps; active: boolean }) {
  const host = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    let dispose = () => {};
    (async () => {
      nonceStyles();
      const [{ Terminal }] = await Promise.all([
        import('@xterm/xterm'),
        import('@xterm/xterm/css/xterm.css'),
      ]);
      const size = () => {
        const el = host.current!;
        return {
          cols: Math.max(20, Math.floor(el.clientWidth / 9)),
          rows: Math.max(8, Math.floor(el.clientHeight / 17)),
        };
      };
      const tid = await ops.create(size().cols, size().rows);
      const term = new Terminal({ ...size(), convertEol: false, fontSize: 14 });
      term.open(host.current!);
      // One input request at a time, keystrokes typed meanwhile batched: order is kept.
      let pending = '';
      let sending = false;
      const flush = async () => {
        if (sending || !pending) return;
        sending = true;
        const data = pending;
        pending = '';
        try {
          await ops.input(tid, data);
        } catch (e) {
          setError(describeError(e));
        } finally {
          sending = false;
          void flush();
        }
      };
      term.onData((data) => {
        pending += data;
        void flush();
      });
      const onResize = () => {
        const s = size();
        term.resize(s.cols, s.rows);
        ops.resize(tid, s.cols, s.rows).catch(() => {});
      };
      window.addEventListener('resize', onResize);
      // Once its stream has ended (shell exited, or the container was recreated by a secrets
      // change), the terminal is gone on the sandbox side: nothing to delete.
      let ended = false;
      dispose = () => {
        window.removeEventListener('resize', onResize);
        term.dispose();
        if (!ended) ops.close(tid).catch(() => {});
      };
      term.focus();
      await ops
        .stream(
          tid,
          (ev) => {
            try {
              const f = JSON.parse(ev.data) as { type?: string; properties?: { text?: string } };
              if (f.type === 'data.stdout' && f.properties?.text) term.write(f.properties.text);
              if (f.type === 'session.exited') term.write('\r\n[session ended]\r\n');
            } catch {
              term.write(ev.data);
            }
          },
          ctl.signal,
        )
        .finally(() => {
          if (ctl.signal.aborted) return;
          ended = true;
          term.write('\r\n[terminal closed: open a new one]\r\n');
        });
    })().catch((e) => {
      if (!ctl.signal.aborted) setError(describeError(e));
    });
    return () => {
      ctl.abort();
      dispose();
    };
  }, [ops]);
  return (
    <div class="term" hidden={!active}>
      <div ref={host} class="xterm-host" data-testid="terminal" />
      <Err e={error} />
    </div>
  );
}

export function Terminals({ ops }: { ops: SandboxOps }) {
  const [tabs, setTabs] = useState([1]);
  const [active, setActive] = useState(1);
  const add = () => {
    const n = Math.max(0, ...tabs) + 1;
    setTabs([...tabs, n]);
    setActive(n);
  };
  const close = (n: number) => {
    const rest = tabs.filter((t) => t !== n);
    setTabs(rest);
    if (active === n && rest.length) setActive(rest[rest.length - 1]!);
  };
  return (
    <section aria-label="Terminals">
      <div role="tablist" class="row">
        {tabs.map((n) => (
          <span key={n} class="tabbtn">
            <button type="button" role="tab" aria-selected={n === active} onClick={() => setActive(n)}>
              Terminal {n}
            </button>
            <button type="button" aria-label={`Close terminal ${n}`} onClick={() => close(n)}>
              ×
            </button>
          </span>
        ))}
        <button type="button" onClick={add} data-testid="terminal-add">
          + New terminal
        </button>
      </div>
      {tabs.map((n) => (
        <TerminalTab key={`${ops.key}:${n}`} ops={ops.terminal} active={n === active} />
      ))}
    </section>
  );
}
