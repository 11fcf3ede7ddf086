// Versioned schema migrations, one list per database, written once with the column types each
// database spells its own way. Never change what a released migration creates: append a new one
// with the next number. Applied versions are recorded in `schema_migrations`.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Column types: uuid ids, times (SQLite: epoch ms), JSON, bytes, the log's sequence key, and floating point. */
interface ColumnTypes {
  id: string;
  time: string;
  json: string;
  blob: string;
  serial: string;
  real: string;
}

const SQLITE: ColumnTypes = { id: 'TEXT', time: 'INTEGER', json: 'TEXT', blob: 'BLOB', serial: 'INTEGER PRIMARY KEY AUTOINCREMENT', real: 'REAL' };
const POSTGRES: ColumnTypes = { id: 'uuid', time: 'timestamptz(3)', json: 'jsonb', blob: 'bytea', serial: 'bigserial PRIMARY KEY', real: 'double precision' };

const v1 = (t: ColumnTypes): string => `
CREATE TABLE scans (
  id ${t.id} PRIMARY KEY,
  owner_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
  source text NOT NULL CHECK (source IN ('base64', 'url')),
  image ${t.blob},
  image_url text,
  metadata ${t.json} NOT NULL,
  pet_id text,
  customer_id text,
  idempotency_key text,
  request_hash text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  worker_id text,
  lease_until ${t.time},
  result ${t.json},
  error_code text,
  error_message text,
  created_at ${t.time} NOT NULL,
  updated_at ${t.time} NOT NULL,
  completed_at ${t.time}
);
CREATE UNIQUE INDEX scans_owner_idempotency ON scans (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX scans_owner_created ON scans (owner_id, created_at DESC, id DESC);
CREATE INDEX scans_owner_pet ON scans (owner_id, pet_id, created_at DESC, id DESC) WHERE pet_id IS NOT NULL;
CREATE INDEX scans_owner_customer ON scans (owner_id, customer_id, created_at DESC, id DESC) WHERE customer_id IS NOT NULL;
CREATE INDEX scans_queue ON scans (created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX scans_finished ON scans (completed_at) WHERE status IN ('COMPLETED', 'FAILED');
CREATE TABLE scan_logs (
  seq ${t.serial},
  scan_id ${t.id} NOT NULL REFERENCES scans (id) ON DELETE CASCADE,
  at ${t.time} NOT NULL,
  event text NOT NULL,
  message text NOT NULL
);
CREATE INDEX scan_logs_scan ON scan_logs (scan_id, seq);
CREATE TABLE scan_credentials (
  id ${t.id} PRIMARY KEY,
  key_id text NOT NULL UNIQUE,
  secret_hash text NOT NULL,
  name text NOT NULL,
  created_at ${t.time} NOT NULL,
  revoked_at ${t.time}
);
CREATE TABLE api_keys (
  id ${t.id} PRIMARY KEY,
  name text NOT NULL,
  digest text NOT NULL UNIQUE,
  created_at ${t.time} NOT NULL,
  revoked_at ${t.time}
);
`;

// Webhooks: a scan's own callback URL, a credential's default URL and signing secrets (the
// previous one stays valid until webhook_previous_until), and the outbox of deliveries (one per
// finished scan that has a URL), written in the transaction that finishes the scan.
const v2 = (t: ColumnTypes): string => `
ALTER TABLE scans ADD COLUMN callback_url text;
ALTER TABLE scan_credentials ADD COLUMN webhook_url text;
ALTER TABLE scan_credentials ADD COLUMN webhook_secret text;
ALTER TABLE scan_credentials ADD COLUMN webhook_previous_secret text;
ALTER TABLE scan_credentials ADD COLUMN webhook_previous_until ${t.time};
CREATE TABLE webhook_deliveries (
  scan_id ${t.id} PRIMARY KEY REFERENCES scans (id) ON DELETE CASCADE,
  webhook_id text NOT NULL UNIQUE,
  event text NOT NULL CHECK (event IN ('scan.completed', 'scan.failed')),
  url text NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at ${t.time} NOT NULL,
  worker_id text,
  lease_until ${t.time},
  last_attempt_at ${t.time},
  last_status integer,
  last_error text,
  created_at ${t.time} NOT NULL,
  finished_at ${t.time}
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
`;

// Pack rollouts: admin keys beside API keys, and each pack id's wanted versions (the serving one
// and the one beside it, with its role), which every instance converges to.
const v3 = (t: ColumnTypes): string => `
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'api' CHECK (scope IN ('api', 'admin'));
CREATE TABLE pack_rollouts (
  pack_id text PRIMARY KEY,
  serving_version text NOT NULL,
  serving_dir text NOT NULL,
  other_version text,
  other_dir text,
  other_role text CHECK (other_role IN ('standby', 'shadow', 'canary', 'previous')),
  other_share ${t.real},
  generation integer NOT NULL,
  updated_at ${t.time} NOT NULL,
  updated_by text NOT NULL
);
`;

// The fleet: an unloaded pack id keeps its row (so its generation only grows and every instance
// unloads it too), each instance's heartbeat with what it applied, and at most one generated API
// key shared by the instances of one database.
const v4 = (t: ColumnTypes): string => `
ALTER TABLE pack_rollouts ADD COLUMN unloaded integer NOT NULL DEFAULT 0;
CREATE TABLE fleet_instances (
  instance_id text PRIMARY KEY,
  host text NOT NULL,
  started_at ${t.time} NOT NULL,
  seen_at ${t.time} NOT NULL,
  applied ${t.json} NOT NULL,
  versions ${t.json} NOT NULL
);
CREATE UNIQUE INDEX api_keys_one_generated ON api_keys (name) WHERE name = '${GENERATED_KEY_NAME}' AND revoked_at IS NULL;
`;

/** The name of the API key an instance generates for its fleet (src/store/api-keys.ts fleetKey). */
export const GENERATED_KEY_NAME = 'generated for the fleet';

const migrations = (t: ColumnTypes): Migration[] => [
  { version: 1, name: 'scans, scan logs, scan credentials, api keys', sql: v1(t) },
  { version: 2, name: 'webhooks: callback urls, signing secrets, delivery outbox', sql: v2(t) },
  { version: 3, name: 'pack rollouts and admin keys', sql: v3(t) },
  { version: 4, name: 'fleet: unloads recorded, instance heartbeats, one generated key', sql: v4(t) },
];

export const sqliteMigrations = migrations(SQLITE);
export const postgresMigrations = migrations(POSTGRES);
