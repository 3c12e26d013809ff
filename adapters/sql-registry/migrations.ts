/**
 * Registry schema as numbered migrations, applied in order by migrate.ts. A migration, once
 * released, never changes (migrate.ts refuses a database whose recorded checksum differs); changes
 * go in a new migration. Versions 2+ are reserved for the activation service (spec §2.5–2.8):
 * device types with versions, activations, options.
 *
 * Times are bigint epoch milliseconds (as everywhere in Fleetstream). Constraint names are stable:
 * sqlErrors.ts maps their violations to FleetError codes.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'principals grounds devices assets tokens',
    sql: `
CREATE TABLE partners (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE users (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE grounds (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE memberships (
  ground_id  text NOT NULL CONSTRAINT memberships_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  user_id    text NOT NULL CONSTRAINT memberships_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
  created_at bigint NOT NULL,
  PRIMARY KEY (ground_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

-- No ON DELETE CASCADE from grounds: removing a ground that still holds devices must be explicit.
CREATE TABLE devices (
  id           text PRIMARY KEY,
  ground_id    text NOT NULL CONSTRAINT devices_ground_id_fkey REFERENCES grounds (id),
  name         text NOT NULL,
  title        text NOT NULL,
  description  text NOT NULL,
  device_type  text,
  network_id   text,
  network_data jsonb,
  -- LoRaWAN devEui of the binding, upper-case hex: LNS webhooks look devices up by it.
  dev_eui      text,
  payload      jsonb,
  created_at   bigint NOT NULL,
  CONSTRAINT devices_ground_name_key UNIQUE (ground_id, name),
  CONSTRAINT devices_network_check CHECK ((network_id IS NULL) = (network_data IS NULL)),
  CONSTRAINT devices_dev_eui_check CHECK (dev_eui IS NULL OR (network_id IS NOT NULL AND dev_eui ~ '^[0-9A-F]{16}$'))
);
CREATE UNIQUE INDEX devices_network_dev_eui_key ON devices (network_id, dev_eui) WHERE dev_eui IS NOT NULL;

CREATE TABLE assets (
  id          text PRIMARY KEY,
  device_id   text NOT NULL CONSTRAINT assets_device_id_fkey REFERENCES devices (id) ON DELETE CASCADE,
  name        text NOT NULL,
  title       text NOT NULL,
  description text NOT NULL,
  kind        text NOT NULL CONSTRAINT assets_kind_check CHECK (kind IN ('sensor', 'actuator', 'virtual')),
  profile     jsonb NOT NULL,
  created_at  bigint NOT NULL,
  CONSTRAINT assets_device_name_key UNIQUE (device_id, name)
);

-- Only SHA-256 of a token is kept (engine/tokens.ts says why). The subject is polymorphic
-- (device, user or partner id), so no foreign key: deleting a subject revokes its tokens instead.
CREATE TABLE tokens (
  hash       text PRIMARY KEY CONSTRAINT tokens_hash_check CHECK (hash ~ '^[0-9a-f]{64}$'),
  scope      text NOT NULL CONSTRAINT tokens_scope_check CHECK (scope IN ('device', 'user', 'partner')),
  subject_id text NOT NULL,
  created_at bigint NOT NULL,
  revoked_at bigint
);
CREATE INDEX tokens_subject_idx ON tokens (scope, subject_id);
`,
  },
];
