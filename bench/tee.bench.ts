// Benchmark: TEE verification and the configfs-tsm round trip, each with a floor measured in the
// same run. Run: npx tsx bench/tee.bench.ts [--n 200]
// - SNP report verification (chain + ECDSA P-384) vs the floor: the bare crypto.verify of the report.
// - TDX quote verification (dcap-qvl, the real vector at its pinned time) vs the same SNP floor.
// - HPKE seal+open of a 1 KiB env vs the floor: one ChaCha20-Poly1305 seal+open of the same bytes.
// - tsmReport over the FIFO test tree (write inblob, read generation/outblob/auxblob/generation,
//   firmware signing) vs the floor: a plain read of a 1184-byte file.
import { randomBytes, sign, verify } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSevTestPki, signSnpReport } from '@agent-sandbox/attestation/testing';
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import {
  contextString,
  generateKeyPair,
  SealedSecretOpener,
  sealSecrets,
  verifySnpReport,
  verifyTdxQuote,
} from '../attestation/index.ts';
import { tsmReport } from '../runtime/src/tee/configfs-tsm.ts';
import { FakeTsmFirmware } from '../runtime/src/tee/testing/fake-tsm.ts';

const i = process.argv.indexOf('--n');
const N = i > 0 ? Number(process.argv[i + 1]) : 200;
const q = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!;
async function time(fn: () => unknown | Promise<unknown>, n = N): Promise<number[]> {
  for (let k = 0; k < Math.min(10, n); k++) await fn();
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}
const line = (name: string, xs: number[], floor: number[]) =>
  console.log(
    `${name.padEnd(34)} median ${q(xs, 0.5).toFixed(3)} ms  p99 ${q(xs, 0.99).toFixed(3)} ms  ` +
      `floor median ${q(floor, 0.5).toFixed(3)} ms  ratio ${(q(xs, 0.5) / q(floor, 0.5)).toFixed(1)}x  (n=${xs.length})`,
  );

const pki = await createSevTestPki();
const anchors = { ark: pki.arkPem, ask: pki.askPem };
const report = signSnpReport({ reportData: new Uint8Array(randomBytes(64)) }, pki.vcekKey);
const sig = sign('sha384', report.subarray(0, 0x2a0), { key: pki.vcekKey, dsaEncoding: 'ieee-p1363' });
const vcekPub = (await import('node:crypto')).createPublicKey(pki.vcekKey);
const snpFloor = await time(() =>
  verify('sha384', report.subarray(0, 0x2a0), { key: vcekPub, dsaEncoding: 'ieee-p1363' }, sig),
);
line(
  'SNP verify (chain + report)',
  await time(() => verifySnpReport(report, pki.vcekDer, { nowMs: Date.now(), anchors })),
  snpFloor,
);

const td = (p: string) => new URL(`../attestation/testdata/${p}`, import.meta.url);
const quote = new Uint8Array(await readFile(td('tdx/tdx_quote.bin')));
const coll = JSON.parse(await readFile(td('tdx/tdx_quote_collateral.json'), 'utf8'));
line(
  'TDX verify (dcap-qvl, real vector)',
  await time(
    () => verifyTdxQuote(quote, coll, { nowSecs: 1751328000, acceptedTcbStatuses: ['UpToDate'] }),
    Math.min(N, 50),
  ),
  snpFloor,
);

const kp = generateKeyPair();
const ctx = contextString({
  chainId: 1,
  serviceId: 1,
  sandboxId: 'sbx',
  operator: `0x${'11'.repeat(20)}`,
  owner: `0x${'22'.repeat(20)}`,
});
const env = { K: 'v'.repeat(1024) };
const key = new Uint8Array(randomBytes(32));
const plain = new TextEncoder().encode(JSON.stringify({ env }));
const aeadFloor = await time(() => {
  const nonce = new Uint8Array(randomBytes(12));
  chacha20poly1305(key, nonce).decrypt(chacha20poly1305(key, nonce).encrypt(plain));
});
line(
  'HPKE seal + open (1 KiB env)',
  await time(() =>
    new SealedSecretOpener(kp.secretKey, kp.publicKey, ctx, 'sbx').open(
      sealSecrets(kp.publicKey, ctx, 'sbx', env),
    ),
  ),
  aeadFloor,
);

const dir = await mkdtemp(join(tmpdir(), 'tee-bench-'));
const fw = await new FakeTsmFirmware({ root: join(dir, 'tsm'), pki }).start();
await writeFile(join(dir, 'plain'), report);
const readFloor = await time(() => readFile(join(dir, 'plain')), Math.min(N, 100));
line(
  'tsmReport over the FIFO test tree',
  await time(
    () => tsmReport({ root: join(dir, 'tsm'), provider: 'sev_guest' }, new Uint8Array(randomBytes(64))),
    Math.min(N, 100),
  ),
  readFloor,
);
await fw.stop();
await rm(dir, { recursive: true, force: true });
