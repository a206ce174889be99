"""Mailboxes and sequences as code, in TOML: parse (text -> values), validate (errors with the key path and
line), apply (one transaction), export (a sequence back to TOML); auth holds the `oauth2` table's checks."""
