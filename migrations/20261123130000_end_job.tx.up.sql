-- A job's holder stores its end in one round trip: a fenced UPDATE of the
-- job counted by this function, then the record and event inserts, sent as
-- one multi-statement query (one implicit transaction). When the job is not
-- held any more the function raises EJ409, which rolls every statement back.
CREATE FUNCTION enrich_require_held(n bigint, job_id text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF n <> 1 THEN
    RAISE EXCEPTION 'job % is not held by this attempt', job_id USING ERRCODE = 'EJ409';
  END IF;
END
$$;
