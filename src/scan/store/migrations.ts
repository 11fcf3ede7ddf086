// Versioned schema migrations, one list per backend. Never edit a released migration: append a
// new one with the next number. Applied versions are recorded in `schema_migrations`.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const sqliteMigrations: Migration[] = [
  {
    version: 1,
    name: 'scans, scan logs, scan credentials, api keys',
    sql: `
CREATE TABLE scans (
  id TEXT PRIMARY KEY,
  owner_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
  source TEXT NOT NULL CHECK (source IN ('base64', 'url')),
  image BLOB,
  image_url TEXT,
  metadata TEXT NOT NULL,
  pet_id TEXT,
  customer_id TEXT,
  idempotency_key TEXT,
  request_hash TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT,
  lease_until INTEGER,
  result TEXT,
  error_code TEXT,
  error_message TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  completed_at INTEGER
);
CREATE UNIQUE INDEX scans_owner_idempotency ON scans (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX scans_owner_created ON scans (owner_id, created_at DESC, id DESC);
CREATE INDEX scans_owner_pet ON scans (owner_id, pet_id, created_at DESC, id DESC) WHERE pet_id IS NOT NULL;
CREATE INDEX scans_owner_customer ON scans (owner_id, customer_id, created_at DESC, id DESC) WHERE customer_id IS NOT NULL;
CREATE INDEX scans_queue ON scans (created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX scans_finished ON scans (completed_at) WHERE status IN ('COMPLETED', 'FAILED');
CREATE TABLE scan_logs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  scan_id TEXT NOT NULL REFERENCES scans (id) ON DELETE CASCADE,
  at INTEGER NOT NULL,
  event TEXT NOT NULL,
  message TEXT NOT NULL
);
CREATE INDEX scan_logs_scan ON scan_logs (scan_id, seq);
CREATE TABLE scan_credentials (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL UNIQUE,
  secret_hash TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  digest TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
`,
  },
];

export const postgresMigrations: Migration[] = [
  {
    version: 1,
    name: 'scans, scan logs, scan credentials, api keys',
    sql: `
CREATE TABLE scans (
  id uuid PRIMARY KEY,
  owner_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
  source text NOT NULL CHECK (source IN ('base64', 'url')),
  image bytea,
  image_url text,
  metadata jsonb NOT NULL,
  pet_id text,
  customer_id text,
  idempotency_key text,
  request_hash text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  worker_id text,
  lease_until timestamptz(3),
  result jsonb,
  error_code text,
  error_message text,
  created_at timestamptz(3) NOT NULL,
  updated_at timestamptz(3) NOT NULL,
  completed_at timestamptz(3)
);
CREATE UNIQUE INDEX scans_owner_idempotency ON scans (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX scans_owner_created ON scans (owner_id, created_at DESC, id DESC);
CREATE INDEX scans_owner_pet ON scans (owner_id, pet_id, created_at DESC, id DESC) WHERE pet_id IS NOT NULL;
CREATE INDEX scans_owner_customer ON scans (owner_id, customer_id, created_at DESC, id DESC) WHERE customer_id IS NOT NULL;
CREATE INDEX scans_queue ON scans (created_at, id) WHERE status IN ('PENDING', 'PROCESSING');
CREATE INDEX scans_finished ON scans (completed_at) WHERE status IN ('COMPLETED', 'FAILED');
CREATE TABLE scan_logs (
  seq bigserial PRIMARY KEY,
  scan_id uuid NOT NULL REFERENCES scans (id) ON DELETE CASCADE,
  at timestamptz(3) NOT NULL,
  event text NOT NULL,
  message text NOT NULL
);
CREATE INDEX scan_logs_scan ON scan_logs (scan_id, seq);
CREATE TABLE scan_credentials (
  id uuid PRIMARY KEY,
  key_id text NOT NULL UNIQUE,
  secret_hash text NOT NULL,
  name text NOT NULL,
  created_at timestamptz(3) NOT NULL,
  revoked_at timestamptz(3)
);
CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  digest text NOT NULL UNIQUE,
  created_at timestamptz(3) NOT NULL,
  revoked_at timestamptz(3)
);
`,
  },
];
