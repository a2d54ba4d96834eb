import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { mountAdmin } from '../../bin/cli/admin.ts';
import { END_OF_OUTPUT } from '../../bin/cli/admin-protocol.ts';
import type { Postline } from '../../bin/service.ts';
import { useTestService } from '../support/service.ts';

/** Handlers outside /v1 (downloads, tracking, the embedded admin endpoint) answer errors in the API's shape. */
describe('errors outside /v1', () => {
  // The running server mounts its admin endpoint while it starts: a command then waits for the start's end.
  let starting: PromiseWithResolvers<Postline> | undefined;
  let asked: PromiseWithResolvers<void> | undefined;
  const svc = useTestService(() => ({
    mount: (app) =>
      mountAdmin(app, 'the-admin-token', () => {
        asked?.resolve();
        return starting?.promise ?? svc.postline;
      }),
  }));

  const call = async (path: string, init: Parameters<typeof request>[1] = {}) => {
    const res = await request(`${svc.baseUrl}${path}`, init);
    return { status: res.statusCode, type: res.headers['content-type'], body: await res.body.json() };
  };

  it.each([
    ['a download link that is not signed', '/blobs/blob_nope?expires=1&sig=x', 404, 'not_found'],
    ['an unknown tracking link', '/t/c/nope', 404, 'not_found'],
  ])('%s', async (_, path, status, code) => {
    const r = await call(path);
    expect(r.status).toBe(status);
    expect(r.type).toMatch(/^application\/json/);
    expect(r.body).toEqual({ error: { type: 'not_found_error', message: expect.any(String), code } });
  });

  it('the admin endpoint refuses a wrong token and a malformed command', async () => {
    const post = (token: string, body: unknown) =>
      call('/admin/cli', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-postline-admin-token': token },
        body: JSON.stringify(body),
      });
    expect(await post('wrong', { argv: ['projections', 'status'] })).toMatchObject({
      status: 401,
      body: {
        error: { type: 'authentication_error', message: 'Invalid admin token', code: 'invalid_admin_token' },
      },
    });
    expect(await post('the-admin-token', { argv: 'projections status' })).toMatchObject({
      status: 422,
      body: { error: { type: 'validation_error', code: 'validation_error' } },
    });
  });

  it('a command sent while the service starts is run once its start ended', async () => {
    starting = Promise.withResolvers();
    asked = Promise.withResolvers();
    try {
      const answer = request(`${svc.baseUrl}/admin/cli`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-postline-admin-token': 'the-admin-token' },
        body: JSON.stringify({ argv: ['projections', 'status'] }),
      });
      await asked.promise;
      starting.resolve(svc.postline);
      const res = await answer;
      expect(res.statusCode).toBe(200);
      const [output, outcome] = (await res.body.text()).split(END_OF_OUTPUT);
      expect(JSON.parse(outcome)).toEqual({ exit: 0 });
      expect(output).toMatch(/^api_keys\s/m);
    } finally {
      starting = undefined;
      asked = undefined;
    }
  });
});
