/**
 * Registry schema as numbered migrations, applied in order by migrate.ts. A migration, once
 * released, never changes (migrate.ts refuses a database whose recorded checksum differs); changes
 * go in a new migration. Version 2 holds the activation service (spec §2.5–2.8): device types
 * with versions, activations, options; version 3 the device type drafts and activation listing;
 * version 4 announces registry changes from the transactions that make them; version 5 holds the
 * integrations of grounds (engine/ports/integrationRegistry.ts), version 6 their deliveries;
 * version 7 the rules of grounds (engine/ports/ruleRegistry.ts), version 8 the alarms they raise
 * and where each rule stands for each device (engine/ports/alarmRegistry.ts), and announces rule
 * changes; version 9 the rules' timers (`for` and `silentFor`); version 10 the devices'
 * connectivity (engine/ports/connectivityRegistry.ts): when each device was last seen, the edges'
 * leases and the MQTT sessions open on them; version 11 the role of each member of a ground
 * (engine/ports/groundRegistry.ts): the memberships made before it are owners; version 12 stops
 * announcing last seen times; version 13 applies a rule's evaluation in one statement
 * (apply_rule_evaluation); version 14 the grounds' API keys (engine/ports/groundKeyRegistry.ts); version
 * 15 the quotas of grounds (engine/ports/quotaRegistry.ts, SQL in quotaMigration.ts); version 16
 * the grounds' usage per day (engine/ports/usageRegistry.ts).
 *
 * Times are bigint epoch milliseconds (as everywhere in Fleetstream). Constraint names are stable:
 * sqlErrors.ts maps their violations to FleetError codes.
 */
import { QUOTA_MIGRATION_SQL } from './quotaMigration.ts';

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

-- Only SHA-256 of a token is kept (engine/access/tokens.ts says why). The subject is polymorphic
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
  {
    version: 2,
    name: 'device types activations options',
    sql: `
CREATE TABLE device_types (
  id         text PRIMARY KEY,
  partner_id text NOT NULL CONSTRAINT device_types_partner_id_fkey REFERENCES partners (id),
  name       text NOT NULL,
  created_at bigint NOT NULL,
  CONSTRAINT device_types_partner_name_key UNIQUE (partner_id, name)
);

-- Published versions are immutable: a change is a new version (spec §9).
CREATE TABLE device_type_versions (
  device_type_id text NOT NULL CONSTRAINT device_type_versions_type_fkey REFERENCES device_types (id) ON DELETE CASCADE,
  version        integer NOT NULL CONSTRAINT device_type_versions_version_check CHECK (version >= 1),
  definition     jsonb NOT NULL,
  published_at   bigint NOT NULL,
  PRIMARY KEY (device_type_id, version)
);

-- spec §2.6: one hardware id maps to exactly one activation code (within the partner's reference system).
-- activated_device_id has no foreign key: the activation stays on record after its device is deleted.
CREATE TABLE activations (
  code                text PRIMARY KEY CONSTRAINT activations_code_check CHECK (code ~ '^[0-9A-HJKMNP-TV-Z]{16}$'),
  partner_id          text NOT NULL CONSTRAINT activations_partner_id_fkey REFERENCES partners (id),
  description         text NOT NULL,
  hardware_id         text NOT NULL,
  status              text NOT NULL CONSTRAINT activations_status_check CHECK (status IN ('unused', 'used')),
  activated_device_id text,
  activated_option_id text,
  activated_at        bigint,
  created_at          bigint NOT NULL,
  CONSTRAINT activations_partner_hardware_key UNIQUE (partner_id, hardware_id),
  CONSTRAINT activations_used_check CHECK ((status = 'used') = (activated_option_id IS NOT NULL))
);

CREATE TABLE activation_options (
  id              text PRIMARY KEY,
  activation_code text NOT NULL CONSTRAINT activation_options_code_fkey REFERENCES activations (code) ON DELETE CASCADE,
  position        integer NOT NULL,
  description     text NOT NULL,
  device_type_id  text NOT NULL CONSTRAINT activation_options_type_fkey REFERENCES device_types (id),
  -- 'latest' or a version number, as the option asked; resolved when the code is redeemed.
  type_version    text NOT NULL CONSTRAINT activation_options_version_check CHECK (type_version ~ '^(latest|[0-9]{1,9})$'),
  network_id      text NOT NULL,
  network_data    jsonb NOT NULL,
  CONSTRAINT activation_options_position_key UNIQUE (activation_code, position)
);
`,
  },
  {
    version: 3,
    name: 'device type drafts, activation listing',
    sql: `
-- The draft a partner edits; versions are published from it (spec §9). Existing types start from
-- their latest version.
ALTER TABLE device_types ADD COLUMN draft jsonb;
ALTER TABLE device_types ADD COLUMN updated_at bigint;
UPDATE device_types t SET
  draft = COALESCE((SELECT v.definition FROM device_type_versions v WHERE v.device_type_id = t.id ORDER BY v.version DESC LIMIT 1), '{"assets": []}'::jsonb),
  updated_at = t.created_at;
ALTER TABLE device_types ALTER COLUMN draft SET NOT NULL;
ALTER TABLE device_types ALTER COLUMN updated_at SET NOT NULL;

-- A partner's activations page by page, oldest first.
CREATE INDEX activations_partner_created_idx ON activations (partner_id, created_at, code);
`,
  },
  {
    version: 4,
    name: 'registry changes announced by the database',
    sql: `
-- Every change that cached answers or open connections depend on is announced with NOTIFY by the
-- transaction that makes it, whoever makes it (a Fleetstream process, the admin CLI, an operator's
-- SQL): PostgreSQL sends it when, and only if, the transaction commits. The payload is a
-- RegistryChangeNotification (schemas/registryChanges.ts); its origin is the connection's
-- fleetstream.origin setting (a process skips its own), else 'database'. The channel is the one
-- adapters/registry-changes/PostgresRegistryChanges.ts changesChannel names for this schema.
CREATE FUNCTION registry_announce(change jsonb, schema_name text) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_notify(
    CASE WHEN length(schema_name) <= 42 THEN 'fleetstream_registry_' || schema_name
         ELSE 'fleetstream_registry_' || left(encode(sha256(convert_to(schema_name, 'UTF8')), 'hex'), 32) END,
    jsonb_build_object('v', 1, 'origin', coalesce(nullif(current_setting('fleetstream.origin', true), ''), 'database'), 'change', change)::text)
$$;

CREATE FUNCTION registry_token_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'token-revoked', 'tokenHash', OLD.hash), TG_TABLE_SCHEMA);
  ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'token-revoked', 'tokenHash', NEW.hash), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER tokens_announce AFTER UPDATE OR DELETE ON tokens FOR EACH ROW EXECUTE FUNCTION registry_token_announce();

CREATE FUNCTION registry_device_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'device-deleted', 'deviceId', OLD.id), TG_TABLE_SCHEMA);
  ELSE
    PERFORM registry_announce(jsonb_build_object('kind', 'device-changed', 'deviceId', NEW.id), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER devices_announce AFTER INSERT OR UPDATE OR DELETE ON devices FOR EACH ROW EXECUTE FUNCTION registry_device_announce();

CREATE FUNCTION registry_asset_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'device-changed', 'deviceId', OLD.device_id), TG_TABLE_SCHEMA);
  ELSE
    PERFORM registry_announce(jsonb_build_object('kind', 'device-changed', 'deviceId', NEW.device_id), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER assets_announce AFTER INSERT OR UPDATE OR DELETE ON assets FOR EACH ROW EXECUTE FUNCTION registry_asset_announce();

CREATE FUNCTION registry_membership_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'membership-changed', 'groundId', OLD.ground_id, 'userId', OLD.user_id), TG_TABLE_SCHEMA);
  ELSE
    PERFORM registry_announce(jsonb_build_object('kind', 'membership-changed', 'groundId', NEW.ground_id, 'userId', NEW.user_id), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER memberships_announce AFTER INSERT OR UPDATE OR DELETE ON memberships FOR EACH ROW EXECUTE FUNCTION registry_membership_announce();
`,
  },
  {
    version: 5,
    name: 'integrations',
    sql: `
-- A ground's receivers of its events. The secrets sign deliveries, so they are kept as they are
-- (a hash cannot sign); previous_secret signs too until previous_secret_until (a rotation's grace).
CREATE TABLE integrations (
  id                    text PRIMARY KEY,
  ground_id             text NOT NULL CONSTRAINT integrations_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  name                  text NOT NULL,
  kind                  text NOT NULL CONSTRAINT integrations_kind_check CHECK (kind IN ('webhook')),
  url                   text NOT NULL,
  events                jsonb NOT NULL,
  -- NULL: every device (asset) of the ground.
  devices               jsonb,
  assets                jsonb,
  headers               jsonb NOT NULL,
  status                text NOT NULL CONSTRAINT integrations_status_check CHECK (status IN ('active', 'disabled')),
  disabled_reason       text,
  secret                text NOT NULL,
  previous_secret       text,
  previous_secret_until bigint,
  created_at            bigint NOT NULL,
  updated_at            bigint NOT NULL
);
-- A ground's integrations page by page, oldest first.
CREATE INDEX integrations_ground_created_idx ON integrations (ground_id, created_at, id);

-- Announced by the transactions that change them (as migration 4 does for devices and tokens):
-- whatever delivers an integration's events follows its settings, its secrets, its existence.
CREATE FUNCTION registry_integration_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'integration-deleted', 'integrationId', OLD.id, 'groundId', OLD.ground_id), TG_TABLE_SCHEMA);
  ELSE
    PERFORM registry_announce(jsonb_build_object('kind', 'integration-changed', 'integrationId', NEW.id, 'groundId', NEW.ground_id), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER integrations_announce AFTER INSERT OR UPDATE OR DELETE ON integrations FOR EACH ROW EXECUTE FUNCTION registry_integration_announce();
`,
  },
  {
    version: 6,
    name: 'integration deliveries',
    sql: `
-- Integrations' deliveries (engine/ports/integrationDeliveries.ts). A batch is saved before its
-- first attempt: after a restart the same records are sent again under the same webhook-id. A
-- delivered batch is kept until the integration's cursor has passed it, so it is not sent again.
CREATE TABLE integration_batches (
  integration_id  text NOT NULL CONSTRAINT integration_batches_integration_id_fkey REFERENCES integrations (id) ON DELETE CASCADE,
  partition       integer NOT NULL,
  first_offset    bigint NOT NULL,
  last_offset     bigint NOT NULL,
  message_id      text NOT NULL,
  events          integer NOT NULL,
  attempts        integer NOT NULL,
  next_attempt_at bigint NOT NULL,
  created_at      bigint NOT NULL,
  -- NULL while pending.
  delivered_at    bigint,
  -- Per partition of topic uplinks, the last source taken when the batch closed: repeats are known by it.
  sources         jsonb,
  PRIMARY KEY (integration_id, partition, first_offset)
);

-- What GET /integrations/{id} shows of its deliveries.
CREATE TABLE integration_delivery_stats (
  integration_id     text PRIMARY KEY CONSTRAINT integration_delivery_stats_integration_id_fkey REFERENCES integrations (id) ON DELETE CASCADE,
  delivered          bigint NOT NULL DEFAULT 0,
  failed_attempts    bigint NOT NULL DEFAULT 0,
  dropped            bigint NOT NULL DEFAULT 0,
  last_success_at    bigint,
  last_error_status  integer,
  last_error_message text,
  last_error_at      bigint
);
`,
  },
  {
    version: 7,
    name: 'rules',
    sql: `
-- A ground's rules (engine/ports/ruleRegistry.ts): condition, clear and actions as the registry was
-- given them (schemas/rules.ts); for_duration is the rule's "for", an ISO 8601 duration as given.
CREATE TABLE rules (
  id           text PRIMARY KEY,
  ground_id    text NOT NULL CONSTRAINT rules_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  name         text NOT NULL,
  asset        text NOT NULL,
  -- NULL: every device of the ground that has the asset, now and later.
  devices      jsonb,
  condition    jsonb NOT NULL,
  -- NULL: raised as soon as the condition holds.
  for_duration text,
  -- NULL: cleared when the condition no longer holds.
  clear        jsonb,
  severity     text NOT NULL CONSTRAINT rules_severity_check CHECK (severity IN ('critical', 'major', 'minor', 'warning', 'info')),
  actions      jsonb NOT NULL DEFAULT '[]'::jsonb,
  created_at   bigint NOT NULL,
  updated_at   bigint NOT NULL
);
-- A ground's rules page by page, oldest first.
CREATE INDEX rules_ground_created_idx ON rules (ground_id, created_at, id);
`,
  },
  {
    version: 8,
    name: 'alarms',
    sql: `
-- What rules raised (engine/ports/alarmRegistry.ts). No foreign key to rules: an alarm outlives
-- its rule. value is what raised it, last_value the last value for which the condition held.
CREATE TABLE alarms (
  id              text PRIMARY KEY,
  rule_id         text NOT NULL,
  ground_id       text NOT NULL CONSTRAINT alarms_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  device_id       text NOT NULL,
  asset           text NOT NULL,
  severity        text NOT NULL CONSTRAINT alarms_severity_check CHECK (severity IN ('critical', 'major', 'minor', 'warning', 'info')),
  status          text NOT NULL CONSTRAINT alarms_status_check CHECK (status IN ('active', 'cleared')),
  acknowledged    boolean NOT NULL DEFAULT false,
  started_at      bigint NOT NULL,
  cleared_at      bigint,
  acknowledged_at bigint,
  acknowledged_by text,
  value           jsonb NOT NULL,
  last_value      jsonb NOT NULL,
  count           integer NOT NULL CONSTRAINT alarms_count_check CHECK (count >= 1),
  updated_at      bigint NOT NULL
);
-- At most one active alarm per (rule, device); also how an evaluation finds it.
CREATE UNIQUE INDEX alarms_rule_device_active_key ON alarms (rule_id, device_id) WHERE status = 'active';
-- A ground's alarms page by page, newest first.
CREATE INDEX alarms_ground_started_idx ON alarms (ground_id, started_at DESC, id DESC);

-- The last evaluation applied for each (rule, device): later ones at or before it are stale. at and
-- state_id are NULL only inside the transaction that creates the row, before it records the first.
CREATE TABLE rule_standings (
  rule_id   text NOT NULL CONSTRAINT rule_standings_rule_id_fkey REFERENCES rules (id) ON DELETE CASCADE,
  device_id text NOT NULL,
  holding   boolean NOT NULL,
  at        bigint,
  state_id  text,
  PRIMARY KEY (rule_id, device_id)
);

-- Announced by the transactions that change them (as migration 5 does for integrations): engines
-- follow a ground's rules.
CREATE FUNCTION registry_rule_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'rule-deleted', 'ruleId', OLD.id, 'groundId', OLD.ground_id), TG_TABLE_SCHEMA);
  ELSE
    PERFORM registry_announce(jsonb_build_object('kind', 'rule-changed', 'ruleId', NEW.id, 'groundId', NEW.ground_id), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER rules_announce AFTER INSERT OR UPDATE OR DELETE ON rules FOR EACH ROW EXECUTE FUNCTION registry_rule_announce();
`,
  },
  {
    version: 9,
    name: 'rule timers',
    sql: `
-- The timers of rules (docs/rules.md "Timers"), kept with the standings so they survive a restart
-- and a million of them cost the engines no memory: an engine fires those due (rule_standings_due_idx).
-- for_ms and silent_ms are the rule's "for" and "silentFor" in milliseconds.
ALTER TABLE rules ADD COLUMN for_ms bigint;
ALTER TABLE rules ADD COLUMN silent_ms bigint;
UPDATE rules SET for_ms = (extract(epoch FROM for_duration::interval) * 1000)::bigint WHERE for_duration IS NOT NULL;
UPDATE rules SET silent_ms = (extract(epoch FROM (condition->>'silentFor')::interval) * 1000)::bigint WHERE condition ? 'silentFor';

-- holding_since: the measurement time from which the condition of a rule with "for" has held;
-- value: the value then. last_seen: the receive time of the last state of a silence rule's asset.
-- due_at: when the standing's timer fires (NULL: none).
ALTER TABLE rule_standings ADD COLUMN holding_since bigint;
ALTER TABLE rule_standings ADD COLUMN value jsonb;
ALTER TABLE rule_standings ADD COLUMN last_seen bigint;
ALTER TABLE rule_standings ADD COLUMN due_at bigint;
CREATE INDEX rule_standings_due_idx ON rule_standings (due_at) WHERE due_at IS NOT NULL;

-- Per partition of topic uplinks, the receive time through which the engines have judged every
-- uplink: a timer fires only once every partition is past it (a state waiting in a partition whose
-- engine died, or lags, could end the silence or the hold).
CREATE TABLE rule_progress (
  partition integer PRIMARY KEY,
  through   bigint NOT NULL
);

-- The devices silence rules already cover are watched from now.
INSERT INTO rule_standings (rule_id, device_id, holding, due_at)
SELECT r.id, d.id, false, (extract(epoch FROM now()) * 1000)::bigint + r.silent_ms
FROM rules r JOIN devices d ON d.ground_id = r.ground_id
WHERE r.silent_ms IS NOT NULL
  AND (r.devices IS NULL OR r.devices ? d.id)
  AND EXISTS (SELECT 1 FROM assets a WHERE a.device_id = d.id AND a.name = r.asset)
ON CONFLICT (rule_id, device_id) DO NOTHING;
`,
  },
  {
    version: 10,
    name: 'connectivity',
    sql: `
-- Receive time of the device's last uplink processed by an engine; NULL: never seen.
ALTER TABLE devices ADD COLUMN last_seen_at bigint;
-- GET /ground/{groundId}/devices?silentFor=: a range scan of the ground's devices silent since at
-- most a time (their last uplink, else their creation), longest silent first.
CREATE INDEX devices_ground_silent_idx ON devices (ground_id, (COALESCE(last_seen_at, created_at)), id);

-- Each MQTT edge's lease, renewed while it runs: its sessions count while alive_until is ahead.
CREATE TABLE edges (
  edge_id     text PRIMARY KEY,
  alive_until bigint NOT NULL
);
-- MQTT sessions open now, per edge. No foreign keys: a session may be recorded for a device
-- deleted meanwhile (it is read through devices), and an edge's rows go with its lease (dropped on
-- a clean stop, or an hour after it lapsed).
CREATE TABLE device_sessions (
  device_id text NOT NULL,
  edge_id   text NOT NULL,
  since     bigint NOT NULL,
  PRIMARY KEY (device_id, edge_id)
);
CREATE INDEX device_sessions_edge_idx ON device_sessions (edge_id);
`,
  },
  {
    version: 11,
    name: 'member roles',
    sql: `
-- Every membership made before roles existed could do everything in its ground: owner. New ones
-- name their role (no default: the code that adds a member says which).
ALTER TABLE memberships ADD COLUMN role text NOT NULL DEFAULT 'owner'
  CONSTRAINT memberships_role_check CHECK (role IN ('owner', 'editor', 'viewer'));
ALTER TABLE memberships ALTER COLUMN role DROP DEFAULT;
`,
  },
  {
    version: 12,
    name: 'last seen times unannounced',
    sql: `
-- Engines write devices.last_seen_at alone, for every device they saw, each second: nothing a
-- process caches, so it is no change to announce (it cost every process a re-read of each device
-- seen, and the writer a notification per row). Any other update of a device is announced.
DROP TRIGGER devices_announce ON devices;
CREATE TRIGGER devices_announce AFTER INSERT OR DELETE ON devices FOR EACH ROW EXECUTE FUNCTION registry_device_announce();
CREATE TRIGGER devices_update_announce AFTER UPDATE ON devices FOR EACH ROW
  WHEN (OLD.last_seen_at IS NOT DISTINCT FROM NEW.last_seen_at) EXECUTE FUNCTION registry_device_announce();
`,
  },
  {
    version: 13,
    name: 'rule evaluations in one statement',
    sql: `
-- AlarmRegistry.applyEvaluation (adapters/sql-registry/alarms.ts) as one call instead of seven
-- statements: lock the rule's standing for the device (made on its first evaluation), skip a
-- stale evaluation, raise, repeat, update or clear the active alarm, move the standing. Answers
-- {"change", "alarm"?} as JSON text, the alarm with its values as JSON. State ids are compared
-- byte-wise (COLLATE "C"): they start with an uplink id of 16 hex digits, so byte order is the
-- engine's order.
CREATE FUNCTION apply_rule_evaluation(p_rule text, p_device text, p_ground text, p_asset text, p_severity text,
    p_holds boolean, p_clears boolean, p_at bigint, p_state text, p_value jsonb, p_now bigint, p_new_id text)
RETURNS text LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  standing record;
  active alarms;
  changed alarms;
  was_holding boolean;
  since bigint;
  due bigint;
  change text := 'none';
BEGIN
  INSERT INTO rule_standings (rule_id, device_id, holding, at, state_id) VALUES (p_rule, p_device, false, NULL, NULL)
    ON CONFLICT (rule_id, device_id) DO NOTHING;
  SELECT s.holding, s.at, s.state_id, s.holding_since, r.for_ms INTO standing
    FROM rule_standings s LEFT JOIN rules r ON r.id = s.rule_id
   WHERE s.rule_id = p_rule AND s.device_id = p_device FOR UPDATE OF s;
  IF standing.at IS NOT NULL AND standing.state_id IS NOT NULL
     AND (p_at < standing.at OR (p_at = standing.at AND p_state COLLATE "C" <= standing.state_id COLLATE "C")) THEN
    RETURN '{"change":"stale"}';
  END IF;
  was_holding := standing.at IS NOT NULL AND standing.holding;
  SELECT * INTO active FROM alarms WHERE rule_id = p_rule AND device_id = p_device AND status = 'active' FOR UPDATE;
  -- With "for", the condition must have held that long, from the first state of its run that held.
  since := CASE WHEN NOT p_holds THEN NULL WHEN was_holding THEN coalesce(standing.holding_since, p_at) ELSE p_at END;
  IF p_holds THEN
    IF active.id IS NULL THEN
      IF standing.for_ms IS NOT NULL AND p_at - since < standing.for_ms THEN
        -- Not yet: the standing's timer raises it then, unless a state that does not hold comes first.
        change := 'pending';
        due := since + standing.for_ms;
      ELSE
        change := 'raised';
        INSERT INTO alarms (id, rule_id, ground_id, device_id, asset, severity, status, acknowledged, started_at, value, last_value, count, updated_at)
        VALUES (p_new_id, p_rule, p_ground, p_device, p_asset, p_severity, 'active', false, p_at, p_value, p_value, 1, p_now)
        RETURNING * INTO changed;
      END IF;
    ELSE
      change := CASE WHEN was_holding THEN 'updated' ELSE 'repeated' END;
      UPDATE alarms SET count = count + CASE WHEN was_holding THEN 0 ELSE 1 END, last_value = p_value, updated_at = p_now
       WHERE id = active.id RETURNING * INTO changed;
    END IF;
  ELSIF p_clears AND active.id IS NOT NULL THEN
    change := 'cleared';
    UPDATE alarms SET status = 'cleared', cleared_at = p_at, updated_at = p_now WHERE id = active.id RETURNING * INTO changed;
  END IF;
  UPDATE rule_standings SET holding = p_holds, at = p_at, state_id = p_state, holding_since = since, due_at = due,
         value = CASE WHEN due IS NULL THEN NULL WHEN NOT was_holding OR standing.holding_since IS NULL THEN p_value ELSE value END
   WHERE rule_id = p_rule AND device_id = p_device;
  IF changed.id IS NULL THEN
    RETURN json_build_object('change', change)::text;
  END IF;
  RETURN json_build_object('change', change, 'alarm', row_to_json(changed))::text;
END $$;
`,
  },
  {
    version: 14,
    name: 'ground keys',
    sql: `
-- A ground's API keys. The key's token is a row of tokens (scope 'key', subject the key's id), so
-- revoking a key is a token revocation, announced by the tokens table's trigger (version 4).
-- created_by has no foreign key: the record of who made a key outlives nothing it points to.
ALTER TABLE tokens DROP CONSTRAINT tokens_scope_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_scope_check CHECK (scope IN ('device', 'user', 'partner', 'key'));
CREATE TABLE ground_keys (
  id           text PRIMARY KEY,
  ground_id    text NOT NULL CONSTRAINT ground_keys_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  name         text NOT NULL,
  role         text NOT NULL CONSTRAINT ground_keys_role_check CHECK (role IN ('editor', 'viewer')),
  created_at   bigint NOT NULL,
  created_by   text NOT NULL,
  expires_at   bigint,
  last_used_at bigint
);
-- GET /ground/{groundId}/keys: oldest first, by pages.
CREATE INDEX ground_keys_ground_idx ON ground_keys (ground_id, created_at, id);
`,
  },
  {
    version: 15,
    name: 'quotas of grounds',
    sql: QUOTA_MIGRATION_SQL,
  },
  {
    version: 16,
    name: 'usage of grounds',
    sql: `
-- States stored and commands queued per ground and UTC day (days since the epoch), added to by the
-- engines (engine/ports/usageRegistry.ts). A ground's rows go with it.
CREATE TABLE ground_usage (
  ground_id text NOT NULL CONSTRAINT ground_usage_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  day       integer NOT NULL,
  states    bigint NOT NULL DEFAULT 0,
  commands  bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (ground_id, day)
);
`,
  },
  {
    version: 17,
    name: 'audit log of grounds',
    sql: `
-- The changes made to each ground (engine/ports/auditLog.ts). No foreign key: an entry outlives the
-- ground, member or key it names, until the retention prunes it. seq orders the entries of one
-- millisecond and is the keyset page's tie-breaker.
CREATE TABLE ground_audit (
  seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  ground_id  text NOT NULL,
  at         bigint NOT NULL,
  actor_kind text NOT NULL CONSTRAINT ground_audit_actor_kind_check CHECK (actor_kind IN ('user', 'key', 'operator')),
  actor_id   text NOT NULL,
  operation  text NOT NULL,
  target_id  text,
  status     integer NOT NULL,
  code       text
);
-- GET /ground/{groundId}/audit: newest first, by pages.
CREATE INDEX ground_audit_ground_idx ON ground_audit (ground_id, at DESC, seq DESC);
-- The pruner: everything before a time.
CREATE INDEX ground_audit_at_idx ON ground_audit (at);
`,
  },
];
