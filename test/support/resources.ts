import { expect } from 'vitest';
import type { ApiClient, TestOrg } from './service.ts';

// The rules every /v1 resource keeps, for the tests of each resource.

/** The clients that must not see acme's live data: the other organization's, and acme's own in test mode. */
export const outsiders = (orgs: { acme: TestOrg; other: TestOrg }) => [orgs.other.live, orgs.acme.test];

/** To each outsider, acme's resource at `path` does not exist: reading, changing (with `change`) and deleting it answer 404. */
export async function expectHiddenFromOutsiders(
  orgs: { acme: TestOrg; other: TestOrg },
  path: string,
  change: unknown,
) {
  for (const client of outsiders(orgs)) {
    expect((await client.get(path)).status, `GET ${path}`).toBe(404);
    expect((await client.patch(path, change)).status, `PATCH ${path}`).toBe(404);
    expect((await client.delete(path)).status, `DELETE ${path}`).toBe(404);
  }
}

/**
 * A collection lists newest first: a page of one is `newer`, with more after it. Deleted, the older item `id`
 * answers 404, is listed no more, and cannot be deleted twice.
 */
export async function expectNewestFirstThenDeleted(
  client: ApiClient,
  collection: string,
  id: string,
  newer: string,
) {
  const page = await client.get(`${collection}?limit=1`);
  expect(page.body).toMatchObject({ object: 'list', has_more: true });
  expect(page.body.data.map((x: any) => x.id)).toEqual([newer]);
  expect((await client.delete(`${collection}/${id}`)).body).toEqual({ id, deleted: true });
  expect((await client.get(`${collection}/${id}`)).status).toBe(404);
  expect((await client.get(collection)).body.data.map((x: any) => x.id)).toEqual([newer]);
  expect((await client.delete(`${collection}/${id}`)).status).toBe(404);
}
