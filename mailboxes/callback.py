"""The path a provider's consent page sends the browser back to after an OAuth sign-in (mailboxes.signin), with
its one-time code and our state in the query. Apart from the sign-in, so that the logs' redaction
(outreach.secret_queries), loaded by every process, does not load the OAuth client with it."""

CALLBACK_PATH = "/mailboxes/oauth/callback/"
