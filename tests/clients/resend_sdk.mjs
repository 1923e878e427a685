// Runs the official Resend Node SDK (npm `resend` 6.38) against a live Herald server.
//
// Every SDK call that maps to a Herald route is made once (or more) and its answer is checked:
// ids come back and match, names and values read back as written, statuses are the ones Herald
// documents. One line per call: `ok <call>`, `FAIL <call>: <why>` (with the request the SDK sent
// and Herald's answer), or `skip <call>` when a call it needs failed. Where the answer works but
// differs from the SDK's declared types, a `diverge <call>: ...` line says how (these fail the
// run only with HERALD_SDK_STRICT=1). Exit status 1 when anything failed, after running everything.
//
// Environment:
//   HERALD_BASE_URL      the server, e.g. http://127.0.0.1:18081
//   HERALD_API_KEY       a full_access key of the team (rk_...)
//   HERALD_FROM_DOMAIN   a domain verified on the team (mail is sent from sdk@<it>)
//   HERALD_DOMAIN_ID     that domain's id
//   HERALD_SDK_STRICT    optional; 1 makes divergences failures
//
// The server must allow webhook endpoints on loopback (HERALD_WEBHOOK_ALLOW_PRIVATE=true): the
// check receives and verifies real deliveries on 127.0.0.1.
//
// SDK calls left out because Herald has no route for them (yet):
//   emails.receiving.*, emails.receiving.attachments.*   inbound mail (issue 18)
//   broadcasts.*                                          broadcasts (issue 17)
//   templates.*, emails.send({ template })                templates (issue 16)
//   automations.*, events.*                               automations, custom events (issue 19)
//   inboxes.* (agent, drafts, labels, threads)            support Inbox (later issue)
//   oauthGrants.*                                         delegated access (issue 20)
//   usage.get                                             GET /usage
//   domains.claims.verify                                 POST /domains/{id}/claim/verify (Herald
//                                                         checks a claim on POST /domains/{id}/verify)
//   suppressions.batch.remove                             POST /suppressions/batch/remove
// `audiences` is the same object as `segments` in this SDK (its calls go to /segments); the
// legacy paths it still calls are the contacts calls with `audienceId`, checked below.

import { randomBytes, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Resend } from 'resend';

// --- settings ------------------------------------------------------------------------------------

function env(name) {
  const value = (process.env[name] ?? '').trim();
  if (!value) {
    console.error(`resend_sdk.mjs: set ${name} (see the comment at the top)`);
    process.exit(2);
  }
  return value;
}

const BASE_URL = env('HERALD_BASE_URL').replace(/\/+$/, '');
const API_KEY = env('HERALD_API_KEY');
const FROM_DOMAIN = env('HERALD_FROM_DOMAIN');
const DOMAIN_ID = env('HERALD_DOMAIN_ID');
const STRICT = process.env.HERALD_SDK_STRICT === '1';

const RUN = randomBytes(4).toString('hex'); // makes names unique, so the check can run twice on one database
const FROM = `SDK check <sdk@${FROM_DOMAIN}>`;
const DELIVERED = 'delivered@simulator.herald.test';
const CC = 'delivered+cc@simulator.herald.test';
const BCC = 'delivered+bcc@simulator.herald.test';
const SDK_VERSION = JSON.parse(readFileSync(new URL('./node_modules/resend/package.json', import.meta.url), 'utf8')).version;

const resend = new Resend(API_KEY, { baseUrl: BASE_URL });

// --- transport: remembers the last exchange (shown on failure), waits out 429s ---------------------

let last = null;
const realFetch = globalThis.fetch;
globalThis.fetch = async (url, options = {}) => {
  let response;
  for (let i = 0; i < 20; i++) {
    response = await realFetch(url, options);
    if (response.status !== 429) break;
    const wait = Math.min(Number(response.headers.get('retry-after') ?? 1) || 1, 5);
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
  const body = options.body instanceof FormData ? `multipart: ${[...options.body.keys()].join(', ')}` : options.body;
  last = { method: options.method ?? 'GET', url: String(url), body, status: response.status, answer: await response.clone().text() };
  return response;
};

function lastExchange() {
  if (!last) return '(no request was sent)';
  const body = last.body ? ` ${clip(String(last.body))}` : '';
  return `request: ${last.method} ${last.url.replace(BASE_URL, '')}${body}\n      answer: ${last.status} ${clip(last.answer)}`;
}

const clip = (text, limit = 600) => (text.length <= limit ? text : `${text.slice(0, limit)}...`);

// --- reporting -----------------------------------------------------------------------------------

const failures = [];
const divergences = [];
const skipped = [];

class Failed extends Error {}

/** Runs one call and its checks; answers its result, or null when it (or a need) failed. */
async function step(name, fn, ...needs) {
  if (needs.some((need) => need === null || need === undefined)) {
    console.log(`skip ${name} (a call it needs failed)`);
    skipped.push(name);
    return null;
  }
  last = null;
  try {
    const result = await fn();
    console.log(`ok ${name}`);
    return result ?? true;
  } catch (error) {
    const why = error instanceof Failed ? error.message : `${error?.stack ?? error}`;
    console.log(`FAIL ${name}: ${why}\n      ${lastExchange()}`);
    failures.push(name);
    return null;
  }
}

function expect(condition, message) {
  if (!condition) throw new Failed(message);
}

function eq(actual, expected, what) {
  const [a, b] = [JSON.stringify(actual), JSON.stringify(expected)];
  expect(a === b, `${what} is ${a}, expected ${b}`);
}

/** The data of an SDK answer `{ data, error }`; an error is a failure. */
function ok(answer) {
  if (answer?.error) throw new Failed(`${answer.error.statusCode} ${answer.error.name}: ${answer.error.message}`);
  expect(answer?.data, 'the answer has no data');
  return answer.data;
}

function get(data, key) {
  expect(data && typeof data === 'object' && key in data, `the answer has no \`${key}\`: ${clip(JSON.stringify(data))}`);
  return data[key];
}

function diverge(name, message) {
  console.log(`diverge ${name}: ${message}`);
  divergences.push(`${name}: ${message}`);
}

/** Notes the fields the SDK's types declare that the answer lacks. */
function sdkFields(name, data, fields) {
  const missing = fields.filter((f) => !(data && typeof data === 'object' && f in data));
  if (missing.length) diverge(name, `the SDK's type declares ${missing.join(', ')}; the answer lacks them`);
}

function inList(data, key, value, what) {
  const list = get(data, 'data');
  expect(Array.isArray(list), `\`data\` is not a list: ${clip(JSON.stringify(list))}`);
  const found = list.find((item) => item[key] === value);
  expect(found, `${what} ${JSON.stringify(value)} is not in the list (${list.length} items)`);
  return found;
}

/** Checks the list envelope every list answer shares. */
function listing(name, data) {
  eq(get(data, 'object'), 'list', 'object');
  expect(Array.isArray(get(data, 'data')), '`data` is not a list');
  if (!('has_more' in data)) diverge(name, "the answer has no `has_more` (the SDK's list types declare it)");
}

/** Checks that a call answers an error with this status and name. */
async function refused(promise, status, name) {
  const answer = await promise;
  expect(answer?.error, `expected ${status} ${name ?? ''}, the call succeeded`);
  eq(answer.error.statusCode, status, 'status');
  if (name) eq(answer.error.name, name, 'error name');
}

const notFound = (promise) => refused(promise, 404, 'not_found');

function isoIn(minutes) {
  const at = new Date(Date.now() + minutes * 60_000);
  at.setMilliseconds(0);
  return at.toISOString().replace('.000Z', 'Z');
}

const sameInstant = (a, b) => a != null && Math.abs(Date.parse(a) - Date.parse(b)) < 1000;

/** Tags as a name-to-value map, from Resend's list of `{ name, value }` or Herald's map. */
const tagMap = (tags) => (Array.isArray(tags) ? Object.fromEntries(tags.map((t) => [t.name, t.value])) : { ...(tags ?? {}) });

async function waitFor(what, fn, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const found = await fn();
    if (found) return found;
    if (Date.now() > deadline) throw new Failed(`gave up after ${seconds} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// --- a local webhook receiver --------------------------------------------------------------------

/** Collects POSTs on 127.0.0.1 (headers lower-cased by Node, body as text). */
async function receiver() {
  const received = [];
  const waiting = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      waiting.splice(0).forEach((wake) => wake());
      response.writeHead(200).end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    /** The next delivery (in arrival order) that `matches`; earlier non-matching ones are dropped. */
    async next(matches, seconds = 30) {
      const deadline = Date.now() + seconds * 1000;
      for (;;) {
        while (received.length) {
          const one = received.shift();
          if (matches(one.headers, JSON.parse(one.body))) return one;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Failed(`no matching delivery reached the receiver within ${seconds} s`);
        await new Promise((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, Math.min(left, 500));
        });
      }
    },
    close: () => server.close(),
  };
}

/** The Standard Webhooks headers of a delivery, as the SDK's verify takes them. */
function standardWebhookHeaders(headers) {
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    expect(name in headers, `the delivery has no \`${name}\` header (has: ${Object.keys(headers).sort().join(', ')})`);
  }
  return { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'] };
}

/** Signs like Herald: HMAC-SHA256 of `id.timestamp.body` under the base64 key after `whsec_`. */
function sign(secret, id, timestamp, body) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

// --- emails --------------------------------------------------------------------------------------

const TEXT_BYTES = Buffer.from('Hello from the Resend Node SDK.\r\n');
const BINARY_BYTES = Buffer.concat([Buffer.from([0, 1, 2, 3, 254, 255]), Buffer.from('binary')]);

async function emails() {
  const tags = [{ name: 'category', value: 'sdk_check' }, { name: 'run', value: RUN }];
  const params = {
    from: FROM,
    to: [DELIVERED],
    cc: [CC],
    bcc: BCC,
    subject: `SDK check ${RUN}`,
    html: '<p>Hello from the <b>Node SDK</b></p>',
    text: 'Hello from the Node SDK',
    replyTo: `reply-${RUN}@example.test`,
    headers: { 'X-Sdk-Check': RUN },
    tags,
    attachments: [{ filename: 'hello.txt', content: TEXT_BYTES.toString('base64') }],
  };
  const key = `sdk-node-${RUN}`;

  const emailId = await step('emails.send (base64 attachment, tags, headers, idempotencyKey)', async () => {
    const id = get(ok(await resend.emails.send(params, { idempotencyKey: key })), 'id');
    expect(id, 'empty id');
    return id;
  });

  await step('emails.send (same idempotencyKey answers the same id)', async () => {
    eq(get(ok(await resend.emails.send(params, { idempotencyKey: key })), 'id'), emailId, 'id of the replayed send');
  }, emailId);

  const bytesId = await step('emails.send (attachment content as a Buffer)', async () => {
    const answer = await resend.emails.send({
      from: FROM, to: DELIVERED, subject: `SDK bytes ${RUN}`, text: 'bytes',
      attachments: [{ filename: 'data.bin', content: BINARY_BYTES, contentType: 'application/octet-stream' }],
    });
    return get(ok(answer), 'id');
  });

  await step('emails.get', async () => {
    const email = ok(await resend.emails.get(emailId));
    eq(get(email, 'object'), 'email', 'object');
    eq(get(email, 'id'), emailId, 'id');
    eq(get(email, 'from'), FROM, 'from');
    eq(get(email, 'to'), [DELIVERED], 'to');
    eq([get(email, 'cc'), get(email, 'bcc')], [[CC], [BCC]], 'cc and bcc');
    eq(get(email, 'subject'), params.subject, 'subject');
    eq(get(email, 'html'), params.html, 'html');
    eq(get(email, 'text'), params.text, 'text');
    expect(['queued', 'sent', 'delivered'].includes(get(email, 'last_event')), `last_event is ${email.last_event}`);
    eq(tagMap(get(email, 'tags')), Object.fromEntries(tags.map((t) => [t.name, t.value])), 'tags');
    if (!Array.isArray(email.tags)) diverge('emails.get', "`tags` is a name-to-value object; the SDK's type (and Resend) has a list of { name, value }");
    const replyTo = get(email, 'reply_to');
    eq(Array.isArray(replyTo) ? replyTo : [replyTo], [params.replyTo], 'reply_to');
    sdkFields('emails.get', email, ['message_id', 'created_at', 'scheduled_at']);
  }, emailId);

  await step('emails.list', async () => {
    const data = ok(await resend.emails.list({ limit: 100 }));
    listing('emails.list', data);
    eq(inList(data, 'id', emailId, 'the sent email').subject, params.subject, 'subject in the list');
  }, emailId);

  await step('emails.list (limit, after)', async () => {
    const first = ok(await resend.emails.list({ limit: 1 }));
    eq([get(first, 'data').length, get(first, 'has_more')], [1, true], 'one email and has_more');
    const second = get(ok(await resend.emails.list({ limit: 1, after: first.data[0].id })), 'data');
    expect(second.length === 1 && second[0].id !== first.data[0].id, '`after` did not move to the next email');
  }, emailId);

  const attachmentId = await step('emails.attachments.list', async () => {
    const data = ok(await resend.emails.attachments.list({ emailId }));
    listing('emails.attachments.list', data);
    const found = inList(data, 'filename', 'hello.txt', 'the attachment');
    eq(found.size, TEXT_BYTES.length, 'size');
    return found.id;
  }, emailId);

  await step('emails.attachments.get', async () => {
    const found = ok(await resend.emails.attachments.get({ emailId, id: attachmentId }));
    eq(get(found, 'object'), 'attachment', 'object');
    eq(get(found, 'filename'), 'hello.txt', 'filename');
    expect(get(found, 'content_type').startsWith('text/plain'), `content_type is ${found.content_type}`);
    eq(Buffer.from(get(found, 'content'), 'base64').toString('hex'), TEXT_BYTES.toString('hex'), 'content');
    sdkFields('emails.attachments.get', found, ['download_url', 'expires_at', 'content_disposition']);
  }, emailId, attachmentId);

  await step('emails.attachments.get (the Buffer attachment reads back the same bytes)', async () => {
    const listed = get(ok(await resend.emails.attachments.list({ emailId: bytesId })), 'data');
    eq(listed.length, 1, 'attachments');
    const found = ok(await resend.emails.attachments.get({ emailId: bytesId, id: listed[0].id }));
    eq(Buffer.from(get(found, 'content'), 'base64').toString('hex'), BINARY_BYTES.toString('hex'), 'the bytes read back');
  }, bytesId);

  await step('emails.share', async () => {
    const data = ok(await resend.emails.share(emailId, { expiresIn: '1h' }));
    expect(get(data, 'url').includes('/share/'), `url is ${data.url}`);
    if (data.id !== emailId) {
      diverge('emails.share', `\`id\` is the share's id (${data.id}), the SDK's type says the email's; the email's is \`email_id\` (${data.email_id})`);
    }
    eq(data.email_id ?? data.id, emailId, 'the shared email');
  }, emailId);

  await step('emails.metrics', async () => {
    const data = ok(await resend.emails.metrics());
    const totals = data.totals ?? data;
    expect(Number.isInteger(totals.received) && totals.received >= 1, `received is ${totals.received}`);
    if (!('totals' in data)) {
      diverge('emails.metrics', "counts are top-level (`object: email_metrics`); the SDK's type has `object: metrics`, `totals`, `metrics`, `dimensions`, `granularity`");
    }
  }, emailId);

  await step('emails.metrics (startDate, endDate)', async () => {
    const day = (offset) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const data = ok(await resend.emails.metrics({ startDate: day(-1), endDate: day(0) }));
    eq(get(data, 'start_date').slice(0, 10), day(-1), 'start_date');
    expect(((data.totals ?? data).received ?? 0) >= 1, 'nothing received in the window');
  }, emailId);

  await scheduledEmails();
  await batch();
}

async function scheduledEmails() {
  const at = isoIn(60);
  const emailId = await step('emails.send (scheduledAt)', async () =>
    get(ok(await resend.emails.send({ from: FROM, to: [DELIVERED], subject: `SDK scheduled ${RUN}`, text: 'later', scheduledAt: at })), 'id'));

  await step('emails.get (scheduled)', async () => {
    const email = ok(await resend.emails.get(emailId));
    eq(get(email, 'last_event'), 'scheduled', 'last_event');
    expect(sameInstant(get(email, 'scheduled_at'), at), `scheduled_at is ${email.scheduled_at}, sent ${at}`);
  }, emailId);

  const later = isoIn(120);
  await step('emails.update (reschedule)', async () => {
    const data = ok(await resend.emails.update({ id: emailId, scheduledAt: later }));
    eq([get(data, 'object'), get(data, 'id')], ['email', emailId], 'object and id');
    expect(sameInstant(ok(await resend.emails.get(emailId)).scheduled_at, later), 'scheduled_at did not change');
  }, emailId);

  await step('emails.cancel', async () => {
    const data = ok(await resend.emails.cancel(emailId));
    eq([get(data, 'object'), get(data, 'id')], ['email', emailId], 'object and id');
    eq(ok(await resend.emails.get(emailId)).last_event, 'canceled', 'last_event after cancel');
  }, emailId);
}

async function batch() {
  const items = [0, 1].map((i) => ({
    from: FROM, to: [DELIVERED], subject: `SDK batch ${i} ${RUN}`, text: `batch ${i}`, tags: [{ name: 'batch', value: String(i) }],
  }));
  const key = `sdk-node-batch-${RUN}`;

  const ids = await step('batch.send (idempotencyKey; the SDK sends x-batch-validation: strict)', async () => {
    const ids = get(ok(await resend.batch.send(items, { idempotencyKey: key })), 'data').map((one) => get(one, 'id'));
    eq(ids.length, 2, 'ids answered');
    eq(ok(await resend.emails.get(ids[1])).subject, items[1].subject, "second email's subject");
    return ids;
  });

  await step('batch.send (same idempotencyKey answers the same ids)', async () => {
    eq(get(ok(await resend.batch.send(items, { idempotencyKey: key })), 'data').map((one) => one.id), ids, 'ids of the replay');
  }, ids);

  await step('batch.send (batchValidation: permissive: the valid emails go, `errors` names the rest)', async () => {
    const bad = { from: FROM, to: ['not-an-address'], subject: `SDK batch bad ${RUN}`, text: 'bad' };
    const data = ok(await resend.batch.send([items[0], bad], { batchValidation: 'permissive' }));
    eq(get(data, 'data').length, 1, 'ids answered (the valid email is sent)');
    eq(get(data, 'errors').map((e) => e.index), [1], 'indexes of the refused emails');
  });
}

// --- domains -------------------------------------------------------------------------------------

async function domains() {
  const name = `sdk-${RUN}.test`;

  const domainId = await step('domains.create', async () => {
    const domain = ok(await resend.domains.create({ name, region: 'us-east-1', customReturnPath: 'bounces' }));
    eq([get(domain, 'name'), get(domain, 'region')], [name, 'us-east-1'], 'name and region');
    expect(get(domain, 'status') !== 'verified', 'a new domain is verified');
    const records = get(domain, 'records');
    const fields = ['record', 'name', 'type', 'value', 'ttl', 'status'];
    expect(records.length && records.every((r) => fields.every((f) => f in r)), `records: ${clip(JSON.stringify(records))}`);
    expect(records.some((r) => r.record.toLowerCase() === 'dkim'), 'no DKIM record');
    expect(records.some((r) => r.name.startsWith('bounces')), 'the return path is not `bounces`');
    sdkFields('domains.create', domain, ['capabilities', 'created_at']);
    return get(domain, 'id');
  });

  await step('domains.get', async () => {
    const domain = ok(await resend.domains.get(domainId));
    eq([get(domain, 'object'), get(domain, 'id'), get(domain, 'name')], ['domain', domainId, name], 'object, id and name');
    expect(get(domain, 'records').length, 'no records');
  }, domainId);

  await step('domains.list', async () => {
    const data = ok(await resend.domains.list({ limit: 100 }));
    listing('domains.list', data);
    inList(data, 'id', domainId, 'the new domain');
    inList(data, 'id', DOMAIN_ID, 'HERALD_DOMAIN_ID');
  }, domainId);

  await step('domains.update', async () => {
    const data = ok(await resend.domains.update({ id: domainId, openTracking: true, clickTracking: true, tls: 'enforced' }));
    eq(get(data, 'id'), domainId, 'id');
    const domain = ok(await resend.domains.get(domainId));
    eq([domain.open_tracking, domain.click_tracking, domain.tls], [true, true, 'enforced'], 'tracking and tls after update');
  }, domainId);

  await step('domains.verify (records not published: not verified)', async () => {
    const data = ok(await resend.domains.verify(domainId));
    eq(get(data, 'id'), domainId, 'id');
    if ('status' in data) {
      expect(['not_started', 'pending', 'failed', 'temporary_failure'].includes(data.status), `an unpublished domain is ${data.status}`);
    }
  }, domainId);

  await step('domains.claims.get (no claim: 404)', () => notFound(resend.domains.claims.get(domainId)), domainId);
  await step('domains.claims.create (no other team holds it: 422)', () =>
    refused(resend.domains.claims.create({ name: `unheld-${RUN}.test` }), 422, 'validation_error'));

  await step('domains.remove', async () => {
    const data = ok(await resend.domains.remove(domainId));
    eq([get(data, 'id'), get(data, 'deleted')], [domainId, true], 'id and deleted');
    await notFound(resend.domains.get(domainId));
  }, domainId);
}

// --- API keys ------------------------------------------------------------------------------------

async function apiKeys() {
  const name = `sdk-node-${RUN}`;
  const created = await step('apiKeys.create (sending_access, pinned to HERALD_DOMAIN_ID)', async () => {
    const data = ok(await resend.apiKeys.create({ name, permission: 'sending_access', domain_id: DOMAIN_ID }));
    expect(get(data, 'token').startsWith('rk_'), 'the token does not start with rk_');
    return { id: get(data, 'id'), token: data.token };
  });

  await step('emails.send (with the new sending key)', async () => {
    const client = new Resend(created.token, { baseUrl: BASE_URL });
    get(ok(await client.emails.send({ from: FROM, to: DELIVERED, subject: `SDK pinned key ${RUN}`, text: 'pinned' })), 'id');
  }, created);

  await step('apiKeys.list', async () => {
    const data = ok(await resend.apiKeys.list({ limit: 100 }));
    listing('apiKeys.list', data);
    const found = inList(data, 'id', created.id, 'the new key');
    eq(found.name, name, 'name');
    expect('created_at' in found && 'last_used_at' in found, 'no created_at or last_used_at');
  }, created);

  await step('apiKeys.update', async () => {
    eq(get(ok(await resend.apiKeys.update(created.id, { name: `${name}-renamed` })), 'id'), created.id, 'id');
    eq(inList(ok(await resend.apiKeys.list({ limit: 100 })), 'id', created.id, 'the key').name, `${name}-renamed`, 'name after update');
  }, created);

  await step('apiKeys.remove', async () => {
    const data = ok(await resend.apiKeys.remove(created.id));
    eq([get(data, 'id'), get(data, 'deleted')], [created.id, true], 'id and deleted');
  }, created);
}

// --- the audience: properties, topics, segments, contacts, imports -------------------------------

async function contactProperties() {
  const key = `sdk_plan_${RUN}`;
  const propertyId = await step('contactProperties.create', async () => {
    const data = ok(await resend.contactProperties.create({ key, type: 'string', fallbackValue: 'free' }));
    eq(get(data, 'object'), 'contact_property', 'object');
    return get(data, 'id');
  });

  // The SDK maps this answer to camelCase (`fallbackValue`, `createdAt`).
  await step('contactProperties.get', async () => {
    const found = ok(await resend.contactProperties.get(propertyId));
    eq([get(found, 'id'), get(found, 'key'), get(found, 'type'), get(found, 'fallbackValue')], [propertyId, key, 'string', 'free'], 'property');
    expect(found.createdAt, 'no created_at');
  }, propertyId);

  await step('contactProperties.list', async () => {
    const data = ok(await resend.contactProperties.list());
    listing('contactProperties.list', data);
    eq(inList(data, 'id', propertyId, 'the property').key, key, 'key');
  }, propertyId);

  await step('contactProperties.update', async () => {
    eq(get(ok(await resend.contactProperties.update({ id: propertyId, fallbackValue: 'basic' })), 'id'), propertyId, 'id');
    eq(ok(await resend.contactProperties.get(propertyId)).fallbackValue, 'basic', 'fallback_value after update');
  }, propertyId);
  return { propertyId, key: propertyId ? key : null };
}

async function removeProperty(propertyId) {
  await step('contactProperties.remove', async () => {
    const data = ok(await resend.contactProperties.remove(propertyId));
    eq([get(data, 'id'), get(data, 'deleted')], [propertyId, true], 'id and deleted');
    await notFound(resend.contactProperties.get(propertyId));
  }, propertyId);
}

async function topics() {
  const name = `SDK news ${RUN}`;
  const topicId = await step('topics.create', async () =>
    get(ok(await resend.topics.create({ name, defaultSubscription: 'opt_out', description: 'From the SDK check' })), 'id'));

  await step('topics.get', async () => {
    const topic = ok(await resend.topics.get(topicId));
    eq([get(topic, 'id'), get(topic, 'name'), get(topic, 'default_subscription'), get(topic, 'description')],
      [topicId, name, 'opt_out', 'From the SDK check'], 'topic');
  }, topicId);

  await step('topics.list', async () => {
    const data = ok(await resend.topics.list());
    listing('topics.list', data);
    inList(data, 'id', topicId, 'the topic');
  }, topicId);

  await step('topics.update', async () => {
    eq(get(ok(await resend.topics.update({ id: topicId, name: `${name} (renamed)`, description: 'Renamed' })), 'id'), topicId, 'id');
    const topic = ok(await resend.topics.get(topicId));
    eq([topic.name, topic.description], [`${name} (renamed)`, 'Renamed'], 'name and description after update');
  }, topicId);
  return topicId;
}

async function removeTopic(topicId) {
  await step('topics.remove', async () => {
    const data = ok(await resend.topics.remove(topicId));
    eq([get(data, 'id'), get(data, 'deleted')], [topicId, true], 'id and deleted');
    await notFound(resend.topics.get(topicId));
  }, topicId);
}

async function segments() {
  const name = `SDK segment ${RUN}`;
  const segmentId = await step('segments.create', async () => {
    const data = ok(await resend.segments.create({ name }));
    sdkFields('segments.create', data, ['name']);
    return get(data, 'id');
  });

  await step('segments.get', async () => {
    const segment = ok(await resend.segments.get(segmentId));
    eq([get(segment, 'id'), get(segment, 'name')], [segmentId, name], 'segment');
    expect(get(segment, 'created_at'), 'no created_at');
  }, segmentId);

  await step('segments.list', async () => {
    const data = ok(await resend.segments.list({ limit: 100 }));
    listing('segments.list', data);
    inList(data, 'id', segmentId, 'the segment');
  }, segmentId);

  await step('segments.update', async () => {
    eq(get(ok(await resend.segments.update(segmentId, { name: `${name} (renamed)` })), 'id'), segmentId, 'id');
    eq(ok(await resend.segments.get(segmentId)).name, `${name} (renamed)`, 'name after update');
  }, segmentId);
  return segmentId;
}

async function removeSegment(segmentId) {
  await step('segments.remove', async () => {
    const data = ok(await resend.segments.remove(segmentId));
    eq([get(data, 'id'), get(data, 'deleted')], [segmentId, true], 'id and deleted');
    await notFound(resend.segments.get(segmentId));
  }, segmentId);
}

async function contacts(propertyKey, topicId, segmentId) {
  const address = `sdk-${RUN}@example.test`;
  const contactId = await step('contacts.create (properties, segments, topics)', async () => {
    const params = { email: address, firstName: 'Ada', lastName: 'Lovelace', unsubscribed: false };
    if (propertyKey) params.properties = { [propertyKey]: 'pro' };
    if (segmentId) params.segments = [{ id: segmentId }];
    if (topicId) params.topics = [{ id: topicId, subscription: 'opt_in' }];
    const data = ok(await resend.contacts.create(params));
    eq(get(data, 'object'), 'contact', 'object');
    return get(data, 'id');
  });

  await step('contacts.get (by id)', async () => {
    const contact = ok(await resend.contacts.get(contactId));
    eq([get(contact, 'id'), get(contact, 'email'), get(contact, 'first_name'), get(contact, 'last_name'), get(contact, 'unsubscribed')],
      [contactId, address, 'Ada', 'Lovelace', false], 'contact');
    expect(get(contact, 'created_at'), 'no created_at');
    if (propertyKey) {
      const value = get(contact, 'properties')[propertyKey];
      if (value && typeof value === 'object') {
        eq(value.value, 'pro', `properties.${propertyKey}.value`);
      } else {
        eq(value, 'pro', `properties.${propertyKey}`);
        diverge('contacts.get', "`properties` maps a key to its bare value; the SDK's type has { type, value } per key");
      }
    }
  }, contactId);

  await step('contacts.get (by email)', async () => {
    eq(get(ok(await resend.contacts.get({ email: address })), 'id'), contactId, 'id');
  }, contactId);

  await step('contacts.update (by id)', async () => {
    eq(get(ok(await resend.contacts.update({ id: contactId, firstName: 'Augusta' })), 'id'), contactId, 'id');
    eq(ok(await resend.contacts.get(contactId)).first_name, 'Augusta', 'first_name after update');
  }, contactId);

  await step('contacts.update (by email)', async () => {
    eq(get(ok(await resend.contacts.update({ email: address, lastName: 'King' })), 'id'), contactId, 'id');
    eq(ok(await resend.contacts.get({ email: address })).last_name, 'King', 'last_name after update');
  }, contactId);

  await step('contacts.list', async () => {
    const data = ok(await resend.contacts.list({ limit: 100 }));
    listing('contacts.list', data);
    inList(data, 'id', contactId, 'the contact');
  }, contactId);

  await step('contacts.list (segmentId: GET /segments/{id}/contacts)', async () => {
    const data = ok(await resend.contacts.list({ segmentId, limit: 100 }));
    listing('contacts.list(segmentId)', data);
    inList(data, 'id', contactId, "the segment's contact");
  }, contactId, segmentId);

  await contactSegments(contactId, address, segmentId);
  await contactTopics(contactId, address, topicId);

  await step('contacts.remove (by id)', async () => {
    const data = ok(await resend.contacts.remove(contactId));
    eq(get(data, 'deleted'), true, 'deleted');
    if (data.contact !== contactId) diverge('contacts.remove', "the answer names the contact in `id`; the SDK's type (and Resend) has `contact`");
    eq(data.contact ?? data.id, contactId, 'the removed contact');
    await notFound(resend.contacts.get(contactId));
  }, contactId);

  const other = `sdk-other-${RUN}@example.test`;
  const otherId = await step('contacts.create (another)', async () => get(ok(await resend.contacts.create({ email: other })), 'id'));
  await step('contacts.remove (by email)', async () => {
    eq(get(ok(await resend.contacts.remove({ email: other })), 'deleted'), true, 'deleted');
    await notFound(resend.contacts.get({ email: other }));
  }, otherId);
}

async function contactSegments(contactId, address, segmentId) {
  await step('contacts.segments.list', async () => {
    const data = ok(await resend.contacts.segments.list({ contactId }));
    listing('contacts.segments.list', data);
    inList(data, 'id', segmentId, 'the segment given on create');
  }, contactId, segmentId);

  await step('contacts.segments.remove (by email)', async () => {
    eq(get(ok(await resend.contacts.segments.remove({ email: address, segmentId })), 'deleted'), true, 'deleted');
    const data = get(ok(await resend.contacts.segments.list({ email: address })), 'data');
    expect(data.every((s) => s.id !== segmentId), 'the contact is still in the segment');
  }, contactId, segmentId);

  await step('contacts.segments.add (by id)', async () => {
    expect(get(ok(await resend.contacts.segments.add({ contactId, segmentId })), 'id'), 'empty id');
    inList(ok(await resend.contacts.segments.list({ contactId })), 'id', segmentId, 'the segment added again');
  }, contactId, segmentId);
}

async function contactTopics(contactId, address, topicId) {
  await step('contacts.topics.list', async () => {
    const data = ok(await resend.contacts.topics.list({ id: contactId }));
    listing('contacts.topics.list', data);
    eq(inList(data, 'id', topicId, 'the topic').subscription, 'opt_in', 'subscription chosen on create');
  }, contactId, topicId);

  await step('contacts.topics.update (by email)', async () => {
    eq(get(ok(await resend.contacts.topics.update({ email: address, topics: [{ id: topicId, subscription: 'opt_out' }] })), 'id'), contactId, 'id');
    const found = inList(ok(await resend.contacts.topics.list({ email: address })), 'id', topicId, 'the topic');
    eq(found.subscription, 'opt_out', 'subscription after update');
  }, contactId, topicId);
}

async function contactImports() {
  const address = `sdk-import-${RUN}@example.test`;
  const file = new File([`Email,Given name\n${address},Grace\n`], 'contacts.csv', { type: 'text/csv' });
  const importId = await step('contacts.imports.create', async () => {
    const data = ok(await resend.contacts.imports.create({ file, columnMap: { email: 'Email', firstName: 'Given name' }, onConflict: 'upsert' }));
    return get(data, 'id');
  });

  await step('contacts.imports.get', async () => {
    const found = await waitFor('the import to complete', async () => {
      const data = ok(await resend.contacts.imports.get(importId));
      expect(['queued', 'in_progress', 'completed'].includes(get(data, 'status')), `status is ${data.status}`);
      return data.status === 'completed' ? data : null;
    });
    eq([get(found, 'id'), get(found, 'counts').created], [importId, 1], 'id and counts.created');
    eq(ok(await resend.contacts.get({ email: address })).first_name, 'Grace', "the imported contact's first_name");
    await resend.contacts.remove({ email: address });
  }, importId);

  await step('contacts.imports.list', async () => {
    const data = ok(await resend.contacts.imports.list({ limit: 100 }));
    listing('contacts.imports.list', data);
    inList(data, 'id', importId, 'the import');
  }, importId);

  await step('contacts.imports.list (status)', async () => {
    const data = ok(await resend.contacts.imports.list({ status: 'completed', limit: 100 }));
    inList(data, 'id', importId, 'the completed import');
    expect(data.data.every((i) => i.status === 'completed'), 'an import of another status is listed');
  }, importId);
}

/** The legacy audience paths (`audienceId` on contacts), which Herald serves as segment aliases. */
async function audiences() {
  const name = `SDK audience ${RUN}`;
  const audienceId = await step('audiences.create (the SDK posts to /segments)', async () => get(ok(await resend.audiences.create({ name })), 'id'));
  await step('audiences.get', async () => eq(get(ok(await resend.audiences.get(audienceId)), 'name'), name, 'name'), audienceId);

  const address = `sdk-audience-${RUN}@example.test`;
  const contactId = await step('contacts.create (audienceId: POST /audiences/{id}/contacts)', async () =>
    get(ok(await resend.contacts.create({ audienceId, email: address, firstName: 'Alan' })), 'id'), audienceId);

  await step('contacts.list (audienceId)', async () => {
    inList(ok(await resend.contacts.list({ audienceId })), 'id', contactId, "the audience's contact");
    inList(ok(await resend.contacts.segments.list({ contactId })), 'id', audienceId, "the audience among the contact's segments");
  }, contactId);

  await step('contacts.get (audienceId, by id and by email)', async () => {
    const found = ok(await resend.contacts.get({ audienceId, id: contactId }));
    eq([get(found, 'email'), get(found, 'first_name')], [address, 'Alan'], 'contact');
    eq(get(ok(await resend.contacts.get({ audienceId, email: address })), 'id'), contactId, 'id by email');
  }, contactId);

  await step('contacts.update (audienceId)', async () => {
    eq(get(ok(await resend.contacts.update({ audienceId, id: contactId, lastName: 'Turing' })), 'id'), contactId, 'id');
    eq(ok(await resend.contacts.get(contactId)).last_name, 'Turing', 'last_name after update');
  }, contactId);

  await step('contacts.remove (audienceId)', async () => {
    eq(get(ok(await resend.contacts.remove({ audienceId, email: address })), 'deleted'), true, 'deleted');
    await notFound(resend.contacts.get(contactId));
  }, contactId);

  await step('audiences.remove', async () => {
    eq(get(ok(await resend.audiences.remove(audienceId)), 'deleted'), true, 'deleted');
  }, audienceId);
}

// --- suppressions --------------------------------------------------------------------------------

async function suppressions() {
  const address = `sdk-suppressed-${RUN}@example.test`;
  const suppressionId = await step('suppressions.add', async () => get(ok(await resend.suppressions.add({ email: address })), 'id'));

  await step('suppressions.get (by id)', async () => {
    const found = ok(await resend.suppressions.get(suppressionId));
    eq([get(found, 'id'), get(found, 'email'), get(found, 'origin')], [suppressionId, address, 'manual'], 'suppression');
  }, suppressionId);

  await step('suppressions.get (by email)', async () => eq(get(ok(await resend.suppressions.get(address)), 'id'), suppressionId, 'id'), suppressionId);

  await step('suppressions.list (origin)', async () => {
    const data = ok(await resend.suppressions.list({ origin: 'manual', limit: 100 }));
    listing('suppressions.list', data);
    inList(data, 'id', suppressionId, 'the suppression');
  }, suppressionId);

  await step('suppressions.remove (by email)', async () => {
    eq(get(ok(await resend.suppressions.remove(address)), 'deleted'), true, 'deleted');
    await notFound(resend.suppressions.get(suppressionId));
  }, suppressionId);

  const emails = [0, 1].map((i) => `sdk-batch-${i}-${RUN}@example.test`);
  const ids = await step('suppressions.batch.add', async () => {
    const ids = get(ok(await resend.suppressions.batch.add({ emails })), 'data').map((one) => get(one, 'id'));
    eq(ids.length, 2, 'suppressions answered');
    const found = await Promise.all(ids.map(async (id) => ok(await resend.suppressions.get(id)).email));
    eq(found.sort(), [...emails].sort(), 'the suppressed addresses');
    return ids;
  });

  await step('suppressions.remove (by id)', async () => {
    for (const id of ids) eq(get(ok(await resend.suppressions.remove(id)), 'id'), id, 'id');
  }, ids);
}

// --- logs ----------------------------------------------------------------------------------------

async function logs() {
  const logId = await step('logs.list', async () => {
    const mine = await waitFor("a log of this SDK's requests", async () => {
      const data = get(ok(await resend.logs.list({ limit: 100 })), 'data');
      return data.find((entry) => (entry.user_agent ?? '').startsWith('resend-node'));
    });
    eq(mine.source, 'sdk:node', 'source');
    listing('logs.list', ok(await resend.logs.list({ limit: 1 })));
    return mine.id;
  });

  await step('logs.get', async () => {
    const entry = ok(await resend.logs.get(logId));
    eq(get(entry, 'id'), logId, 'id');
    expect(['GET', 'POST', 'PATCH', 'DELETE'].includes(get(entry, 'method')), `method is ${entry.method}`);
    expect(get(entry, 'endpoint').startsWith('/'), `endpoint is ${entry.endpoint}`);
    expect(Number.isInteger(get(entry, 'response_status')), 'response_status is not a number');
    expect(get(entry, 'user_agent').startsWith('resend-node:'), `user_agent is ${entry.user_agent}`);
  }, logId);
}

// --- webhooks ------------------------------------------------------------------------------------

async function webhooks() {
  const hooks = await receiver();

  await step('webhooks.verify (a payload signed here like Herald signs)', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const body = JSON.stringify({ type: 'contact.created', created_at: '2026-01-01T00:00:00Z', data: { id: 'c1', email: 'a@example.test' } });
    const id = `evt_${RUN}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = { id, timestamp, signature: sign(secret, id, timestamp, body) };
    eq(resend.webhooks.verify({ payload: body, headers, webhookSecret: secret }).data.email, 'a@example.test', 'verified payload');
    let tampered = true;
    try {
      resend.webhooks.verify({ payload: body.replace('a@', 'b@'), headers, webhookSecret: secret });
    } catch {
      tampered = false;
    }
    expect(!tampered, 'a tampered body verified');
  });

  const created = await step('webhooks.create (an endpoint on 127.0.0.1: needs HERALD_WEBHOOK_ALLOW_PRIVATE=true)', async () => {
    const data = ok(await resend.webhooks.create({ endpoint: hooks.url, events: ['contact.created'] }));
    expect(get(data, 'signing_secret').startsWith('whsec_'), 'the secret does not start with whsec_');
    eq(get(data, 'object'), 'webhook', 'object');
    return { id: get(data, 'id'), secret: data.signing_secret };
  });
  const webhookId = created?.id;

  await step('webhooks.get', async () => {
    const found = ok(await resend.webhooks.get(webhookId));
    eq([get(found, 'id'), get(found, 'endpoint'), get(found, 'events'), get(found, 'status')],
      [webhookId, hooks.url, ['contact.created'], 'enabled'], 'webhook');
  }, webhookId);

  await step('webhooks.list', async () => {
    const data = ok(await resend.webhooks.list({ limit: 100 }));
    listing('webhooks.list', data);
    inList(data, 'id', webhookId, 'the webhook');
  }, webhookId);

  const delivered = async (address) => {
    ok(await resend.contacts.create({ email: address }));
    return hooks.next((h, b) => b.type === 'contact.created' && b.data?.email === address);
  };

  let eventId = await step('webhooks.verify (a real delivery, with its webhook-* headers)', async () => {
    const address = `sdk-hook-${RUN}@example.test`;
    const { headers, body } = await delivered(address);
    const payload = resend.webhooks.verify({ payload: body, headers: standardWebhookHeaders(headers), webhookSecret: created.secret });
    eq(payload.data.email, address, "verified payload's data.email");
    return headers['webhook-id'];
  }, webhookId);
  if (!eventId && webhookId) {
    // Read the event id from the list, so the event calls still run.
    eventId = await step('webhooks.events.list (to find the event)', async () =>
      get(ok(await resend.webhooks.events.list({ webhookId })), 'data')[0].id, webhookId);
  }

  await step('webhooks.events.list', async () => {
    const data = ok(await resend.webhooks.events.list({ webhookId, limit: 100 }));
    listing('webhooks.events.list', data);
    eq(inList(data, 'id', eventId, 'the delivered event').type, 'contact.created', 'type');
  }, webhookId, eventId);

  await step('webhooks.events.attempts.list', async () => {
    const data = await waitFor('the attempt to be recorded', async () => {
      const list = get(ok(await resend.webhooks.events.attempts.list({ webhookId, eventId })), 'data');
      return list.length ? list : null;
    }, 15);
    eq(data[0].http_status_code ?? data[0].status_code, 200, "the attempt's status code");
    sdkFields('webhooks.events.attempts.list', data[0], ['http_status_code', 'response', 'sent_at']);
  }, webhookId, eventId);

  // After the attempt is recorded, so its status is settled.
  await step('webhooks.events.get', async () => {
    const found = ok(await resend.webhooks.events.get({ webhookId, eventId }));
    eq([get(found, 'id'), get(found, 'type')], [eventId, 'contact.created'], 'event');
    sdkFields('webhooks.events.get', found, ['payload']);
    expect(['succeeded', 'success'].includes(found.status), `status of a delivered event is ${found.status}`);
    if (!['pending', 'attempting', 'success', 'failed'].includes(found.status)) {
      diverge('webhooks.events.get', `status ${JSON.stringify(found.status)} is not one of the SDK's pending, attempting, success, failed`);
    }
  }, webhookId, eventId);

  await step('webhooks.events.replay (delivered again)', async () => {
    eq(get(ok(await resend.webhooks.events.replay({ webhookId, eventId })), 'id'), eventId, 'id');
    await hooks.next((h) => (h['webhook-id'] ?? h['hook-id']) === eventId, 15);
  }, webhookId, eventId);

  await step('webhooks.update', async () => {
    const url = `${hooks.url}?v=2`;
    const data = ok(await resend.webhooks.update(webhookId, { endpoint: url, events: ['contact.created', 'contact.deleted'], status: 'enabled' }));
    eq(get(data, 'id'), webhookId, 'id');
    const found = ok(await resend.webhooks.get(webhookId));
    eq([found.endpoint, [...found.events].sort()], [url, ['contact.created', 'contact.deleted']], 'endpoint and events after update');
  }, webhookId);

  await step('webhooks.rotateSigningSecret (the next delivery verifies with both secrets)', async () => {
    const secret = get(ok(await resend.webhooks.rotateSigningSecret(webhookId)), 'signing_secret');
    expect(secret.startsWith('whsec_') && secret !== created.secret, 'no new secret');
    const { headers, body } = await delivered(`sdk-hook-2-${RUN}@example.test`);
    for (const one of [secret, created.secret]) {
      resend.webhooks.verify({ payload: body, headers: standardWebhookHeaders(headers), webhookSecret: one });
    }
  }, webhookId);

  await step('webhooks.remove', async () => {
    const data = ok(await resend.webhooks.remove(webhookId));
    eq([get(data, 'id'), get(data, 'deleted')], [webhookId, true], 'id and deleted');
    await notFound(resend.webhooks.get(webhookId));
  }, webhookId);

  for (const address of [`sdk-hook-${RUN}@example.test`, `sdk-hook-2-${RUN}@example.test`]) {
    await resend.contacts.remove({ email: address });
  }
  hooks.close();
}

// --- main ----------------------------------------------------------------------------------------

console.log(`Resend Node SDK ${SDK_VERSION} against ${BASE_URL} (run ${RUN})`);
await webhooks();
await emails();
await domains();
await apiKeys();
const property = await contactProperties();
const topicId = await topics();
const segmentId = await segments();
await contacts(property.key, topicId, segmentId);
await contactImports();
await audiences();
await removeSegment(segmentId);
await removeTopic(topicId);
await removeProperty(property.propertyId);
await suppressions();
await logs();

console.log(`\n${failures.length} failed, ${skipped.length} skipped, ${divergences.length} divergences from the SDK's types`);
for (const name of failures) console.log(`  failed: ${name}`);
for (const name of skipped) console.log(`  skipped: ${name}`);
for (const line of divergences) console.log(`  diverges: ${line}`);
process.exitCode = failures.length || skipped.length || (STRICT && divergences.length) ? 1 : 0;
