/**
 * Registry migration 15 (listed in migrations.ts): the quotas of grounds
 * (engine/ports/quotaRegistry.ts). Kept in a file of its own: migrations.ts is long enough.
 */
export const QUOTA_MIGRATION_SQL = `
-- One row per ground with a limit; a NULL limit is no limit of that kind.
CREATE TABLE ground_quotas (
  ground_id         text PRIMARY KEY CONSTRAINT ground_quotas_ground_id_fkey REFERENCES grounds (id) ON DELETE CASCADE,
  devices           integer CONSTRAINT ground_quotas_devices_check CHECK (devices >= 1),
  states_per_second integer CONSTRAINT ground_quotas_states_per_second_check CHECK (states_per_second >= 1),
  retention_days    integer CONSTRAINT ground_quotas_retention_days_check CHECK (retention_days >= 1),
  updated_at        bigint NOT NULL
);

-- Every edge admits a ground's states at its rate: a change is announced to all of them.
CREATE FUNCTION registry_quota_announce() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM registry_announce(jsonb_build_object('kind', 'quota-changed', 'groundId', OLD.ground_id), TG_TABLE_SCHEMA);
  ELSE
    PERFORM registry_announce(jsonb_build_object('kind', 'quota-changed', 'groundId', NEW.ground_id), TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER ground_quotas_announce AFTER INSERT OR UPDATE OR DELETE ON ground_quotas FOR EACH ROW EXECUTE FUNCTION registry_quota_announce();

-- The devices limit, kept for every insert of a device (created, activated, or by an operator's
-- SQL) in its own transaction: the ground's row is locked before its devices are counted, so two
-- creations at the limit are serialised and the second counts the first (each statement of a
-- plpgsql function sees what committed before it). Grounds without that limit take no lock.
CREATE FUNCTION enforce_devices_quota() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  quota integer;
  held bigint;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.ground_id = OLD.ground_id THEN
    RETURN NEW;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM ground_quotas WHERE ground_id = NEW.ground_id AND devices IS NOT NULL) THEN
    RETURN NEW;
  END IF;
  PERFORM 1 FROM grounds WHERE id = NEW.ground_id FOR UPDATE;
  SELECT devices INTO quota FROM ground_quotas WHERE ground_id = NEW.ground_id;
  IF quota IS NULL THEN
    RETURN NEW;
  END IF;
  SELECT count(*) INTO held FROM devices WHERE ground_id = NEW.ground_id;
  IF held >= quota THEN
    RAISE EXCEPTION 'ground % holds % devices, its quota', NEW.ground_id, quota USING ERRCODE = 'FSQ01';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER devices_quota BEFORE INSERT OR UPDATE OF ground_id ON devices FOR EACH ROW EXECUTE FUNCTION enforce_devices_quota();
`;
