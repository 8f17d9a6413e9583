// The TEE screens load on demand (a cloud operator's users never fetch them), keeping the first
// load small: the attestation panel and the TEE owner tabs, each as its own chunk.
import type { ComponentProps } from 'preact';
import { useEffect, useState } from 'preact/hooks';

type Panels = typeof import('./tee-panels.tsx');
type Panel = typeof import('./tee-panel.tsx');

export function TeeTab(props: ComponentProps<Panels['TeeTab']>) {
  const [m, setM] = useState<Panels>();
  useEffect(() => {
    import('./tee-panels.tsx').then(setM);
  }, []);
  return m ? <m.TeeTab {...props} /> : <p class="meta">Loading…</p>;
}

export function Attestation(props: ComponentProps<Panel['Attestation']>) {
  const [m, setM] = useState<Panel>();
  useEffect(() => {
    import('./tee-panel.tsx').then(setM);
  }, []);
  return m ? <m.Attestation {...props} /> : <p class="meta">Loading…</p>;
}
