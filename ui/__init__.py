"""The operator UI and the public pages: an interface above every domain app (`sequences`, `inbound`,
`mailboxes`), which act only through their services and selectors; no model of its own.

access (roles), rows (timelines, the operator log), incidents, charts, views, forms, urls; replies (the replies
inbox, `replies_urls`); public (one-click unsubscribe, outside the login wall); templatetags (`bidi`, `when`).
"""
