import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type PeerCertificate } from 'node:tls';
import { generate } from 'selfsigned';
import { afterAll, describe, expect, it } from 'vitest';
import { PATIENCE } from '../support/patience.ts';
import { freePort } from '../support/process.ts';
import { startTestService, type TestService } from '../support/service.ts';

/** The certificate the implicit-TLS listener presents to a new connection (or the handshake's error). */
function peerCertificate(port: number, options: { maxVersion?: 'TLSv1.1' } = {}): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () => {
      resolve(socket.getPeerCertificate());
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const certificate = (name: string) =>
  generate([{ name: 'commonName', value: name }], { keySize: 2048, algorithm: 'sha256' });

/** What /readyz answers, or undefined while nothing listens. */
async function readiness(baseUrl: string) {
  const r = await fetch(`${baseUrl}/readyz`).catch(() => undefined);
  return r && { status: r.status, body: await r.json() };
}

const services: TestService[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const s of services) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the SMTP listeners’ TLS', () => {
  it('generates a self-signed certificate into the data dir when none is configured, and speaks TLS 1.2 or newer', async () => {
    const svc = await startTestService({
      env: { SMTP_SUBMISSIONS_PORT: '0', SMTP_HOSTNAME: 'relay.generated.test' },
    });
    services.push(svc);
    const port = svc.postline.smtp!.submissionsPort!;
    expect((await peerCertificate(port)).subject.CN).toBe('relay.generated.test');
    expect(existsSync(join(svc.postline.services.config.POSTLINE_DATA_DIR, 'smtp-tls', 'cert.pem'))).toBe(
      true,
    );
    await expect(peerCertificate(port, { maxVersion: 'TLSv1.1' })).rejects.toThrow();
  });

  it('reloads configured PEM files when they change, without a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postline-tls-'));
    dirs.push(dir);
    const files = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
    const write = async (name: string) => {
      const pems = await certificate(name);
      writeFileSync(files.key, pems.private);
      writeFileSync(files.cert, pems.cert);
    };
    await write('first.test');
    const svc = await startTestService({
      env: { SMTP_SUBMISSIONS_PORT: '0', SMTP_TLS_CERT: files.cert, SMTP_TLS_KEY: files.key },
    });
    services.push(svc);
    const port = svc.postline.smtp!.submissionsPort!;
    expect((await peerCertificate(port)).subject.CN).toBe('first.test');

    await write('renewed.test');
    // The files are looked at every few seconds: new connections get the renewed certificate within that.
    await expect
      .poll(async () => (await peerCertificate(port)).subject.CN, { ...PATIENCE, interval: 200 })
      .toBe('renewed.test');
  });

  it('keeps /readyz not ready while the listeners wait for their certificate, then ready once they listen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postline-tls-'));
    dirs.push(dir);
    // Named pipes: reading one waits until something writes it, as a secret store's pipe or a slow mount does.
    const files = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
    for (const file of Object.values(files)) execFileSync('mkfifo', [file]);
    const pems = await certificate('held.test');
    const giveCertificate = () =>
      Promise.all([writeFile(files.cert, pems.cert), writeFile(files.key, pems.private)]);
    const port = await freePort();
    const starting = startTestService({
      env: {
        PORT: String(port),
        SMTP_SUBMISSIONS_PORT: '0',
        SMTP_TLS_CERT: files.cert,
        SMTP_TLS_KEY: files.key,
      },
    });
    try {
      // HTTP listens first and answers, not ready: a load balancer sends nothing to a process whose relay is shut.
      await expect
        .poll(() => readiness(`http://127.0.0.1:${port}`))
        .toEqual({ status: 503, body: { status: 'not_ready' } });
    } finally {
      await giveCertificate();
    }
    const svc = await starting;
    services.push(svc);
    expect(await readiness(svc.baseUrl)).toEqual({ status: 200, body: { status: 'ready' } });
    expect((await peerCertificate(svc.postline.smtp!.submissionsPort!)).subject.CN).toBe('held.test');
  });
});
