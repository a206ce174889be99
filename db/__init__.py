"""The database layer under every app: `db.clock` is the database's wall clock, `db.sql` the few other statements
the ORM cannot say; no other module branches on the database vendor."""
