import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorProcess } from '../../processes/simulator/simulator.process.ts';
import { freePort, ROOT } from '../support/process.ts';
import type { TestOrg } from '../support/service.ts';
import { useWebhookProcesses } from '../support/webhook-processes.ts';

/** The examples of examples/, run as a user would run them: their own Node processes against a real Postline. */
const { svc, pump } = useWebhookProcesses();
let acme: TestOrg;
let receiver: ChildProcess | undefined;
beforeAll(async () => {
  acme = await svc.createOrg('pro');
});
afterAll(() => {
  receiver?.kill('SIGTERM');
});

const run = promisify(execFile);

describe('examples/', () => {
  it('send.ts sends an email, and webhook-receiver.ts verifies and prints its email.sent', async () => {
    const port = await freePort();
    const hook = await acme.test.post('/v1/webhooks', {
      url: `http://127.0.0.1:${port}/webhooks`,
      events: ['email.sent'],
    });
    expect(hook.status).toBe(201);

    receiver = spawn(process.execPath, [join(ROOT, 'examples/webhook-receiver.ts')], {
      env: { ...process.env, PORT: String(port), WEBHOOK_SECRET: hook.body.signing_secret },
    });
    let printed = '';
    receiver.stdout!.on('data', (chunk) => {
      printed += chunk;
    });
    await expect.poll(() => printed).toContain(`listening on ${port}`);

    const sent = await run(process.execPath, [join(ROOT, 'examples/send.ts')], {
      env: { ...process.env, POSTLINE_API_KEY: acme.testKey, POSTLINE_URL: svc.baseUrl },
    });
    const accepted = JSON.parse(sent.stdout);
    expect(accepted).toMatchObject({ id: expect.stringMatching(/^em_/), status: 'queued' });

    await new SimulatorProcess(svc.postline.services).runOnce(); // test mode: the email is "sent" at once
    await pump();
    await expect
      .poll(() =>
        printed
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l)),
      )
      .toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: 'webhook.test' }),
          expect.objectContaining({
            type: 'email.sent',
            data: expect.objectContaining({ email_id: accepted.id }),
          }),
        ]),
      );
  });
});
