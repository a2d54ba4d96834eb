import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { mountAdmin } from '../../bin/cli/admin.ts';
import { useTestService } from '../support/service.ts';

/** Handlers outside /v1 (downloads, tracking, the embedded admin endpoint) answer errors in the API's shape. */
describe('errors outside /v1', () => {
  const svc = useTestService(() => ({
    mount: (app) => mountAdmin(app, 'the-admin-token', () => svc.postline),
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
});
