"""The database layer under every app: `db.sql` holds the few statements the ORM cannot say."""
