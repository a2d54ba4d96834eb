import { beforeAll, describe, expect, it } from 'vitest';
import { templateDecider } from '../../domain/templates/template.decider.ts';
import { templateStream } from '../../domain/templates/template.events.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import { encodeTime } from '../../platform/ids.ts';
import { renderPublished } from '../../write-side/templates/render.ts';
import { type ApiResponse, type TestOrg, useTestService } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

let acme: TestOrg;
let other: TestOrg;

const svc = useTestService();
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  other = await svc.createOrg('pro');
});

const welcome = {
  name: 'Welcome',
  subject: 'Welcome, {{first_name}}',
  html: '<h1>Hi {{first_name}}</h1>{{#if plan}}<p>Plan: {{plan}}</p>{{/if}}',
  text: 'Hi {{first_name}}',
  engine: 'handlebars',
  variables: [
    { name: 'first_name', type: 'string', required: true },
    { name: 'plan', type: 'string', required: false },
  ],
};

async function newTemplate(
  org: TestOrg = acme,
  body: Record<string, unknown> = welcome,
  mode: 'live' | 'test' = 'live',
) {
  const r = await org[mode].post('/v1/templates', body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

describe('templates: versions', () => {
  it('creates a draft, shown with its version number and timestamps', async () => {
    const t = await newTemplate();
    expect(t.id).toMatch(/^tmpl_/);
    expect(t).toMatchObject({
      object: 'template',
      name: 'Welcome',
      engine: 'handlebars',
      status: 'draft',
      published: null,
    });
    expect(t.draft).toMatchObject({
      version: 1,
      subject: welcome.subject,
      html: welcome.html,
      text: welcome.text,
      published_at: null,
    });
    expect(t.draft.id).toMatch(/^tmplv_/);
    expect(t.draft.variables).toEqual(welcome.variables);
    expect(Date.parse(t.draft.created_at)).not.toBeNaN();
    expect((await acme.live.get(`/v1/templates/${t.id}`)).body).toEqual(t);
  });

  it('create, update, publish, update keeps the published one active, publish again', async () => {
    const t = await newTemplate();
    const render = () =>
      acme.live.post('/v1/templates/render', { template_id: t.id, template_data: { first_name: 'Ann' } });

    const notYet = await render();
    expect(notYet.status).toBe(422);
    expect(notYet.body.error).toMatchObject({ code: 'template_not_published', type: 'validation_error' });

    const v2 = await acme.live.patch(`/v1/templates/${t.id}`, { subject: 'Hello {{first_name}}' });
    expect(v2.status).toBe(200);
    expect(v2.body).toMatchObject({
      status: 'draft',
      published: null,
      draft: { version: 2, subject: 'Hello {{first_name}}' },
    });
    expect(v2.body.draft.html).toBe(welcome.html); // unchanged fields carry over

    const p1 = await acme.live.post(`/v1/templates/${t.id}/publish`);
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({ status: 'published', draft: null, published: { version: 2 } });
    expect(p1.body.published.published_at).toBeTruthy();
    expect((await render()).body).toMatchObject({
      subject: 'Hello Ann',
      text: 'Hi Ann',
      template_version_id: p1.body.published.id,
    });

    const v3 = await acme.live.patch(`/v1/templates/${t.id}`, { subject: 'Hey {{first_name}}!' });
    expect(v3.body).toMatchObject({ status: 'published', published: { version: 2 }, draft: { version: 3 } });
    expect((await render()).body.subject).toBe('Hello Ann'); // the published version stays active

    const p2 = await acme.live.post(`/v1/templates/${t.id}/publish`);
    expect(p2.body).toMatchObject({ status: 'published', draft: null, published: { version: 3 } });
    expect((await render()).body.subject).toBe('Hey Ann!');

    // Publishing with nothing new is harmless.
    const again = await acme.live.post(`/v1/templates/${t.id}/publish`);
    expect(again.status).toBe(200);
    expect(again.body.published.version).toBe(3);

    const versions = await acme.live.get(`/v1/templates/${t.id}/versions`);
    expect(versions.status).toBe(200);
    expect(versions.body.data.map((v: any) => [v.version, v.status])).toEqual([
      [3, 'published'],
      [2, 'superseded'],
      [1, 'superseded'],
    ]);
    expect(versions.body.has_more).toBe(false);
    const page = await acme.live.get(
      `/v1/templates/${t.id}/versions?limit=1&starting_after=${versions.body.data[0].id}`,
    );
    expect(page.body.data.map((v: any) => v.version)).toEqual([2]);
    expect(page.body.has_more).toBe(true);
  });

  it('lists versions by number, newest first, also when their ids sort otherwise, and pages through them', async () => {
    const t = await newTemplate();
    expect((await acme.live.patch(`/v1/templates/${t.id}`, { subject: 'Second' })).status).toBe(200);
    // Version 3 saved by another process whose clock is an hour behind: its id sorts before the others'.
    const meta = { orgId: acme.orgId, mode: 'live' as const, actor: 'test' };
    const { store, readYourWrites } = svc.postline.services;
    const skewed = `tmplv_${encodeTime(Date.parse(t.created_at) - 3600_000)}${'0'.repeat(16)}`;
    const third = await handleCommand(
      store,
      templateStream(t.id),
      templateDecider,
      {
        type: 'UpdateTemplate',
        templateId: t.id,
        versionId: skewed,
        changes: { subject: 'Third' },
        ...meta,
        at: new Date().toISOString(),
      },
      meta,
    );
    await readYourWrites.waitFor(['templates'], third.position!);

    const list = async (query = '') => {
      const r = await acme.live.get(`/v1/templates/${t.id}/versions${query}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return {
        versions: r.body.data.map((v: any) => v.version),
        ids: r.body.data.map((v: any) => v.id),
        more: r.body.has_more,
      };
    };
    const all = await list();
    expect(all).toMatchObject({ versions: [3, 2, 1], more: false });
    expect(all.ids[0]).toBe(skewed);
    const [id3, id2, id1] = all.ids;

    expect(await list('?limit=1')).toEqual({ versions: [3], ids: [id3], more: true });
    expect(await list(`?limit=1&starting_after=${id3}`)).toEqual({ versions: [2], ids: [id2], more: true });
    expect(await list(`?limit=1&starting_after=${id2}`)).toEqual({ versions: [1], ids: [id1], more: false });
    expect(await list(`?limit=2&starting_after=${id3}`)).toEqual({
      versions: [2, 1],
      ids: [id2, id1],
      more: false,
    });
    expect(await list(`?starting_after=${id1}`)).toEqual({ versions: [], ids: [], more: false });
    expect(await list(`?limit=1&ending_before=${id1}`)).toEqual({ versions: [2], ids: [id2], more: true });
    expect(await list(`?limit=1&ending_before=${id2}`)).toEqual({ versions: [3], ids: [id3], more: false });
    expect(await list(`?ending_before=${id1}`)).toEqual({ versions: [3, 2], ids: [id3, id2], more: false });
    expect(await list(`?ending_before=${id3}`)).toEqual({ versions: [], ids: [], more: false });
  });

  it('renames without a new version; an identical save makes none either', async () => {
    const t = await newTemplate();
    const renamed = await acme.live.patch(`/v1/templates/${t.id}`, {
      name: 'Renamed',
      subject: welcome.subject,
    });
    expect(renamed.body).toMatchObject({ name: 'Renamed', draft: { version: 1 } });
  });

  it('renders through the function the sending path calls', async () => {
    const t = await newTemplate();
    const published = (await acme.live.post(`/v1/templates/${t.id}/publish`)).body.published;
    const out = await renderPublished(svc.postline.services, acme.orgId, 'live', t.id, {
      first_name: '<Ann>',
    });
    expect(out).toEqual({
      subject: 'Welcome, <Ann>',
      html: '<h1>Hi &lt;Ann&gt;</h1>',
      text: 'Hi <Ann>',
      templateVersionId: published.id,
    });
    await expect(renderPublished(svc.postline.services, acme.orgId, 'test', t.id, {})).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(renderPublished(svc.postline.services, acme.orgId, 'live', t.id, {})).rejects.toMatchObject({
      code: 'template_render_error',
      message: expect.stringContaining('first_name'),
    });
  });

  it('renders a draft (or any version of the template) with `version_id`, for a preview', async () => {
    const t = await newTemplate();
    const draft = await acme.live.patch(`/v1/templates/${t.id}`, { text: 'Draft for {{first_name}}' });
    const data = { first_name: 'Ann' };
    // Nothing published: without version_id the render is refused, with the draft's id it renders the draft.
    expect(
      (await acme.live.post('/v1/templates/render', { template_id: t.id, template_data: data })).body.error,
    ).toMatchObject({ code: 'template_not_published' });
    const preview = await acme.live.post('/v1/templates/render', {
      template_id: t.id,
      version_id: draft.body.draft.id,
      template_data: data,
    });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ text: 'Draft for Ann', template_version_id: draft.body.draft.id });
    // Another template's version, or another mode's, is not this template's: 404.
    const other = await newTemplate();
    const foreign = await acme.live.post('/v1/templates/render', {
      template_id: other.id,
      version_id: draft.body.draft.id,
      template_data: data,
    });
    expect(foreign.status).toBe(404);
    const otherMode = await acme.test.post('/v1/templates/render', {
      template_id: t.id,
      version_id: draft.body.draft.id,
      template_data: data,
    });
    expect(otherMode.status).toBe(404);
  });

  it('duplicates as a draft named "Copy of <name>", or as told', async () => {
    const t = await newTemplate();
    await acme.live.patch(`/v1/templates/${t.id}`, { text: 'Second version {{first_name}}' });
    const copy = await acme.live.post(`/v1/templates/${t.id}/duplicate`);
    expect(copy.status).toBe(201);
    expect(copy.body.id).not.toBe(t.id);
    expect(copy.body).toMatchObject({
      name: 'Copy of Welcome',
      status: 'draft',
      published: null,
      duplicated_from: t.id,
      draft: { version: 1, text: 'Second version {{first_name}}' },
    });
    const named = await acme.live.post(`/v1/templates/${t.id}/duplicate`, { name: 'Onboarding' });
    expect(named.status).toBe(201);
    expect(named.body.name).toBe('Onboarding');
    const bad = await acme.live.post(`/v1/templates/${t.id}/duplicate`, { name: '' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toContain('name');
  });

  it('deletes: gone from GET, list, render and publish', async () => {
    const t = await newTemplate();
    await acme.live.post(`/v1/templates/${t.id}/publish`);
    const del = await acme.live.delete(`/v1/templates/${t.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: t.id, deleted: true });
    expect((await acme.live.get(`/v1/templates/${t.id}`)).status).toBe(404);
    expect((await acme.live.get('/v1/templates?limit=100')).body.data.map((x: any) => x.id)).not.toContain(
      t.id,
    );
    const render = await acme.live.post('/v1/templates/render', {
      template_id: t.id,
      template_data: { first_name: 'A' },
    });
    expect(render.status).toBe(404);
    expect((await acme.live.post(`/v1/templates/${t.id}/publish`)).status).toBe(404);
    expect((await acme.live.delete(`/v1/templates/${t.id}`)).status).toBe(404);
  });

  it('lists templates newest first with cursor pagination', async () => {
    const org = await svc.createOrg('pro');
    const a = await newTemplate(org);
    const b = await newTemplate(org);
    const c = await newTemplate(org);
    const first = await org.live.get('/v1/templates?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((x: any) => x.id)).toEqual([c.id, b.id]);
    expect(first.body.has_more).toBe(true);
    const next = await org.live.get(`/v1/templates?limit=2&starting_after=${b.id}`);
    expect(next.body.data.map((x: any) => x.id)).toEqual([a.id]);
    expect(next.body.has_more).toBe(false);
    expect((await org.live.get('/v1/templates?limit=0')).status).toBe(422);
  });
});

describe('templates: rendering over HTTP', () => {
  let id: string;
  beforeAll(async () => {
    id = (await newTemplate()).id;
    await acme.live.post(`/v1/templates/${id}/publish`);
  });

  it('escapes HTML in html, not in text or subject; sends nothing', async () => {
    const r = await acme.live.post('/v1/templates/render', {
      template_id: id,
      template_data: { first_name: '<script>x</script>', plan: 'Pro & more' },
    });
    expect(r.status).toBe(200);
    expect(r.body.html).toBe('<h1>Hi &lt;script&gt;x&lt;/script&gt;</h1><p>Plan: Pro &amp; more</p>');
    expect(r.body.text).toBe('Hi <script>x</script>');
    expect(r.body.subject).toBe('Welcome, <script>x</script>');
    const { rows } = await svc.postline.services.db.query(
      `SELECT count(*)::int AS n FROM events WHERE stream_id LIKE 'email-%'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('renders a variable’s fallback where the data does not give it', async () => {
    const t = await acme.live.post('/v1/templates', {
      name: 'With fallback',
      subject: 'Hi {{first_name}}',
      text: 'Hi {{first_name}}',
      variables: [{ name: 'first_name', type: 'string', fallback: 'there' }],
    });
    expect(t.body.draft.variables).toEqual([
      { name: 'first_name', type: 'string', required: false, fallback: 'there' },
    ]);
    await acme.live.post(`/v1/templates/${t.body.id}/publish`);
    const r = await acme.live.post('/v1/templates/render', { template_id: t.body.id, template_data: {} });
    expect([r.body.subject, r.body.text]).toEqual(['Hi there', 'Hi there']);
  });

  it('names missing required variables', async () => {
    const r = await acme.live.post('/v1/templates/render', { template_id: id, template_data: { plan: 'x' } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('template_render_error');
    expect(r.body.error.message).toContain('`first_name`');
  });

  it('rejects a rendered subject with a line break', async () => {
    const r = await acme.live.post('/v1/templates/render', {
      template_id: id,
      template_data: { first_name: 'A\r\nBcc: x@y.z' },
    });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('template_render_error');
  });

  it('validates the body', async () => {
    const cases: [unknown, string][] = [
      [{ template_data: {} }, 'template_id'],
      [{ template_id: id }, 'template_data'],
      [{ template_id: id, template_data: [1] }, 'template_data'],
      [{ template_id: id, template_data: 'x' }, 'template_data'],
      [{ template_id: id, template_data: {}, extra: 1 }, 'extra'],
    ];
    await expectValidationErrors((body) => acme.live.post('/v1/templates/render', body), cases);
    const malformed = await acme.live.post('/v1/templates/render', '{"template_id":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('malformed_json');
  });

  it('an unknown template is not found', async () => {
    const r = await acme.live.post('/v1/templates/render', { template_id: 'tmpl_nope', template_data: {} });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
  });

  it('is not shadowed by the template id routes, nor does it shadow them', async () => {
    expect((await acme.live.get('/v1/templates/render')).status).toBe(404);
    expect((await acme.live.get(`/v1/templates/${id}`)).status).toBe(200);
  });
});

describe('templates: validation', () => {
  it('refuses bad create bodies with a 422 naming the field or the place', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /name/],
      [{ ...welcome, name: '' }, /name/],
      [{ ...welcome, subject: undefined }, /subject/],
      [{ ...welcome, engine: 'mustache' }, /`engine`/],
      [
        { ...welcome, html: '<p>\n{{#if first_name}}x{{/each}}' },
        /`html`: Handlebars syntax error at line 2, column \d+/,
      ],
      [
        { ...welcome, text: 'Hi {{first_name}} {{last_name}}' },
        /`text`: variable `last_name` at line 1, column 21 is not declared/,
      ],
      [
        { ...welcome, variables: [...welcome.variables, { name: 'plan', type: 'string', required: true }] },
        /variables\[2\]\.name.*twice/,
      ],
      [
        { ...welcome, variables: [{ name: 'first_name', type: 'date', required: true }] },
        /variables\[0\]\.type/,
      ],
      [
        {
          ...welcome,
          variables: [{ name: 'first_name', type: 'string', required: false, fallback: { a: 1 } }],
        },
        /variables\[0\]\.fallback`: must be a string, a number or a boolean/,
      ],
      [
        { ...welcome, variables: [{ name: 'first_name', type: 'string', required: false, fallback: 3 }] },
        /variables\[0\]\.fallback`: must be a string, as the variable is/,
      ],
      [{ ...welcome, html: '{{> header}}' }, /partials/],
      [{ ...welcome, html: '{{upper first_name}}' }, /unknown helper `upper`/],
      [{ ...welcome, html: '<p>{{lookup first_name}}</p>' }, /`html`: `lookup` takes exactly 2 arguments/],
      [{ ...welcome, html: null, text: null }, /html, text or both/],
      [{ ...welcome, html: 'x'.repeat(600 * 1024) }, /512 KB/],
      [{ ...welcome, html: 5 }, /html/],
      [{ ...welcome, extra: 1 }, /extra/],
      [[1, 2], /body/],
    ];
    await expectValidationErrors((body) => acme.live.post('/v1/templates', body), cases);
    const malformed = await acme.live.post('/v1/templates', '{"name":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('malformed_json');
  });

  it('refuses a bad update and keeps the template as it was', async () => {
    const t = await newTemplate();
    const cases: [unknown, RegExp][] = [
      [{}, /at least one/],
      [{ html: '{{#if}}' }, /`html`/],
      [{ subject: 'Hi {{unknown}}' }, /unknown/],
      [{ variables: [] }, /first_name.*not declared/],
      [{ engine: 'handlebars' }, /engine/],
    ];
    await expectValidationErrors((body) => acme.live.patch(`/v1/templates/${t.id}`, body), cases);
    const after = await acme.live.get(`/v1/templates/${t.id}`);
    expect(after.body.draft.version).toBe(1);
  });
});

describe('templates: tenancy and quota', () => {
  it("answers 404 for another organization's template on every route", async () => {
    const t = await newTemplate();
    expect((await other.live.get(`/v1/templates/${t.id}`)).status).toBe(404);
    expect((await other.live.get(`/v1/templates/${t.id}/versions`)).status).toBe(404);
    expect((await other.live.patch(`/v1/templates/${t.id}`, { name: 'mine' })).status).toBe(404);
    expect((await other.live.post(`/v1/templates/${t.id}/publish`)).status).toBe(404);
    expect((await other.live.post(`/v1/templates/${t.id}/duplicate`)).status).toBe(404);
    expect((await other.live.delete(`/v1/templates/${t.id}`)).status).toBe(404);
    expect(
      (await other.live.post('/v1/templates/render', { template_id: t.id, template_data: {} })).status,
    ).toBe(404);
    expect((await other.live.get('/v1/templates?limit=100')).body.data.map((x: any) => x.id)).not.toContain(
      t.id,
    );
    expect((await acme.live.get('/v1/templates/not-an-id')).status).toBe(404);
  });

  it('keeps test and live templates apart', async () => {
    const live = await newTemplate(acme, welcome, 'live');
    const test = await newTemplate(acme, welcome, 'test');
    expect((await acme.test.get(`/v1/templates/${live.id}`)).status).toBe(404);
    expect((await acme.live.get(`/v1/templates/${test.id}`)).status).toBe(404);
    await acme.live.post(`/v1/templates/${live.id}/publish`);
    const r = await acme.test.post('/v1/templates/render', {
      template_id: live.id,
      template_data: { first_name: 'A' },
    });
    expect(r.status).toBe(404);
    const ids = (await acme.test.get('/v1/templates?limit=100')).body.data.map((x: any) => x.id);
    expect(ids).toContain(test.id);
    expect(ids).not.toContain(live.id);
  });

  it('allows the Free plan 5 templates per mode; duplicates count; deleting frees a slot', async () => {
    const free = await svc.createOrg('free');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await newTemplate(free)).id);
    const sixth = await free.live.post('/v1/templates', welcome);
    expect(sixth.status).toBe(422);
    expect(sixth.body.error).toMatchObject({ code: 'plan_limit_exceeded', type: 'quota_error' });
    expect((await free.live.post(`/v1/templates/${ids[0]}/duplicate`)).body.error.code).toBe(
      'plan_limit_exceeded',
    );
    expect((await free.test.post('/v1/templates', welcome)).status).toBe(201);
    await free.live.delete(`/v1/templates/${ids[0]}`);
    expect((await free.live.post('/v1/templates', welcome)).status).toBe(201);
  });

  it('does not limit the Pro plan', async () => {
    const pro = await svc.createOrg('pro');
    for (let i = 0; i < 6; i++) await newTemplate(pro);
  });
});

describe('templates: when the read models lag', () => {
  const lagging = useTestService({ env: { PROJECTION_WAIT_MS: '200' } });
  let org: TestOrg;
  beforeAll(async () => {
    org = await lagging.createOrg('pro');
  });

  it('a retried publish or an identical PATCH waits for the write before it, never answers the old template', async () => {
    const t = await newTemplate(org);
    await lagging.postline.runner.stop();
    const answers: ApiResponse[] = [];
    try {
      // The first publish is written but its answer times out; the retry and an identical save change nothing.
      answers.push(await org.live.post(`/v1/templates/${t.id}/publish`));
      answers.push(await org.live.post(`/v1/templates/${t.id}/publish`));
      answers.push(await org.live.patch(`/v1/templates/${t.id}`, { subject: welcome.subject }));
    } finally {
      await lagging.postline.runner.start();
    }
    for (const answer of answers) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body.error.code).toBe('projection_timeout');
    }
    await lagging.postline.runner.caughtUp();
    const retried = await org.live.post(`/v1/templates/${t.id}/publish`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'published', draft: null, published: { version: 1 } });
  });
});
