import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { END_OF_OUTPUT } from '../../bin/cli/admin-protocol.ts';
import type { Owner } from '../../bin/cli/data-dir-owner.ts';
import { viaServer } from '../../bin/cli/via-server.ts';
import { processStartTime } from '../../platform/process-alive.ts';
import { PATIENCE } from '../support/patience.ts';
import { freePort } from '../support/process.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dataDir = useTempDir('via-server');
let ownerProcess: ChildProcess | undefined;
const said = { stdout: [] as string[], stderr: [] as string[] };

afterEach(() => {
  ownerProcess?.kill('SIGKILL');
  vi.restoreAllMocks();
  said.stdout = [];
  said.stderr = [];
});

/**
 * The data dir's owner, as a server writes it while it starts: a live process (never the command's own) and a
 * port where nothing listens yet. What the command prints is kept in `said`.
 */
async function startingOwner(): Promise<Owner> {
  ownerProcess = spawn('sleep', ['300']);
  const pid = ownerProcess.pid!;
  await vi.waitFor(() => expect(processStartTime(pid)).toBeDefined(), PATIENCE);
  const owner = {
    pid,
    started: processStartTime(pid),
    port: await freePort(),
    host: '127.0.0.1',
    adminToken: 't',
  };
  writeFileSync(join(dataDir, 'owner.json'), JSON.stringify(owner));
  vi.spyOn(process.stdout, 'write').mockImplementation((text) => said.stdout.push(String(text)) > 0);
  vi.spyOn(process.stderr, 'write').mockImplementation((text) => said.stderr.push(String(text)) > 0);
  return owner;
}

const waiting = () =>
  vi.waitFor(() => expect(said.stderr.join('')).toContain('to finish starting'), PATIENCE);

/** A command of embedded mode, sent to the server that owns the data dir (bin/cli/via-server.ts). */
describe('a CLI command sent to the running server', () => {
  it('waits while the owner does not listen yet, then is sent once', async () => {
    const owner = await startingOwner();
    const outcome = viaServer(dataDir, owner, ['orgs', 'list']);
    await waiting();
    const received: string[] = [];
    const server = createServer((req, res) => {
      received.push(`${req.method} ${req.url}`);
      res.end(`listed\n${END_OF_OUTPUT}${JSON.stringify({ exit: 0 })}`);
    });
    await new Promise<void>((listening) => server.listen(owner.port, '127.0.0.1', listening));
    try {
      expect(await outcome).toBe(0);
      expect(said.stdout.join('')).toBe('listed\n');
      expect(received).toEqual(['POST /admin/cli']);
    } finally {
      server.close();
    }
  });

  it('says so when the owner stops before it listens', async () => {
    const owner = await startingOwner();
    const outcome = viaServer(dataDir, owner, ['orgs', 'list']).then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await waiting();
    ownerProcess!.kill('SIGKILL');
    expect(await outcome).toBe(`the service (process ${owner.pid}) stopped before it answered.`);
  });
});
